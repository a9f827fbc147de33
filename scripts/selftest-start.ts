/**
 * `npm run test:start`: what `npm start` (scripts/start.ts) decides before it runs
 * `wrangler dev`, on throw-away state: the local migrations it still has to apply, read from
 * the databases' migration tables (none once applied: a warm start spawns no
 * `wrangler d1 migrations apply`), and the refusal of a port already in use, which leaves
 * the running server's log (.wrangler/start.log) untouched.
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { createServer } from "node:net";
import os from "node:os";
import path from "node:path";
import { openLocalD1, pendingLocalMigrations } from "./lib/d1-local";
import { check, runScript, runSelfTest } from "./lib/selftest";
import { applyMigrations, ROOT } from "./lib/wrangler";

/** The migrations of `npm start`'s local databases not applied under `persistTo`. */
async function pendingUnder(persistTo: string): Promise<string[]> {
  const local = await openLocalD1(persistTo);
  try {
    return await pendingLocalMigrations(local);
  } finally {
    await local.dispose();
  }
}

/** `BINDING/file.sql` of every migration file of wrangler.toml's three D1 bindings (written out, not read from wrangler). */
function everyMigration(): string[] {
  const files = (folder: string) =>
    readdirSync(path.join(ROOT, "migrations", folder))
      .filter((f) => f.endsWith(".sql"))
      .sort();
  return [...files("directory").map((f) => `DIRECTORY/${f}`), ...["SHARD_0", "SHARD_1"].flatMap((b) => files("shard").map((f) => `${b}/${f}`))];
}

async function main(): Promise<void> {
  const dir = await mkdtemp(path.join(os.tmpdir(), "start-selftest-"));
  try {
    const persist = path.join(dir, "state");
    const fresh = await pendingUnder(persist);
    check(fresh.length > 0 && JSON.stringify(fresh) === JSON.stringify(everyMigration()), "fresh state: every migration is pending", JSON.stringify(fresh));
    await applyMigrations("local", persist, { quiet: true });
    const warm = await pendingUnder(persist);
    check(warm.length === 0, "after wrangler applied them: nothing is pending (a warm start skips wrangler)", JSON.stringify(warm));

    // A port in use: refused with exit 2, and the log of the server holding it is left as it was.
    const holder = createServer();
    await new Promise<void>((resolve) => holder.listen(0, "127.0.0.1", resolve));
    const port = (holder.address() as { port: number }).port;
    const log = path.join(ROOT, ".wrangler", "start.log");
    const before = existsSync(log) ? readFileSync(log, "utf8") : undefined;
    try {
      const r = await runScript("start.ts", ["--port", String(port), "--persist-to", persist]);
      check(r.code === 2 && r.stderr.includes(`port ${port} is in use`), "a port in use: exit 2, saying so", `exit ${r.code}\n${r.stdout}${r.stderr}`);
      const after = existsSync(log) ? readFileSync(log, "utf8") : undefined;
      check(after === before, "a port in use: the running server's log is untouched", `${before?.length} → ${after?.length} characters`);
    } finally {
      holder.close();
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

await runSelfTest("start", main);
