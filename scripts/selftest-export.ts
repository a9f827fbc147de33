/**
 * Self-test of `npm run shards -- export` (`npm run test:export`, two to three minutes): a
 * school of 30,000 courses (scripts/dataset, 10 students a course), a tenth of them changed
 * by a second import (version 2, a later `updatedAt`), a labelled key with fewer scopes and a
 * revoked one, is exported from one local deployment and imported into a fresh one. The
 * oracle: both deployments' GET /v3/courses with every include, walked by cursor under the
 * same API key, answer the same records page for page (`version`, `createdAt`, `updatedAt`
 * included); the keys' rows are the same; the fresh one's outbox holds one `course.created` a
 * course, numbered after the exported change number (docs/operations.md § "Taking one
 * school's data out"). Prints `ok`/`not ok` lines and each step's time; exit 1 on a failure.
 */
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { sha256Hex } from "../src/lib/crypto";
import { generateDataset } from "./dataset/build";
import { execLocalD1 } from "./lib/d1-file";
import { readLocalD1 } from "./lib/d1-local";
import { startMiniflare } from "./lib/miniflare-server";
import { check, migratedState, runScript, runSelfTest } from "./lib/selftest";

const COURSES = 30_000;
const LABELLED_KEY = "sk_live_export_selftest_labelled_0123456789abcdef";
const REVOKED_KEY = "sk_live_export_selftest_revoked_0123456789abcdefg";

const INCLUDES = "includeStudents=true&includeTeachers=true&includeSurveyTemplates=true&includeTraining=true";

/** Every page of GET /v3/courses (100 a page, every include) by cursor: each page's `result` as the text the Worker sent. */
async function listing(base: string, key: string): Promise<string[]> {
  const pages: string[] = [];
  let cursor: string | undefined;
  for (;;) {
    const res = await fetch(`${base}/v3/courses?limit=100&${INCLUDES}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`, {
      headers: { authorization: `Bearer ${key}` },
    });
    if (res.status !== 200) throw new Error(`GET /v3/courses answered ${res.status}: ${await res.text()}`);
    const body = (await res.json()) as { result: unknown[]; pagination: { nextCursor?: string | null; hasMore?: boolean } };
    pages.push(JSON.stringify(body.result));
    cursor = body.pagination.nextCursor ?? undefined;
    if (!cursor) return pages;
  }
}

