/**
 * Self-test of the shards CLI (`npm run test:shards`, two to three minutes) on a throw-away local
 * state (`--persist-to`) holding two schools, one per shard:
 * (a) usage errors exit 2; (b) `status --json` has the documented shape; (c) a move to the
 *     school's own shard is a no-op and an unknown school or shard exits 2, changing nothing;
 * (d) `move --local` moves every row (same digest), leaves none behind, and `status` says so;
 * (e) `--remote`, over a stand-in of the D1 HTTP API on 127.0.0.1 (scripts/lib/d1-api-stub.ts):
 *     missing credentials exit 2 and call nothing; a refused token changes nothing; a move cut
 *     by a 500 (sent 6 times by the SDK) is left `moving` and a rerun finishes it through a
 *     429; a move cut by a 400 (sent once) is undone by `--abort`; the driver binds strings only.
 * Prints `ok`/`not ok` lines; exit status 1 when a check fails.
 */
import { createHash } from "node:crypto";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { type D1ApiStub, type StubRequest, startD1ApiStub } from "./lib/d1-api-stub";
import { execLocalD1 } from "./lib/d1-file";
import { openRemoteD1 } from "./lib/d1-http";
import { readLocalD1 } from "./lib/d1-local";
import { check, migratedState, runCounted, runScript, runSelfTest } from "./lib/selftest";
import { main as shardsMain } from "./shards";

const BIG = "sch_shards_big";
const SMALL = "sch_shards_small";
/** Courses of the big school: their 11,000 enrolments span three pages of the move's copy (5,000 rows a page). */
const BIG_COURSES = 1_100;
/** An outbox payload just under D1's 2,000,000 bytes per value: the largest row a move carries. */
const LARGE_PAYLOAD_BYTES = 1_990_000;

/** Whether a request is one of the copy's batches of rows (the move's `INSERT INTO "table"`). */
const isCopy = (req: StubRequest) => req.queries[0]!.sql.startsWith('INSERT INTO "');

interface Status {
  shards: { binding: string; schools: number; courses: number; bytes: number; share: number }[];
  schools: { id: string; name: string; shard: string; state: string }[];
  warnings: { schoolId: string; shard: string; bytes: number; share: number }[];
}

/** A school's import file: `courses` courses, each with 10 students, 1 professor, 1 group. */
function schoolFile(id: string, courses: number): unknown {
  const students = Array.from({ length: 40 }, (_, i) => ({
    id: `stu_${id}_${i}`,
    schoolId: id,
    firstName: "Élève",
    lastName: `N°${i}`,
    email: `s${i}@example.org`,
  }));
  return {
    schools: [{ id, name: `Shards ${id}`, apiKeys: [] }],
    trainings: [{ id: `trn_${id}`, schoolId: id, name: "BTS SIO" }],
    groups: [{ id: `grp_${id}`, schoolId: id, name: "SIO 1A" }],
    students,
    professors: [{ id: `prf_${id}`, schoolId: id, firstName: "Karim", lastName: "Benali", email: "k@example.org" }],
    courses: Array.from({ length: courses }, (_, i) => ({
      id: `crs_${id}_${i}`,
      schoolId: id,
      name: `Cours ${i}`,
      startDateTime: "2026-09-07T10:00:00+02:00",
      endDateTime: "2026-09-07T12:00:00+02:00",
      trainingId: `trn_${id}`,
      groupIds: [`grp_${id}`],
      studentIds: students.slice(i % 30, (i % 30) + 10).map((s) => s.id),
      professors: [{ professorId: `prf_${id}`, coTeacher: false, signed: i % 2 === 0 }],
    })),
  };
}

/** Each table of a shard that holds school rows (`school_id`), `held_schools` aside. */
async function schoolTables(d1: D1Database): Promise<string[]> {
  const { results } = await d1
    .prepare(
      "SELECT m.name FROM sqlite_master m WHERE m.type = 'table' AND m.name <> 'held_schools' AND EXISTS (SELECT 1 FROM pragma_table_info(m.name) WHERE name = 'school_id') ORDER BY m.name",
    )
    .all<{ name: string }>();
  return results.map((r) => r.name);
}

