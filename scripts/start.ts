/**
 * `npm start [-- --persist-to DIR] [--port N] [--verbose] [-- <more wrangler dev flags>]`: from
 * a fresh clone (after `npm ci`) to a running local API. Refuses a port already in use (before
 * touching the running server's log); applies the local D1 migrations only when the local
 * databases lack one (read from their migration tables); loads the demo data when the
 * directory has no school (scripts/seed-demo.ts); runs `wrangler dev --ip 127.0.0.1 --port
 * 8787` with insecure webhook URLs allowed and, once ready, prints the demo keys, a curl and the
 * URLs of /docs and /portal, then the Worker's log line per request; from then on calls the
 * scheduled handler every minute, as Cloudflare's cron would (scripts/lib/cron-runner.ts;
 * docs/operations.md § "The cron locally"). Forwards SIGINT/SIGTERM; exits with wrangler's
 * status. Wrangler's detail before it is ready goes to .wrangler/start.log (`--verbose`).
 */
import { createWriteStream, mkdirSync } from "node:fs";
import { createServer } from "node:net";
import path from "node:path";
import { parseArgs, stripVTControlCharacters } from "node:util";
import { DEMO_API_KEY, OTHER_API_KEY } from "./dataset/build";
import { runIfMain } from "./lib/cli";
import { type CronRunner, startCronRunner, wranglerCrons } from "./lib/cron-runner";
import { type LocalD1, openLocalD1, pendingLocalMigrations } from "./lib/d1-local";
import { forgetLocalApi, recordLocalApi } from "./lib/local-api";
import { formatInt } from "./lib/progress";
import { applyMigrations, ROOT, spawnWrangler, userPath } from "./lib/wrangler";
import { seedDemo } from "./seed-demo";

/** Default port of the local API. */
export const DEFAULT_PORT = 8787;

/** Where wrangler's output before the server is ready is written (without `--verbose`); git-ignored. */
const START_LOG = path.join(ROOT, ".wrangler", "start.log");

/** The curl printed at start-up: five demo courses with their teachers. */
export function demoCurl(port = DEFAULT_PORT, key = DEMO_API_KEY): string {
  return `curl -H "Authorization: Bearer ${key}" "http://127.0.0.1:${port}/v3/courses?limit=5&includeTeachers=true"`;
}

/**
 * What a newcomer needs once the server answers: the keys, a curl, the reference and the
 * portal, and how long the start took (`elapsedMs`: since this process started, every step included).
 */
function welcome(port: number, crons: readonly string[], elapsedMs: number): string {
  const base = `http://127.0.0.1:${port}`;
  const cron =
    crons.length === 0
      ? "cron: wrangler.toml declares none"
      : `cron: the scheduled handler runs as on Cloudflare (${crons.map((c) => `"${c}"`).join(", ")}, UTC), through ${base}/cdn-cgi/local/scheduled`;
  return `
demo API key (sch_demo):  ${DEMO_API_KEY}
other school (sch_other): ${OTHER_API_KEY}
try:
  ${demoCurl(port)}
API reference (paste the demo key under Authentication, then "Test Request"):
  ${base}/docs       OpenAPI document: ${base}/openapi.json
webhook portal (sign in with the demo key: endpoints, delivery log, chart):
  ${base}/portal
the webhook tour, in another terminal (it finds this server; elsewhere: --base ${base}):
  npm run demo:webhooks
${cron}

Ready on ${base} in ${(elapsedMs / 1000).toFixed(1)} s since npm start (Ctrl-C stops it); requests are logged below.
`;
}

/** One line on the migrations: their names when few, else the first and the last. */
function migrationLine(applied: string[]): string {
  if (applied.length === 0) return "D1 migrations: the directory and every shard are up to date";
  const names = applied.length <= 3 ? applied.join(", ") : `${applied[0]} … ${applied.at(-1)}`;
  return `D1 migrations: applied ${applied.length} (${names})`;
}

/** Whether something already listens on 127.0.0.1:`port` (another `npm start`, say). */
function portInUse(port: number): Promise<boolean> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once("error", (err: NodeJS.ErrnoException) => (err.code === "EADDRINUSE" ? resolve(true) : reject(err)));
    probe.once("listening", () => probe.close(() => resolve(false)));
    probe.listen(port, "127.0.0.1");
  });
}

