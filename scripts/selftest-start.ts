/**
 * `npm run test:start`: what `npm start` (scripts/start.ts) decides before it runs
 * `wrangler dev`, on throw-away state: the local migrations it still has to apply, read from
 * the databases' migration tables (none once applied: a warm start spawns no
 * `wrangler d1 migrations apply`), and the refusal of a port already in use, which leaves
 * the running server's log (.wrangler/start.log) untouched; and the cron runner it starts
 * (scripts/lib/cron-runner.ts) against a stand-in for the dev server, on a mocked clock.
 */
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { createServer as createHttpServer } from "node:http";
import { createServer } from "node:net";
import os from "node:os";
import path from "node:path";
import { mock } from "node:test";
import { startCronRunner } from "./lib/cron-runner";
import { openLocalD1, pendingLocalMigrations } from "./lib/d1-local";
import { forgetLocalApi, localApiBase, recordedLocalApi, recordLocalApi } from "./lib/local-api";
import { check, migratedState, runScript, runSelfTest } from "./lib/selftest";
import { ROOT } from "./lib/wrangler";
import { shownLine } from "./start";

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

/** Turns of the event loop (no timer: the clock is mocked) until `done`, for at most `ms` of real time. */
async function until(done: () => boolean, ms = 10_000): Promise<void> {
  const end = performance.now() + ms;
  while (!done() && performance.now() < end) await new Promise((resolve) => setImmediate(resolve));
}

/**
 * The cron runner `npm start` starts, against a stand-in for the dev server's
 * `/cdn-cgi/local/scheduled` on a mocked clock: each minute's run with that minute as its time,
 * every matching cron at minute 0, a failed run reported and run again the next minute, none
 * after `stop`.
 */
