/**
 * Self-test of the keys CLI (`npm run test:keys`, about 2 min), against a throw-away local D1
 * directory (`--persist-to`) that `wrangler dev` serves too: (a) usage errors (an unknown
 * scope, a bad `--expires-in` included) exit 2 and write nothing; (b) `create` prints a new
 * `sk_live_` key once with its id, D1 holds only its hash (with id, label, last 4, scopes,
 * expiry), an unknown school exits 2; (c) `list` shows id, label, last 4, scopes, createdAt,
 * expiresAt, revokedAt, never a key; (d) after `revoke KEY_ID` the key and its sessions are
 * 401, other keys work, a second revoke keeps the first instant, an unknown id exits 2; (e)
 * `revoke` lists the registrations the key created or last changed, `--disable-webhooks`
 * disables them, each run's temporary key (webhooks:read/write, 10 min) ends revoked, Ctrl-C
 * included; with no Worker at `--base` the key is revoked, exit 3. Exit 1 when a check fails.
 */
import { createHash } from "node:crypto";
import { once } from "node:events";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { main as keysMain } from "./keys";
import { queryLocalD1 } from "./lib/d1-file";
import { type DevServer, freePort, startDevServer } from "./lib/dev-server";
import { check, migratedState, runCounted, runScript, runSelfTest, startScript } from "./lib/selftest";

const SCHOOL = "sch_keys_selftest";
/** Every scope, in docs/reference.md § Scopes's order: a key's default. */
const EVERY_SCOPE = ["courses:read", "courses:write", "students:read", "webhooks:read", "webhooks:write", "events:read", "portal"];
const IMPORTED_KEY = "sk_test_keys_selftest_imported_0123456789";

/** A temporary key's row in the directory. */
interface TempKeyRow {
  scopes: string;
  created_at: number;
  expires_at: number | null;
  revoked_at: number | null;
}

/** Whether a row is the temporary key `revoke` must mint: two scopes, an expiry 10 minutes after its mint. */
const isTemporaryKey = (r: TempKeyRow) => r.scopes === "webhooks:read webhooks:write" && r.expires_at !== null && r.expires_at - r.created_at === 600_000;

