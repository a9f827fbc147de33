/**
 * Self-test of the keys CLI (`npm run test:keys`, about 3 min), against a throw-away local D1
 * directory (`--persist-to`) that `wrangler dev` serves too: (a) usage errors exit 2 and write
 * nothing; (b) `create` prints a new `sk_live_` key once with its id, D1 holds only its hash
 * (with id, label, last 4 characters), an unknown school exits 2; (c) `list` shows id, label,
 * last 4, createdAt, revokedAt, never a key; (d) after `revoke KEY_ID` the key and its portal
 * sessions are 401, other keys work, a second revoke keeps the first instant, an unknown id
 * exits 2; (e) `revoke` lists exactly the registrations the key created or last changed (one
 * it re-pointed included), `--disable-webhooks` disables them and not the other key's, each
 * run's temporary key ends revoked; with no Worker at `--base` the key is revoked, exit 3.
 * Prints `ok`/`not ok` lines; exit status 1 when a check fails.
 */
import { createHash } from "node:crypto";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { main as keysMain } from "./keys";
import { type DevServer, freePort, startDevServer } from "./lib/dev-server";
import { check, runCounted, runScript, runSelfTest } from "./lib/selftest";
import { applyMigrations, d1Query } from "./lib/wrangler";

const SCHOOL = "sch_keys_selftest";
const IMPORTED_KEY = "sk_test_keys_selftest_imported_0123456789";

async function main(): Promise<void> {
  const dir = await mkdtemp(path.join(os.tmpdir(), "keys-selftest-"));
  const persist = path.join(dir, "state");
  const keys = (...args: string[]) => runScript("keys.ts", [...args, "--persist-to", persist]);
  const count = async () => (await d1Query<{ n: number }>("SELECT count(*) AS n FROM api_keys", "local", persist))[0]!.n;
  let server: DevServer | undefined;
  try {
    await applyMigrations("local", persist, { quiet: true });
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
      ["revoke without KEY_ID", ["revoke"]],
      ["revoke with a --base that is not a URL", ["revoke", "key_00000000000000000000000000", "--base", "nowhere"]],
      ["list with --disable-webhooks", ["list", "--school", SCHOOL, "--disable-webhooks"]],
      ["--local with --remote", ["list", "--school", SCHOOL, "--local", "--remote"]],
    ] as const) {
      const r = await keys(...args);
      check(r.code === 2 && r.stderr.includes("usage: npm run keys"), `usage error (${name}): exit 2 with the usage`, `exit ${r.code}\n${r.stderr}`);
    }
    check((await count()) === 1, "usage errors write nothing");

    // (b) create.
    const created = await keys("create", "--school", SCHOOL, "--label", "ERP sync", "--json");
    check(created.code === 0, "create: exit 0", `${created.stdout}${created.stderr}`);
    const made = JSON.parse(created.stdout) as { id: string; schoolId: string; label: string; last4: string; createdAt: string; key: string };
    check(/^sk_live_[A-Za-z0-9_-]{43}$/.test(made.key), "create: prints a sk_live_ key", made.key);
    check(
      /^key_[0-9A-Z]{26}$/.test(made.id) && made.schoolId === SCHOOL && made.label === "ERP sync",
      "create: with its key id, school and label",
      created.stdout,
    );
    check(created.stdout.split(made.key).length === 2, "create: the key is printed once");
    const rows = await d1Query<Record<string, unknown>>(`SELECT * FROM api_keys WHERE school_id = '${SCHOOL}'`, "local", persist);
    const stored = rows.find((r) => r.id === made.id);
    check(
      stored?.key_hash === createHash("sha256").update(made.key).digest("hex") && stored.last4 === made.key.slice(-4) && stored.label === "ERP sync",
      "create: D1 holds the key's SHA-256 hash, id, label and last 4 characters",
      JSON.stringify(stored),
    );
    check(!JSON.stringify(rows).includes(made.key.slice(8, -4)), "create: the key itself is nowhere in D1");
    const text = await keys("create", "--school", SCHOOL);
    check(
      text.code === 0 && /key: sk_live_\S{43}\n/.test(text.stdout) && /key_[0-9A-Z]{26}/.test(text.stdout),
      "create (text): the key and its id",
      text.stdout,
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
      listing.every((k) => JSON.stringify(Object.keys(k).sort()) === JSON.stringify(["createdAt", "id", "label", "last4", "revokedAt"])),
      "list: id, label, last4, createdAt, revokedAt for each",
      listed.stdout,
    );
    check(
      JSON.stringify(listing.find((k) => k.id === made.id)) ===
        JSON.stringify({ id: made.id, label: "ERP sync", last4: made.last4, createdAt: made.createdAt, revokedAt: null }),
      "list: the new key as created",
      listed.stdout,
    );
    const table = await keys("list", "--school", SCHOOL);
    check(
      table.code === 0 && /^id\s+label\s+last4\s+createdAt\s+revokedAt$/m.test(table.stdout) && table.stdout.includes(`…${made.last4}`),
      "list (text): a table with the last 4 characters",
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
  } finally {
    await server?.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

await runSelfTest("keys", main);