async function main(): Promise<void> {
  const dir = await mkdtemp(path.join(os.tmpdir(), "export-selftest-"));
  const from = path.join(dir, "from");
  const to = path.join(dir, "to");
  const t0 = performance.now();
  const lap = (what: string) => console.log(`# ${what}: ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  const servers: { stop(): Promise<void> }[] = [];
  try {
    // Both deployments start from the migrated template.
    await migratedState(from);
    await migratedState(to);
    lap("migrations");
    const data = generateDataset({ schools: 1, courses: COURSES, studentsPerCourse: 10, smallCourses: 0 });
    lap("dataset");
    const school = data.schools![0]!;
    const key = school.apiKeys![0]!;
    const first = path.join(dir, "school.json");
    await writeFile(first, JSON.stringify(data));
    const imported = await runScript("import.ts", [first, "--persist-to", from, "--quiet"]);
    if (imported.code !== 0) throw new Error(`import failed:\n${imported.stdout}${imported.stderr}`);
    // A tenth of the courses changed a day later: version 2, updatedAt the second import's time.
    const changed = {
      schools: [{ id: school.id, name: school.name }],
      courses: data.courses!.filter((_, i) => i % 10 === 0).map((c) => ({ ...c, name: `${c.name} (2)` })),
    };
    const second = path.join(dir, "changed.json");
    await writeFile(second, JSON.stringify(changed));
    const reimported = await runScript("import.ts", [second, "--persist-to", from, "--quiet"]);
    if (reimported.code !== 0) throw new Error(`second import failed:\n${reimported.stdout}${reimported.stderr}`);
    // The two keys written straight into the directory's file (set-up, not the export under test).
    const insert =
      "INSERT INTO api_keys (key_hash, school_id, created_at, id, label, last4, scopes, revoked_at, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)";
    await execLocalD1(
      insert,
      [
        await sha256Hex(LABELLED_KEY),
        school.id,
        1_700_000_000_123,
        "key_selftest_labelled",
        "ERP «sync»",
        "cdef",
        "courses:read students:read",
        null,
        4_102_444_800_000,
      ],
      from,
    );
    await execLocalD1(
      insert,
      [await sha256Hex(REVOKED_KEY), school.id, 1_700_000_000_456, "key_selftest_revoked", null, "defg", "courses:read", 1_710_000_000_000, null],
      from,
    );
    lap("two imports of the source deployment");

    const file = path.join(dir, "export.json");
    const exported = await runScript("shards.ts", ["export", "--school", school.id, "--out", file, "--persist-to", from]);
    lap("export");
    check(
      exported.code === 0 && exported.stderr.includes(`exported ${school.id}: 30,000 courses, 3 API key hashes`),
      "shards export: exit 0 and its summary",
      `${exported.stdout}${exported.stderr}`,
    );
    const text = await readFile(file, "utf8");
    check(!text.includes(key) && !text.includes(LABELLED_KEY), "the export holds no key, only hashes");
    const refused = await runScript("shards.ts", ["export", "--school", "sch_nowhere", "--out", path.join(dir, "none.json"), "--persist-to", from]);
    check(refused.code === 2 && refused.stderr.includes('no school "sch_nowhere"'), "export of an unknown school: exit 2, saying so", refused.stderr);
    const restored = await runScript("import.ts", [file, "--persist-to", to, "--quiet"]);
    lap("import of the export into a fresh deployment");
    check(restored.code === 0, "the export imports into a fresh deployment", `${restored.stdout}${restored.stderr}`);

    const a = await startMiniflare({ persistTo: from, entry: "src/index.ts", vars: { RATE_LIMIT_ENABLED: "false" } });
    servers.push(a);
    const fresh = await startMiniflare({ persistTo: to, entry: "src/index.ts", vars: { RATE_LIMIT_ENABLED: "false" } });
    servers.push(fresh);
    const [pagesA, pagesB] = await Promise.all([listing(a.base, key), listing(fresh.base, key)]);
    lap("both listings");
    const records = pagesA.reduce((n, p) => n + (JSON.parse(p) as unknown[]).length, 0);
    check(records === COURSES && pagesA.length === COURSES / 100, "the source lists 30,000 courses in 300 pages", `${records} records, ${pagesA.length} pages`);
    const differ = pagesA.findIndex((p, i) => p !== pagesB[i]);
    check(
      pagesB.length === pagesA.length && differ === -1,
      "both deployments list the same records, page for page, with every include",
      differ === -1
        ? `${pagesB.length} pages against ${pagesA.length}`
        : `page ${differ + 1}:\n${pagesA[differ]!.slice(0, 600)}\n${pagesB[differ]!.slice(0, 600)}`,
    );
    const versions = new Set(pagesA.flatMap((p) => (JSON.parse(p) as { version: number }[]).map((r) => r.version)));
    check(versions.has(1) && versions.has(2), "the compared records have versions 1 and 2", JSON.stringify([...versions]));
    for (const [k, status] of [
      [LABELLED_KEY, 200],
      [REVOKED_KEY, 401],
    ] as const) {
      const res = await fetch(`${fresh.base}/v3/courses?limit=1`, { headers: { authorization: `Bearer ${k}` } });
      check(res.status === status, `the fresh deployment answers ${status} to the ${k === REVOKED_KEY ? "revoked" : "labelled"} key`, String(res.status));
    }
    await Promise.all(servers.splice(0).map((s) => s.stop()));

    const [dbA, dbB] = [await readLocalD1(from), await readLocalD1(to)];
    try {
      const keys = async (db: typeof dbA) =>
        JSON.stringify((await db.databases.DIRECTORY!.prepare("SELECT * FROM api_keys WHERE school_id = ? ORDER BY id").bind(school.id).all()).results);
      check((await keys(dbA)) === (await keys(dbB)), "the keys' rows are the same: hash, id, label, last 4, scopes, created, revoked, expiry");
      const shardOf = async (db: typeof dbA) =>
        db.databases[(await db.databases.DIRECTORY!.prepare("SELECT shard FROM schools WHERE id = ?").bind(school.id).first<{ shard: string }>())!.shard]!;
      const seqA = (await (await shardOf(dbA)).prepare("SELECT seq FROM school_changes WHERE school_id = ?").bind(school.id).first<{ seq: number }>())!.seq;
      const outbox = await (await shardOf(dbB))
        .prepare(
          "SELECT count(*) AS n, sum(json_extract(payload, '$.type') = 'course.created') AS created, min(c.change_seq) AS low FROM outbox o JOIN courses c ON c.school_id = o.school_id AND c.id = json_extract(o.payload, '$.data.course.id') WHERE o.school_id = ?",
        )
        .bind(school.id)
        .first<{ n: number; created: number; low: number }>();
      check(
        outbox?.n === COURSES && outbox.created === COURSES && outbox.low === seqA + 1,
        "the fresh deployment's import publishes one course.created a course, numbered after the exported change number",
        `${JSON.stringify(outbox)}, exported change number ${seqA}`,
      );
    } finally {
      dbA.dispose();
      dbB.dispose();
    }
  } finally {
    await Promise.all(servers.map((s) => s.stop()));
    await rm(dir, { recursive: true, force: true });
    lap("total");
  }
}

await runSelfTest("export", main);