async function main(): Promise<void> {
  const dir = await mkdtemp(path.join(os.tmpdir(), "keys-selftest-"));
  const persist = path.join(dir, "state");
  const keys = (...args: string[]) => runScript("keys.ts", [...args, "--persist-to", persist]);
  const count = async () => (await queryLocalD1<{ n: number }>("SELECT count(*) AS n FROM api_keys", persist))[0]!.n;
  let server: DevServer | undefined;
  let stall: Server | undefined;
  try {
    await migratedState(persist);
    const file = path.join(dir, "school.json");
    await writeFile(file, JSON.stringify({ schools: [{ id: SCHOOL, name: "Keys self-test", apiKeys: [IMPORTED_KEY] }] }));
    const imported = await runScript("import.ts", [file, "--persist-to", persist, "--quiet"]);
    if (imported.code !== 0) throw new Error(`import failed:\n${imported.stdout}${imported.stderr}`);

    // (a) Usage errors: exit 2, nothing written.
    for (const [name, args] of [
      ["no command", []],
      ["unknown command", ["mint", "--school", SCHOOL]],
      ["create without --school", ["create"]],
      ["create with a malformed school id", ["create", "--school", "sch one"]],
      ["create with a control character in --label", ["create", "--school", SCHOOL, "--label", "a\nb"]],
      ["create with an unknown scope", ["create", "--school", SCHOOL, "--scope", "courses:read,courses:reed"]],
      ["create with an empty --scope", ["create", "--school", SCHOOL, "--scope", ","]],
      ["create with --expires-in in seconds", ["create", "--school", SCHOOL, "--expires-in", "90s"]],
      ["list with --scope", ["list", "--school", SCHOOL, "--scope", "portal"]],
      ["revoke without KEY_ID", ["revoke"]],
      ["revoke with a --base that is not a URL", ["revoke", "key_00000000000000000000000000", "--base", "nowhere"]],
      ["list with --disable-webhooks", ["list", "--school", SCHOOL, "--disable-webhooks"]],
      ["--local with --remote", ["list", "--school", SCHOOL, "--local", "--remote"]],
    ] as const) {
      // The first through the CLI's own process (its exit status), the others in this process.
      const r = args.length === 0 ? await keys(...args) : await runCounted(keysMain, [...args, "--persist-to", persist]);
      check(r.code === 2 && r.stderr.includes("usage: npm run keys"), `usage error (${name}): exit 2 with the usage`, `exit ${r.code}\n${r.stderr}`);
    }
    check((await count()) === 1, "usage errors write nothing");
    const misspelt = await keys("create", "--school", SCHOOL, "--scope", "courses:reed");
    check(
      misspelt.stderr.includes(
        '"courses:reed" is not a scope; the scopes are courses:read, courses:write, students:read, webhooks:read, webhooks:write, events:read, portal',
      ),
      "create with an unknown scope: names it and lists the valid scopes",
      misspelt.stderr,
    );

    // (b) create.
    const created = await keys("create", "--school", SCHOOL, "--label", "ERP sync", "--json");
    check(created.code === 0, "create: exit 0", `${created.stdout}${created.stderr}`);
    const made = JSON.parse(created.stdout) as {
      id: string;
      schoolId: string;
      label: string;
      last4: string;
      scopes: string[];
      createdAt: string;
      expiresAt: string | null;
      key: string;
    };
    check(/^sk_live_[A-Za-z0-9_-]{43}$/.test(made.key), "create: prints a sk_live_ key", made.key);
    check(
      /^key_[0-9A-Z]{26}$/.test(made.id) && made.schoolId === SCHOOL && made.label === "ERP sync",
      "create: with its key id, school and label",
      created.stdout,
    );
    check(created.stdout.split(made.key).length === 2, "create: the key is printed once");
    const rows = await queryLocalD1<Record<string, unknown>>(`SELECT * FROM api_keys WHERE school_id = '${SCHOOL}'`, persist);
    const stored = rows.find((r) => r.id === made.id);
    check(
      stored?.key_hash === createHash("sha256").update(made.key).digest("hex") &&
        stored.last4 === made.key.slice(-4) &&
        stored.label === "ERP sync" &&
        stored.scopes === EVERY_SCOPE.join(" ") &&
        stored.expires_at === null,
      "create: D1 holds the key's SHA-256 hash, id, label, last 4 characters, every scope (no --scope) and no expiry",
      JSON.stringify(stored),
    );
    check(!JSON.stringify(rows).includes(made.key.slice(8, -4)), "create: the key itself is nowhere in D1");
    check(
      JSON.stringify(made.scopes) === JSON.stringify(EVERY_SCOPE) && made.expiresAt === null,
      "create (--json): every scope, no expiry by default",
      created.stdout,
    );
    const text = await keys("create", "--school", SCHOOL, "--scope", "events:read,courses:read", "--scope", "courses:read", "--expires-in", "90d");
    const textId = /key_[0-9A-Z]{26}/.exec(text.stdout)?.[0];
    check(
      text.code === 0 && /key: sk_live_\S{43}\n/.test(text.stdout) && textId !== undefined && text.stdout.includes("scopes: courses:read, events:read\n"),
      "create (text): the key, its id and its scopes (repeated and comma-listed --scope, in canonical order)",
      text.stdout,
    );
    const narrow = (
      await queryLocalD1<{ scopes: string; created_at: number; expires_at: number }>(`SELECT * FROM api_keys WHERE id = '${textId}'`, persist)
    )[0];
    check(
      narrow?.scopes === "courses:read events:read" && narrow.expires_at - narrow.created_at === 90 * 86_400_000,
      "create --scope --expires-in 90d: D1 holds those scopes and an expiry 90 days after the creation",
      JSON.stringify(narrow),
    );
    const before = await count();
    const unknown = await keys("create", "--school", "sch_nowhere");
    check(unknown.code === 2 && /no school "sch_nowhere"/.test(unknown.stderr), "create for an unknown school: exit 2, saying so", unknown.stderr);
    check((await count()) === before, "create for an unknown school writes nothing");

    // (c) list.
    const listed = await keys("list", "--school", SCHOOL, "--json");
    const listing = JSON.parse(listed.stdout) as Record<string, unknown>[];
    check(listed.code === 0 && listing.length === 3, "list: every key of the school", listed.stdout);
    check(
      listing.every((k) => JSON.stringify(Object.keys(k).sort()) === JSON.stringify(["createdAt", "expiresAt", "id", "label", "last4", "revokedAt", "scopes"])),
      "list: id, label, last4, scopes, createdAt, expiresAt, revokedAt for each",
      listed.stdout,
    );
    check(
      JSON.stringify(listing.find((k) => k.id === made.id)) ===
        JSON.stringify({ id: made.id, label: "ERP sync", last4: made.last4, scopes: EVERY_SCOPE, createdAt: made.createdAt, expiresAt: null, revokedAt: null }),
      "list: the new key as created",
      listed.stdout,
    );
    const narrowListed = listing.find((k) => k.id === textId);
    check(
      JSON.stringify(narrowListed?.scopes) === '["courses:read","events:read"]' &&
        Date.parse(String(narrowListed?.expiresAt)) - Date.parse(String(narrowListed?.createdAt)) === 90 * 86_400_000,
      "list: the narrow key's scopes and expiry",
      listed.stdout,
    );
    const table = await keys("list", "--school", SCHOOL);
    check(
      table.code === 0 &&
        /^id\s+label\s+last4\s+scopes\s+createdAt\s+expiresAt\s+revokedAt$/m.test(table.stdout) &&
        table.stdout.includes(`…${made.last4}`) &&
        new RegExp(`^${made.id}\\s.*\\severy scope\\s.*\\snever\\s`, "m").test(table.stdout) &&
        new RegExp(`^${textId}\\s.*\\scourses:read,events:read\\s`, "m").test(table.stdout),
      'list (text): a table with the last 4 characters, the scopes ("every scope" for a full key) and the expiry',
      table.stdout,
    );
    check(![listed.stdout, table.stdout].some((out) => out.includes(made.key) || out.includes(IMPORTED_KEY)), "list: never a key");
    const nowhere = await keys("list", "--school", "sch_nowhere");
    check(nowhere.code === 2, "list of an unknown school: exit 2", `${nowhere.stdout}${nowhere.stderr}`);
    // A local listing reads the database file: no wrangler, no workerd (seconds each).
    const read = await runCounted(keysMain, ["list", "--school", SCHOOL, "--persist-to", persist]);
    check(read.code === 0 && read.spawned === 0 && read.stdout.includes(made.id), "list (local): starts no process", `${read.spawned} started\n${read.stdout}`);
    const minted = await runCounted(keysMain, ["create", "--school", SCHOOL, "--label", "counted", "--persist-to", persist]);
    check(minted.code === 0 && minted.spawned > 0, "create (local): runs wrangler, which the count above would see", `${minted.spawned} started`);

    // (d) The key against the Worker, then revoked.
    server = await startDevServer({ persistTo: persist, vars: { RATE_LIMIT_ENABLED: "false" }, quiet: true, timeoutMs: 120_000 });
    const status = async (key: string) => (await fetch(`${server!.base}/v3/webhooks`, { headers: { authorization: `Bearer ${key}` } })).status;
    check((await status(made.key)) === 200, "the new key authenticates (200)");
    // Two portal sessions minted with the key, one of them redeemed, and one minted with the other
    // key and redeemed. A link is no bearer (only its redeem takes it): its status is its redeem's.
    const mint = async (key: string) => {
      const res = await fetch(`${server!.base}/v3/portal-sessions`, { method: "POST", headers: { authorization: `Bearer ${key}` } });
      return ((await res.json()) as { result: { token: string } }).result.token;
    };
    const redeemAnswer = (token: string) =>
      fetch(`${server!.base}/v3/portal-sessions/redeem`, { method: "POST", headers: { authorization: `Bearer ${token}` } });
    const redeem = async (token: string) => ((await (await redeemAnswer(token)).json()) as { result: { token: string } }).result.token;
    const link = await mint(made.key);
    const session = await redeem(await mint(made.key));
    const otherSession = await redeem(await mint(IMPORTED_KEY));
    check((await status(session)) === 200 && (await status(link)) === 401, "the key's portal session works before the revocation; its link is no bearer");
    // Registrations: the key creates one (and one through its session) and re-points one of the
    // other key's; the other key's second one it never touches.
    const register = async (key: string, name: string) => {
      const res = await fetch(`${server!.base}/v3/webhooks`, {
        method: "POST",
        headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
        body: JSON.stringify({ url: `https://keys-selftest.example.com/${name}` }),
      });
      return ((await res.json()) as { result: { id: string } }).result.id;
    };
    const hookOf = async (id: string) => {
      const res = await fetch(`${server!.base}/v3/webhooks/${id}`, { headers: { authorization: `Bearer ${IMPORTED_KEY}` } });
      return ((await res.json()) as { result: { enabled: boolean; disabledReason: string | null; createdBy: string; updatedBy: string } }).result;
    };
    const byKey = await register(made.key, "a");
    const bySession = await register(session, "a-session");
    const repointed = await register(IMPORTED_KEY, "b");
    const untouched = await register(IMPORTED_KEY, "b-untouched");
    await fetch(`${server!.base}/v3/webhooks/${repointed}`, {
      method: "PATCH",
      headers: { authorization: `Bearer ${made.key}`, "content-type": "application/json" },
      body: JSON.stringify({ url: "https://attacker.example.com/in" }),
    });
    const importedId = (await hookOf(untouched)).createdBy;
    check(
      JSON.stringify(await hookOf(repointed)).includes(`"createdBy":"${importedId}","updatedBy":"${made.id}"`),
      "the re-pointed registration: createdBy the other key, updatedBy the revoked one",
    );

    const revoked = await keys("revoke", made.id, "--base", server.base, "--json");
    const out = JSON.parse(revoked.stdout || "{}") as {
      revokedAt?: string;
      portalSessionsRevoked?: number;
      webhooks?: { id: string; enabled: boolean; createdBy: string; updatedBy: string; disabledNow: boolean }[] | null;
      webhookProblems?: string[];
      temporaryKeyId?: string | null;
    };
    const revokedAt = out.revokedAt;
    check(revoked.code === 0 && typeof revokedAt === "string", "revoke: exit 0, with the instant", `${revoked.stdout}${revoked.stderr}`);
    check(out.portalSessionsRevoked === 2, "revoke: counts the key's live portal sessions it revoked", revoked.stdout);
    check(
      JSON.stringify(out.webhooks?.map((w) => [w.id, w.enabled, w.disabledNow])) ===
        JSON.stringify([byKey, bySession, repointed].map((id) => [id, true, false])) && JSON.stringify(out.webhookProblems) === "[]",
      "revoke: lists exactly the registrations the key (or its session) created or last changed, still enabled",
      revoked.stdout,
    );
    check((await status(made.key)) === 401, "revoke: the key is refused from then on (401)");
    check(
      (await status(session)) === 401 && (await redeemAnswer(link)).status === 401,
      "revoke: its portal sessions are refused (401), and its link no longer redeems (401)",
    );
    check((await status(IMPORTED_KEY)) === 200 && (await status(otherSession)) === 200, "revoke: the school's other keys and their sessions still work");
    const again = await keys("revoke", made.id, "--base", server.base, "--disable-webhooks");
    check(
      again.code === 0 && again.stdout.includes(`already revoked at ${revokedAt}`),
      "revoke twice: the first instant is kept",
      `${again.stdout}${again.stderr}`,
    );
    check(
      again.stdout.includes("portal sessions revoked with it: 0") &&
        /^id\s+url\s+enabled\s+createdBy\s+updatedBy$/m.test(again.stdout) &&
        [byKey, bySession, repointed].every((id) => new RegExp(`^${id}\\s.*disabled now`, "m").test(again.stdout)) &&
        !again.stdout.includes(untouched) &&
        again.stdout.includes(`keyId is "${made.id}"`),
      "revoke --disable-webhooks (text): how many sessions, the registrations disabled now (not the other key's), how to review the log lines",
      again.stdout,
    );
    const states = await Promise.all([byKey, bySession, repointed, untouched].map(hookOf));
    check(
      JSON.stringify(states.map((h) => [h.enabled, h.disabledReason])) ===
        JSON.stringify([
          [false, "manual"],
          [false, "manual"],
          [false, "manual"],
          [true, null],
        ]),
      "--disable-webhooks: the key's registrations are disabled (manual), the other key's untouched one stays enabled",
      JSON.stringify(states),
    );
    const temps = (JSON.parse((await keys("list", "--school", SCHOOL, "--json")).stdout) as { id: string; label: string; revokedAt: string | null }[]).filter(
      (k) => k.label === `keys revoke ${made.id}`,
    );
    check(
      temps.length === 2 && temps.every((k) => k.revokedAt !== null) && temps[0]!.id === out.temporaryKeyId,
      "revoke: each run's temporary key (labelled after the revoked key) is revoked at its end",
      JSON.stringify(temps),
    );
    const tempRows = await queryLocalD1<TempKeyRow>(
      `SELECT scopes, created_at, expires_at, revoked_at FROM api_keys WHERE label = 'keys revoke ${made.id}'`,
      persist,
    );
    check(
      tempRows.length === 2 && tempRows.every(isTemporaryKey),
      "revoke: each temporary key has only webhooks:read and webhooks:write, and expires 10 minutes after its mint",
      JSON.stringify(tempRows),
    );
    check(
      states.slice(0, 3).every((h) => h.updatedBy === temps[1]!.id),
      "--disable-webhooks: the disabled registrations' updatedBy is the run's temporary key",
      JSON.stringify(states),
    );
    const after = JSON.parse((await keys("list", "--school", SCHOOL, "--json")).stdout) as { id: string; revokedAt: string | null }[];
    check(after.find((k) => k.id === made.id)?.revokedAt === revokedAt, "list: shows when the key was revoked", JSON.stringify(after));
    const other = JSON.parse((await keys("create", "--school", SCHOOL, "--json")).stdout) as { id: string; key: string };
    const nobody = `http://127.0.0.1:${await freePort()}`;
    const unreachable = await keys("revoke", other.id, "--base", nobody, "--disable-webhooks");
    check(
      unreachable.code === 3 &&
        unreachable.stderr.includes(`not listed: nothing answers at ${nobody}`) &&
        unreachable.stderr.includes("run the same revoke again"),
      "revoke with no Worker at --base: exit 3, saying the registrations were not listed and how to retry",
      `exit ${unreachable.code}\n${unreachable.stdout}${unreachable.stderr}`,
    );
    const listedAfter = JSON.parse((await keys("list", "--school", SCHOOL, "--json")).stdout) as { id: string; label: string; revokedAt: string | null }[];
    check(
      (await status(other.key)) === 401 &&
        listedAfter.find((k) => k.id === other.id)?.revokedAt !== null &&
        !listedAfter.some((k) => k.label === `keys revoke ${other.id}`),
      "revoke with no Worker at --base: the key is revoked all the same (401), no temporary key minted",
      JSON.stringify(listedAfter),
    );
    const missing = await keys("revoke", "key_00000000000000000000000000");
    check(missing.code === 2 && /no API key with id/.test(missing.stderr), "revoke of an unknown id: exit 2, saying so", missing.stderr);

    // (f) Ctrl-C during the review: a stand-in Worker answers the probe (no credential) and
    // holds every request made with the temporary key unanswered; once one arrives, the key is
    // in D1, and the run gets SIGINT.
    const stalled = JSON.parse((await keys("create", "--school", SCHOOL, "--json")).stdout) as { id: string };
    let keyArrived: () => void = () => {};
    const arrived = new Promise<void>((resolve) => {
      keyArrived = resolve;
    });
    stall = createServer((req, res) => {
      if (req.headers.authorization === undefined) res.writeHead(401).end();
      else keyArrived();
    });
    stall.listen(0, "127.0.0.1");
    await once(stall, "listening");
    const stallBase = `http://127.0.0.1:${(stall.address() as AddressInfo).port}`;
    const interrupted = startScript("keys.ts", ["revoke", stalled.id, "--base", stallBase, "--persist-to", persist]);
    const early = await Promise.race([arrived.then(() => null), interrupted.result]);
    check(early === null, "Ctrl-C: the run reaches the review with its temporary key", JSON.stringify(early));
    interrupted.child.kill("SIGINT");
    const ended = await interrupted.result;
    check(
      ended.code === 130 && ended.stderr.includes("is revoked"),
      "Ctrl-C during the review: exit 130, saying the temporary key is revoked",
      `exit ${ended.code}\n${ended.stdout}${ended.stderr}`,
    );
    const left = await queryLocalD1<TempKeyRow>(
      `SELECT scopes, created_at, expires_at, revoked_at FROM api_keys WHERE label = 'keys revoke ${stalled.id}'`,
      persist,
    );
    check(left.length === 1 && left[0]!.revoked_at !== null, "Ctrl-C during the review: no live temporary key is left in the directory", JSON.stringify(left));
    check(left.every(isTemporaryKey), "Ctrl-C: the temporary key had only webhooks:read and webhooks:write, and a 10-minute expiry", JSON.stringify(left));
  } finally {
    stall?.closeAllConnections();
    stall?.close();
    await server?.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

await runSelfTest("keys", main);