async function cronRunnerChecks(): Promise<void> {
  const calls: { cron: string; time: number }[] = [];
  let status = 200;
  const server = createHttpServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://stand-in");
    if (url.pathname === "/cdn-cgi/local/scheduled") calls.push({ cron: url.searchParams.get("cron") ?? "", time: Number(url.searchParams.get("time")) });
    res.writeHead(status, { "content-type": "application/json" });
    res.end(JSON.stringify({ outcome: status === 200 ? "ok" : "exception" }));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  const lines: string[] = [];
  const at = (h: number, m: number) => Date.UTC(2026, 10, 28, h, m);
  mock.timers.enable({ apis: ["setTimeout", "Date"], now: at(11, 58) + 30_000 });
  const runner = startCronRunner(base, { crons: ["* * * * *", "0 * * * *"], log: (line) => lines.push(line) });
  try {
    mock.timers.tick(30_000);
    await until(() => runner.runs.length === 1);
    check(
      JSON.stringify(calls) === JSON.stringify([{ cron: "* * * * *", time: at(11, 59) }]),
      "cron runner: the next minute's run, that minute as its time",
      JSON.stringify(calls),
    );
    status = 500;
    mock.timers.tick(60_000);
    await until(() => runner.runs.length === 3);
    const hourly = calls.slice(1).sort((a, b) => a.cron.localeCompare(b.cron));
    check(
      JSON.stringify(hourly) ===
        JSON.stringify([
          { cron: "* * * * *", time: at(12, 0) },
          { cron: "0 * * * *", time: at(12, 0) },
        ]),
      "cron runner: at minute 0 every matching cron runs",
      JSON.stringify(calls),
    );
    check(
      lines.length === 2 && lines.every((l) => /at 12:00 UTC failed \(HTTP 500.*the next minute runs it again/.test(l)),
      "cron runner: a failed run is reported",
      JSON.stringify(lines),
    );
    status = 200;
    mock.timers.tick(60_000);
    await until(() => runner.runs.length === 4);
    check(
      calls.at(-1)?.time === at(12, 1) && runner.runs.at(-1)?.ok === true && /ran at 12:01 UTC, after 2 failed run\(s\)/.test(lines.at(-1) ?? ""),
      "cron runner: the next minute runs again, and says so",
      JSON.stringify({ calls, lines }),
    );
    runner.stop();
    mock.timers.tick(120_000);
    // Long enough for a call to reach the stand-in, were one made.
    await until(() => calls.length > 4, 1_000);
    check(calls.length === 4, "cron runner: once stopped, no run starts", JSON.stringify(calls));
  } finally {
    runner.stop();
    mock.timers.reset();
    server.close();
  }
}

/**
 * The record of where `npm start` serves (scripts/lib/local-api.ts): the CLIs find a server on
 * another port through it, ignore a record whose process is gone, and only its writer removes it.
 */
function localApiChecks(dir: string): void {
  const file = path.join(dir, "local-api.json");
  const saved = process.env.API_BASE;
  delete process.env.API_BASE;
  try {
    check(localApiBase(file) === "http://127.0.0.1:8787", "no npm start running: the CLIs reach 8787", localApiBase(file));
    recordLocalApi("http://127.0.0.1:8799", file);
    check(localApiBase(file) === "http://127.0.0.1:8799", "npm start -- --port 8799: the CLIs reach 8799", localApiBase(file));
    // A record left by a killed npm start (its process gone): ignored.
    writeFileSync(file, JSON.stringify({ base: "http://127.0.0.1:8799", pid: 2 ** 22 + 1 }));
    check(recordedLocalApi(file) === undefined, "a record whose process is gone is ignored", String(recordedLocalApi(file)));
    forgetLocalApi(file);
    check(existsSync(file), "another process's record is not removed");
    recordLocalApi("http://127.0.0.1:8799", file);
    forgetLocalApi(file);
    check(!existsSync(file), "npm start removes its own record on exit");
    process.env.API_BASE = "http://127.0.0.1:9000";
    check(localApiBase(file) === "http://127.0.0.1:9000", "API_BASE wins", localApiBase(file));
  } finally {
    if (saved === undefined) delete process.env.API_BASE;
    else process.env.API_BASE = saved;
  }
}

/** What `npm start` shows of wrangler's lines (`shownLine`). */
function outputChecks(): void {
  const warning = '\u001b[33m▲ \u001b[43;33m[\u001b[43;30mWARNING\u001b[43;33m]\u001b[0m \u001b[1m{"kind":"delivery_attempt","status":"failed"}\u001b[0m';
  check(
    shownLine(warning) === '{"kind":"delivery_attempt","status":"failed"}',
    "a Worker's warn line loses wrangler's ▲ [WARNING] wrapper",
    String(shownLine(warning)),
  );
  const nosentry = "\u001b[33m▲ [WARNING] NOSENTRY SQLite alarm handler canceled with requestScheduledAlarm.; actorId = 0d39\u001b[0m";
  check(shownLine(nosentry) === undefined, "workerd's NOSENTRY diagnostics are not shown", String(shownLine(nosentry)));
  check(shownLine("[wrangler:info] GET /v3/courses 200 OK (12ms)") === undefined, "wrangler's request lines are not shown");
  check(shownLine('{"kind":"request","status":200}') === '{"kind":"request","status":200}', "the Worker's lines are shown as they are");
  check(shownLine("▲ [WARNING] something else") === "▲ [WARNING] something else", "wrangler's own warnings are kept");
}

async function main(): Promise<void> {
  outputChecks();
  await cronRunnerChecks();
  const dir = await mkdtemp(path.join(os.tmpdir(), "start-selftest-"));
  try {
    localApiChecks(dir);
    const fresh = await pendingUnder(path.join(dir, "fresh"));
    check(fresh.length > 0 && JSON.stringify(fresh) === JSON.stringify(everyMigration()), "fresh state: every migration is pending", JSON.stringify(fresh));
    // The shared template that wrangler migrated (migratedState).
    const persist = path.join(dir, "state");
    await migratedState(persist);
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