/** wrangler's own line per request (`[wrangler:info] GET /v3/courses 200 OK (12ms)`): the Worker logs each request already. */
const WRANGLER_REQUEST_LINE = /^\[wrangler:info\] [A-Z]+ \S+ \d{3} /;
/** workerd's internal diagnostics (`NOSENTRY … AlarmManager …`): about the local runtime, not the service. */
const RUNTIME_DIAGNOSTIC = /NOSENTRY/;
/** wrangler's wrapper around a Worker's `console.warn`/`error` line: `▲ [WARNING] ` or `✘ [ERROR] ` before it. */
const WRAPPED_WORKER_LINE = /^(?:▲ \[WARNING\]|✘ \[ERROR\]) (\{"kind":.*)$/;

/**
 * What `npm start` prints of one line of wrangler's output once the server is ready: nothing for
 * wrangler's request lines (the Worker logs each request) and workerd's internal diagnostics;
 * the Worker's own JSON line without wrangler's warning wrapper (a failed delivery attempt is a
 * `warn`, not a problem of the server); every other line as it is.
 */
export function shownLine(line: string): string | undefined {
  const plain = stripVTControlCharacters(line);
  if (WRANGLER_REQUEST_LINE.test(plain) || RUNTIME_DIAGNOSTIC.test(plain)) return undefined;
  return WRAPPED_WORKER_LINE.exec(plain)?.[1] ?? line;
}

/**
 * The local migrations still to apply and the number of schools in the local directory (0
 * until its migrations are applied), read through Miniflare from the SQLite files themselves.
 */
async function localState(persistTo: string | undefined): Promise<{ pending: string[]; schools: number }> {
  let local: LocalD1 | undefined;
  try {
    local = await openLocalD1(persistTo);
    const pending = await pendingLocalMigrations(local);
    if (pending.some((m) => m.startsWith("DIRECTORY/"))) return { pending, schools: 0 };
    const row = await local.databases.DIRECTORY!.prepare("SELECT count(*) AS n FROM schools").first<{ n: number }>();
    return { pending, schools: Number(row?.n ?? 0) };
  } finally {
    await local?.dispose();
  }
}

async function main(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: { "persist-to": { type: "string" }, port: { type: "string" }, verbose: { type: "boolean" } },
  });
  const persistTo = values["persist-to"] === undefined ? undefined : userPath(values["persist-to"]);
  const port = values.port === undefined ? DEFAULT_PORT : Number(values.port);
  if (!Number.isInteger(port) || port <= 0 || port > 65535) throw new Error("--port must be a TCP port number");
  const verbose = values.verbose === true;
  // Before the log is truncated: a second `npm start` on a busy port would empty the first one's.
  if (await portInUse(port)) {
    console.error(`port ${port} is in use on 127.0.0.1 (another npm start?): stop it, or start on another port with npm start -- --port N`);
    return 2;
  }
  mkdirSync(path.dirname(START_LOG), { recursive: true });
  const log = createWriteStream(START_LOG);

  const state = await localState(persistTo);
  let schools = state.schools;
  if (state.pending.length === 0) console.log(migrationLine([]));
  else {
    if (verbose) console.log("applying local D1 migrations…");
    const migrating = performance.now();
    const { applied, output } = await applyMigrations("local", persistTo, { quiet: !verbose });
    log.write(output);
    if (!verbose) console.log(`${migrationLine(applied)} in ${((performance.now() - migrating) / 1000).toFixed(1)} s`);
    ({ schools } = await localState(persistTo));
  }
  if (schools === 0) {
    console.log("the local directory has no school: loading the demo data…");
    const { summary: s } = await seedDemo({ persistTo, skipMigrations: true, progress: verbose || process.stdout.isTTY === true });
    console.log(`demo data loaded: ${formatInt(s.rows)} rows, ${formatInt(s.courses)} courses in ${s.wallSeconds.toFixed(1)} s (generated and imported)`);
  } else {
    console.log(`the local directory has ${formatInt(schools)} schools: keeping them (npm run seed:demo reloads them; npm run shards -- status shows where)`);
  }
  console.log(`starting wrangler dev (build, bindings: ${verbose ? "below" : path.relative(ROOT, START_LOG)})…`);

  const args = ["dev", "--ip", "127.0.0.1", "--port", String(port), "--var", "WEBHOOK_ALLOW_INSECURE_URLS:true", "--show-interactive-dev-session=false"];
  if (persistTo) args.push("--persist-to", persistTo);
  args.push(...positionals);
  const crons = wranglerCrons();
  const child = spawnWrangler(args, ["ignore", "pipe", "pipe"]);
  // Started once wrangler is ready, stopped when it exits; a reload keeps the port, so it
  // goes on across one (a run that meets the server down fails and says so).
  let cron: CronRunner | undefined;
  // Until wrangler says it is ready, its output goes to the log (and the terminal with
  // --verbose); from then on to both, but wrangler's request lines, which only the log keeps.
  let early: string | undefined = "";
  const partial = new Map<NodeJS.WriteStream, string>();
  const relay = (data: Buffer, out: NodeJS.WriteStream) => {
    log.write(data);
    if (verbose && early !== undefined) out.write(data);
    if (early === undefined) {
      const lines = `${partial.get(out) ?? ""}${data.toString("utf8")}`.split("\n");
      partial.set(out, lines.pop()!);
      for (const line of lines) {
        const shown = shownLine(line);
        if (shown !== undefined) out.write(`${shown}\n`);
      }
      return;
    }
    early += data.toString("utf8");
    if (/Ready on/.test(early)) {
      early = undefined;
      recordLocalApi(`http://127.0.0.1:${port}`);
      console.log(welcome(port, crons, performance.now()));
      cron = startCronRunner(`http://127.0.0.1:${port}`, { crons });
    }
  };
  child.stdout?.on("data", (d: Buffer) => relay(d, process.stdout));
  child.stderr?.on("data", (d: Buffer) => relay(d, process.stderr));
  child.on("exit", (code) => {
    cron?.stop();
    forgetLocalApi();
    if (early === undefined) return;
    const tail = verbose ? "" : `${early.trimEnd().split("\n").slice(-20).join("\n")}\n`;
    console.error(`${tail}wrangler dev stopped before it was ready (exit ${code}); its whole output: ${START_LOG}`);
  });
  const forward = (signal: NodeJS.Signals) => {
    if (child.exitCode === null && child.signalCode === null) child.kill(signal);
  };
  process.on("SIGINT", forward);
  process.on("SIGTERM", forward);
  return new Promise((resolve, reject) => {
    child.on("error", reject);
    child.on("exit", (code, signal) => {
      log.end();
      resolve(code ?? (signal === "SIGINT" ? 130 : signal === "SIGTERM" ? 143 : 1));
    });
  });
}

await runIfMain(import.meta.url, main);