/** Per table: the school's row count and a SHA-256 over its rows (sorted), on one shard. */
async function digest(d1: D1Database, schoolId: string): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const t of await schoolTables(d1)) {
    const { results } = await d1.prepare(`SELECT * FROM "${t}" WHERE school_id = ?`).bind(schoolId).all();
    const rows = results.map((r) => JSON.stringify(r)).sort();
    out[t] = `${rows.length}:${createHash("sha256").update(rows.join("\n")).digest("hex")}`;
  }
  return out;
}

/** How many rows of the school each table of a shard still has, summed. */
async function leftover(d1: D1Database, schoolId: string): Promise<number> {
  let n = 0;
  for (const t of await schoolTables(d1))
    n += (await d1.prepare(`SELECT count(*) AS n FROM "${t}" WHERE school_id = ?`).bind(schoolId).first<{ n: number }>())!.n;
  return n;
}

async function main(): Promise<void> {
  const dir = await mkdtemp(path.join(os.tmpdir(), "shards-selftest-"));
  const persist = path.join(dir, "state");
  const local = ["--persist-to", persist];
  const shards = (args: string[], env: Record<string, string> = {}) => runScript("shards.ts", args, env);
  const statusOf = async (args: string[], env: Record<string, string> = {}): Promise<Status> => {
    const r = await shards(["status", "--json", ...args], env);
    if (r.code !== 0) throw new Error(`status failed (exit ${r.code}):\n${r.stdout}${r.stderr}`);
    return JSON.parse(r.stdout) as Status;
  };
  let stub: D1ApiStub | undefined;
  try {
    await migratedState(persist);
    for (const [id, courses, shard] of [
      [BIG, BIG_COURSES, "SHARD_0"],
      [SMALL, 3, "SHARD_1"],
    ] as const) {
      const file = path.join(dir, `${id}.json`);
      await writeFile(file, JSON.stringify(schoolFile(id, courses)));
      const r = await runScript("import.ts", [file, ...local, "--shard", shard, "--quiet"]);
      if (r.code !== 0) throw new Error(`import failed:\n${r.stdout}${r.stderr}`);
    }
    const before: Record<string, Record<string, string>> = {};
    // One unpublished event of the largest size D1 takes: the move carries it as it is.
    await execLocalD1(
      "INSERT INTO outbox (event_id, school_id, created_at, payload) VALUES ('evt_shards_large', ?, 1, ?)",
      [BIG, `"${"x".repeat(LARGE_PAYLOAD_BYTES - 2)}"`],
      persist,
      "SHARD_0",
    );
    {
      const db = await readLocalD1(persist);
      try {
        before[BIG] = await digest(db.databases.SHARD_0!, BIG);
        before[SMALL] = await digest(db.databases.SHARD_1!, SMALL);
      } finally {
        db.dispose();
      }
    }
    check(
      // The outbox: the import's course.created events (one per course) and the large one.
      before[BIG]!.courses?.startsWith(`${BIG_COURSES}:`) === true && before[BIG]!.outbox?.startsWith(`${BIG_COURSES + 1}:`) === true,
      "fixture: the big school's courses and its large event are on SHARD_0",
      JSON.stringify(before[BIG]),
    );

    // (a) Usage errors.
    for (const [name, args] of [
      ["no command", []],
      ["unknown command", ["rebalance"]],
      ["move without a school", ["move", "--to", "SHARD_1"]],
      ["move without --to or --abort", ["move", BIG]],
      ["move with both --to and --abort", ["move", BIG, "--to", "SHARD_1", "--abort"]],
      ["status with an argument", ["status", "SHARD_0"]],
      ["--local with --remote", ["status", "--local", "--remote"]],
    ] as const) {
      // The first through the CLI's own process (its exit status), the others in this process.
      const r = args.length === 0 ? await shards([...args, ...local]) : await runCounted(shardsMain, [...args, ...local]);
      check(r.code === 2 && r.stderr.includes("usage: npm run shards"), `usage error (${name}): exit 2 with the usage`, `exit ${r.code}\n${r.stderr}`);
    }

    // (b) status.
    const s0 = await statusOf(local);
    const [a, b] = s0.shards;
    check(
      s0.shards.length === 2 &&
        a?.binding === "SHARD_0" &&
        a.schools === 1 &&
        a.courses === BIG_COURSES &&
        b?.binding === "SHARD_1" &&
        b.schools === 1 &&
        b.courses === 3,
      "status --json: both shards with their schools and courses",
      JSON.stringify(s0.shards),
    );
    check(JSON.stringify(s0.warnings) === "[]", "status --json: no school holds more than 10 % of its shard (warnings empty)", JSON.stringify(s0.warnings));
    check(
      s0.shards.every((x) => Number.isInteger(x.bytes) && x.bytes > 0 && x.share === x.bytes / 10_000_000_000) && a!.bytes > LARGE_PAYLOAD_BYTES,
      "status --json: bytes (D1's own size) and share of 10 GB",
      JSON.stringify(s0.shards),
    );
    check(
      JSON.stringify(s0.schools) ===
        JSON.stringify([
          { id: BIG, name: `Shards ${BIG}`, shard: "SHARD_0", state: "active" },
          { id: SMALL, name: `Shards ${SMALL}`, shard: "SHARD_1", state: "active" },
        ]),
      "status --json: each school's shard and state",
      JSON.stringify(s0.schools),
    );
    const text = await shards(["status", ...local]);
    check(
      text.code === 0 && /SHARD_0\s.*1,100/.test(text.stdout) && text.stdout.includes("SHARD_1") && text.stdout.includes(BIG),
      "status: a table of shards and schools",
      text.stdout,
    );
    // A local status reads the database files: no workerd (Miniflare) to start, no wrangler.
    const read = await runCounted(shardsMain, ["status", "--json", ...local]);
    check(
      read.code === 0 && read.spawned === 0 && JSON.stringify(JSON.parse(read.stdout)) === JSON.stringify(s0),
      "status (local): the same answer, no process started",
      `${read.spawned} started\n${read.stdout}`,
    );

    // (c) No-op and refusals.
    const noop = await runCounted(shardsMain, ["move", BIG, "--to", "SHARD_0", ...local]);
    check(noop.code === 0 && noop.stdout.includes("nothing to do"), "move to the school's own shard: exit 0, nothing to do", noop.stdout);
    check(noop.spawned > 0, "move (local): starts workerd, which the count above would see", `${noop.spawned} started`);
    const unknownSchool = await shards(["move", "sch_nowhere", "--to", "SHARD_1", ...local]);
    check(
      unknownSchool.code === 2 && unknownSchool.stderr.includes('no school "sch_nowhere"'),
      "move of an unknown school: exit 2, saying so",
      unknownSchool.stderr,
    );
    const unknownShard = await shards(["move", BIG, "--to", "SHARD_9", ...local]);
    check(unknownShard.code === 2 && unknownShard.stderr.includes('no shard "SHARD_9"'), "move to an unknown shard: exit 2, saying so", unknownShard.stderr);
    check(JSON.stringify(await statusOf(local)) === JSON.stringify(s0), "the no-op and the refusals change nothing");

    // (d) A local move.
    const moved = await shards(["move", BIG, "--to", "SHARD_1", ...local]);
    check(moved.code === 0 && moved.stdout.includes(`${BIG} moved from SHARD_0 to SHARD_1`), "move --local: exit 0", `${moved.stdout}${moved.stderr}`);
    check(moved.stderr.includes("stop npm start / wrangler dev first"), "move --local: says the dev server should be stopped", moved.stderr);
    const s1 = await statusOf(local);
    check(
      s1.shards[0]!.courses === 0 && s1.shards[1]!.courses === BIG_COURSES + 3 && s1.schools.find((x) => x.id === BIG)?.shard === "SHARD_1",
      "move --local: status shows the school and its courses on SHARD_1",
      JSON.stringify(s1),
    );
    {
      const db = await readLocalD1(persist);
      try {
        check(JSON.stringify(await digest(db.databases.SHARD_1!, BIG)) === JSON.stringify(before[BIG]), "move --local: every table's rows arrived unchanged");
        check((await leftover(db.databases.SHARD_0!, BIG)) === 0, "move --local: no row of the school is left on SHARD_0");
      } finally {
        db.dispose();
      }
    }

    // (e) --remote, over the stand-in of the D1 HTTP API.
    const bare = { CLOUDFLARE_API_TOKEN: "", CLOUDFLARE_ACCOUNT_ID: "", CLOUDFLARE_API_BASE_URL: "" };
    const noCredentials = await shards(["move", BIG, "--to", "SHARD_0", "--remote"], bare);
    check(
      noCredentials.code === 2 && noCredentials.stderr.includes("CLOUDFLARE_API_TOKEN and CLOUDFLARE_ACCOUNT_ID"),
      "--remote without credentials: exit 2, naming the variables",
      noCredentials.stderr,
    );
    stub = await startD1ApiStub(persist);
    const api = { CLOUDFLARE_API_BASE_URL: stub.baseUrl, CLOUDFLARE_ACCOUNT_ID: stub.accountId, CLOUDFLARE_API_TOKEN: stub.token };
    const s2 = await statusOf(["--remote"], api);
    check(
      JSON.stringify(s2.schools) === JSON.stringify(s1.schools) && s2.shards[1]!.courses === BIG_COURSES + 3,
      "status --remote: the same schools and counts over the API",
      JSON.stringify(s2),
    );
    const refused = await shards(["move", BIG, "--to", "SHARD_0", "--remote"], { ...api, CLOUDFLARE_API_TOKEN: "wrong" });
    check(
      refused.code === 1 && refused.stderr.includes("401 10000 Authentication error"),
      "move --remote with a refused token: exit 1 with the API's error",
      refused.stderr,
    );

    // A 500 from the third batch of inserted rows on: the SDK resends the batch, then the move stops mid-copy, fenced.
    let inserts = 0;
    stub.fault = (req) => (isCopy(req) && ++inserts >= 3 ? { status: 500, errors: [{ code: 7500, message: "internal error" }] } : undefined);
    const beforeCut = stub.requests.length;
    const cut = await shards(["move", BIG, "--to", "SHARD_0", "--remote"], api);
    check(
      cut.code === 1 && cut.stderr.includes("500 7500 internal error") && cut.stderr.includes("run the same command again"),
      "move --remote cut by a 500: exit 1, saying to run it again",
      cut.stderr,
    );
    const failed = stub.requests
      .slice(beforeCut)
      .filter((r) => isCopy(r))
      .slice(2);
    check(
      failed.length === 6 && failed.every((r) => JSON.stringify(r) === JSON.stringify(failed[0])),
      "the SDK sent the batch the API answered 500 six times (5 resends), then gave up",
      `${failed.length} sends`,
    );
    check(
      (await statusOf(["--remote"], api)).schools.find((x) => x.id === BIG)?.state === "moving",
      "the cut move leaves the school moving (its writes fenced)",
    );

    // The rerun finishes it, waiting out a 429 on its way.
    let throttled = 0;
    stub.fault = (req) =>
      isCopy(req) && throttled++ === 0 ? { status: 429, headers: { "retry-after": "1" }, errors: [{ code: 971, message: "rate limited" }] } : undefined;
    const from = stub.requests.length;
    const rerun = await shards(["move", BIG, "--to", "SHARD_0", "--remote"], api);
    check(
      rerun.code === 0 && rerun.stdout.includes(`${BIG} moved from SHARD_1 to SHARD_0`),
      "move --remote, run again: finishes the move",
      `${rerun.stdout}${rerun.stderr}`,
    );
    const retried = stub.requests.slice(from).filter((r) => isCopy(r));
    check(
      throttled > 1 && JSON.stringify(retried[0]) === JSON.stringify(retried[1]),
      "the driver resent the batch the API answered 429",
      `${throttled} inserts`,
    );
    check(JSON.stringify(await digest(stub.databases.SHARD_0!, BIG)) === JSON.stringify(before[BIG]), "move --remote: every table's rows arrived unchanged");
    check((await leftover(stub.databases.SHARD_1!, BIG)) === 0, "move --remote: no row of the school is left on SHARD_1");
    const s3 = await statusOf(["--remote"], api);
    check(
      s3.schools.find((x) => x.id === BIG)?.shard === "SHARD_0" && s3.schools.every((x) => x.state === "active"),
      "status --remote: the school on SHARD_0, active",
      JSON.stringify(s3.schools),
    );

    // A cut move undone by --abort: D1 refuses the second batch (a 400, which the SDK does not resend).
    inserts = 0;
    stub.fault = (req) => (isCopy(req) && ++inserts === 2 ? { status: 400, errors: [{ code: 7500, message: "D1_ERROR: refused" }] } : undefined);
    const cutSmall = await shards(["move", SMALL, "--to", "SHARD_0", "--remote"], api);
    stub.fault = undefined;
    check(cutSmall.code === 1 && cutSmall.stderr.includes("400 7500 D1_ERROR: refused"), "a second move cut mid-copy by a 400: exit 1", cutSmall.stderr);
    check(inserts === 2, "the SDK did not resend the batch the API answered 400", `${inserts} copy requests`);
    check((await leftover(stub.databases.SHARD_0!, SMALL)) > 0, "the cut copy left part of the school on SHARD_0");
    const aborted = await shards(["move", SMALL, "--abort", "--remote"], api);
    check(aborted.code === 0 && aborted.stdout.includes("undone"), "move --abort --remote: undone", `${aborted.stdout}${aborted.stderr}`);
    check((await leftover(stub.databases.SHARD_0!, SMALL)) === 0, "the abort deleted the partial copy");
    check(JSON.stringify(await digest(stub.databases.SHARD_1!, SMALL)) === JSON.stringify(before[SMALL]), "the school's rows on its old shard are unchanged");
    const s4 = await statusOf(["--remote"], api);
    check(
      s4.schools.find((x) => x.id === SMALL)?.shard === "SHARD_1" && s4.schools.every((x) => x.state === "active"),
      "after the abort the school is active on its old shard",
      JSON.stringify(s4.schools),
    );

    // What went over the wire: string parameters only, and the largest row in one statement.
    check(
      stub.requests.every((r) => r.queries.every((q) => q.params.every((p) => typeof p === "string"))),
      "every request bound strings only",
    );
    check(
      stub.requests.some((r) => r.queries.some((q) => q.params.some((p) => typeof p === "string" && p.length > LARGE_PAYLOAD_BYTES))),
      "the large event crossed the API bound as one value",
    );
    const remote = await openRemoteD1({ baseUrl: stub.baseUrl, accountId: stub.accountId, token: stub.token });
    let refusedBind = "";
    try {
      remote.databases.DIRECTORY!.prepare("SELECT ?").bind(1);
    } catch (err) {
      refusedBind = (err as Error).message;
    }
    check(refusedBind.includes("binds strings only"), "the driver refuses a value that is not a string", refusedBind);
    // The stand-in refuses what the real API refuses (production's per-query limits).
    const args = (n: number) => `SELECT concat(${Array.from({ length: n }, () => "'x'").join(", ")}) AS v`;
    const atLimit = await remote.databases.DIRECTORY!.prepare(args(32)).first<{ v: string }>();
    check(atLimit?.v === "x".repeat(32), "the API runs a function call of 32 arguments", JSON.stringify(atLimit));
    const overLimit = await remote.databases
      .DIRECTORY!.prepare(args(33))
      .first()
      .then(
        () => "",
        (err: Error) => err.message,
      );
    check(overLimit.includes("too many arguments on function concat"), "the API refuses a function call of 33 arguments", overLimit);
  } finally {
    await stub?.close();
    await rm(dir, { recursive: true, force: true });
  }
}

await runSelfTest("shards", main);
