/**
 * Pieces of the hub benchmark (scripts/bench-hub.ts): a local dev server with a throw-away
 * state, the webhook receiver thread, the API client and small statistics.
 */
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { Worker } from "node:worker_threads";
import { ensureDocsAssets } from "../docs-assets";
import { applyMigrations, BENCH_ENTRY, DIRECTORY_BINDING, wranglerEnv } from "./wrangler";

const KEY = "sk_test_bench_hub";
export const SCHOOL = "sch_bench_hub";

/** A school of a benchmark's state: its id and the API key (plain) that authenticates as it. */
export interface BenchSchool {
  id: string;
  key: string;
}

/** The school every benchmark has (SCHOOL, with the key `api` sends by default). */
export const BENCH_SCHOOL: BenchSchool = { id: SCHOOL, key: KEY };
const root = path.resolve(import.meta.dirname, "..", "..");
const wranglerBin = path.join(root, "node_modules", ".bin", "wrangler");

/** A free TCP port on 127.0.0.1. */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const { port } = server.address() as AddressInfo;
  await new Promise((r) => server.close(r));
  return port;
}

function wranglerSync(args: string[]): void {
  const out = spawnSync(wranglerBin, args, { cwd: root, encoding: "utf8", env: wranglerEnv({ CI: "1" }) });
  if (out.status !== 0) throw new Error(`wrangler ${args.join(" ")} failed:\n${out.stdout}\n${out.stderr}`);
}

/** CPU seconds (user + system) used so far by `pid` and each descendant, as `name[pid]` (Linux /proc). */
export function treeCpu(pid: number): Map<string, number> {
  const tick = 100;
  const procs = new Map<number, { ppid: number; cpu: number; name: string }>();
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      const name = stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")"));
      const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      procs.set(Number(entry), { ppid: Number(f[1]), cpu: (Number(f[11]) + Number(f[12])) / tick, name });
    } catch {
      /* gone */
    }
  }
  const out = new Map<string, number>();
  const visit = (p: number) => {
    const info = procs.get(p);
    if (info) out.set(`${info.name}[${p}]`, info.cpu);
    for (const [child, c] of procs) if (c.ppid === p) visit(child);
  };
  visit(pid);
  return out;
}
export const cpuDelta = (a: Map<string, number>, b: Map<string, number>) =>
  [...b].map(([name, t]) => `${name} ${(t - (a.get(name) ?? 0)).toFixed(2)} s`).join(", ");

const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
export type Summary = { n: number; p50: number; p99: number; max: number };
export const summary = (xs: number[]): Summary => {
  const s = [...xs].sort((a, b) => a - b);
  return { n: s.length, p50: percentile(s, 50), p99: percentile(s, 99), max: s[s.length - 1]! };
};
export const fmt = (x: Summary) => `n=${x.n} p50=${x.p50.toFixed(1)} ms p99=${x.p99.toFixed(1)} ms max=${x.max.toFixed(1)} ms`;

/** Absolute ms, comparable between threads. */
export const now = () => performance.timeOrigin + performance.now();
export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
export const loadAverage = () => readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" ");

/**
 * The receiver thread (own event loop, so it does not delay the benchmark's client): an HTTP
 * server on 127.0.0.1. Each path answers 204 at once, after `delayMs`, or never (`hang`:
 * the request stays open until the sender gives up); while the incident is on
 * (`{ incident: true }`) a path with `failRate` answers 503 to that share of requests (a
 * PRNG seeded with `seed`); a path with `refuseCourse` answers 422 to every event of that
 * course id. It counts deliveries per group of paths (`notices`: `webhook.failing`
 * and `webhook.recovered` ones; `ok`: the others answered 2xx) and distinct (path, webhook-id)
 * pairs, verifies every 50th signature, records arrivals (with the event's `createdAt`, id,
 * type, course id and name, and the status answered) while tracking is on, and reports
 * every 20 ms.
 */
const RECEIVER_THREAD = `
const { parentPort } = require("node:worker_threads");
const http = require("node:http");
const { Webhook } = require("standardwebhooks");
const now = () => performance.timeOrigin + performance.now();
const paths = new Map();
const ids = new Set();
const groups = {};
let count = 0, verified = 0, bad = 0, reported = -1, track = false, arrivals = [], incident = false;
// While holding, answers wait (each its delay counted from the release): the queues fill behind them.
let holding = false, held = [];
// mulberry32: a seeded PRNG, so that a run and its control see the same failures.
const prng = (seed) => () => {
  seed = (seed + 0x6d2b79f5) | 0;
  let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
};
parentPort.on("message", (m) => {
  if (m.path) paths.set(m.path, { ...paths.get(m.path), ...m, ...(m.seed !== undefined ? { rng: prng(m.seed) } : {}) });
  if (m.track !== undefined) track = m.track;
  if (m.incident !== undefined) incident = m.incident;
  if (m.dump) { parentPort.postMessage({ arrivals }); arrivals = []; }
  if (m.hold !== undefined) {
    holding = m.hold;
    if (!holding) { for (const answer of held) answer(); held = []; }
  }
});
const server = http.createServer((req, res) => {
  const chunks = [];
  req.on("data", (c) => chunks.push(c));
  req.on("end", () => {
    const at = now();
    const p = paths.get(req.url) ?? {};
    const g = (groups[p.group ?? "other"] ??= { count: 0, firstAt: 0, lastAt: 0, notices: 0, ok: 0 });
    g.count += 1;
    if (g.count === 1) g.firstAt = at;
    g.lastAt = at;
    count += 1;
    ids.add(req.url + " " + req.headers["webhook-id"]);
    const body = Buffer.concat(chunks).toString("utf8");
    let event = {};
    try { event = JSON.parse(body); } catch {}
    const notice = event.type === "webhook.failing" || event.type === "webhook.recovered";
    if (notice) g.notices += 1;
    const course = event.data?.course?.id;
    const status = p.hang ? 0 : incident && p.failRate && p.rng() < p.failRate ? 503 : p.refuseCourse && course === p.refuseCourse ? 422 : 204;
    if (status === 204 && !notice) g.ok += 1;
    if (track) {
      arrivals.push([p.group ?? "other", at, Date.parse(event.createdAt), { path: req.url, id: event.id, type: event.type, course, name: event.data?.course?.name, status }]);
    }
    if (p.secret && count % 50 === 0) {
      try { new Webhook(p.secret).verify(body, req.headers); verified += 1; } catch { bad += 1; }
    }
    if (p.hang) return;
    const answer = () => (p.delayMs ? setTimeout(() => res.writeHead(status).end(), p.delayMs) : res.writeHead(status).end());
    if (holding) held.push(answer);
    else answer();
  });
});
// Idle connections stay open: Node's 5 s default closes them between a benchmark's bursts,
// and a sender reusing one at that moment sees "Network connection lost", a failed attempt.
server.keepAliveTimeout = 600000;
server.headersTimeout = 601000;
server.listen(0, "127.0.0.1", () => parentPort.postMessage({ port: server.address().port }));
setInterval(() => {
  if (count === reported) return;
  reported = count;
  parentPort.postMessage({ count, distinct: ids.size, verified, bad, groups });
}, 20);
`;

type Group = { count: number; firstAt: number; lastAt: number; notices: number; ok: number };
/** What a tracked arrival carried and was answered: the path, the event's id, type, course id and name, the status (0: none). */
interface ArrivalInfo {
  path: string;
  id: string;
  type: string;
  course?: string;
  name?: string;
  status: number;
}
/** One tracked arrival: group, arrival instant, the event's `createdAt` (ms), what it carried. */
export type Arrival = [group: string, arrivedAt: number, createdAt: number, info: ArrivalInfo];

/** The main thread's view of the receiver thread. */
export class Receiver {
  count = 0;
  distinct = 0;
  verified = 0;
  bad = 0;
  groups: Record<string, Group> = {};
  private readonly thread = new Worker(RECEIVER_THREAD, { eval: true });
  private waiters: { ok: () => boolean; resolve: () => void }[] = [];
  private dumped: ((a: Arrival[]) => void) | null = null;

  listen(): Promise<number> {
    return new Promise((resolve) => {
      this.thread.on("message", (m: { port?: number; arrivals?: Arrival[] }) => {
        if (m.port !== undefined) return resolve(m.port);
        if (m.arrivals) return this.dumped?.(m.arrivals);
        Object.assign(this, m);
        const ready = this.waiters.filter((w) => w.ok());
        this.waiters = this.waiters.filter((w) => !ready.includes(w));
        for (const w of ready) w.resolve();
      });
    });
  }

  /**
   * Sets how `path` answers: its registration's secret, its group, a delay or a hang; during
   * the incident, 503 to a `failRate` share of requests (PRNG seeded with `seed`); always, 422
   * to every event of course `refuseCourse`.
   */
  path(
    path: string,
    how: { secret?: string; group?: string; delayMs?: number; hang?: boolean; failRate?: number; seed?: number; refuseCourse?: string },
  ): void {
    this.thread.postMessage({ path, ...how });
  }

  /** Turns the incident (`failRate`) on or off. */
  incident(on: boolean): void {
    this.thread.postMessage({ incident: on });
  }

  /** Holds every answer from now on (`true`), or answers the held ones, each after its delay, and stops holding. */
  hold(on: boolean): void {
    this.thread.postMessage({ hold: on });
  }

  /** Records arrivals (for lags) from now on, or stops. */
  track(on: boolean): void {
    this.thread.postMessage({ track: on });
  }

  /** The arrivals recorded since tracking started (and forgets them). */
  dump(): Promise<Arrival[]> {
    return new Promise((resolve) => {
      this.dumped = resolve;
      this.thread.postMessage({ dump: true });
    });
  }

  /** Resolves once `n` deliveries arrived (in `group`, if given). */
  reached(n: number, group?: string): Promise<void> {
    const ok = () => (group === undefined ? this.count : (this.groups[group]?.count ?? 0)) >= n;
    if (ok()) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push({ ok, resolve }));
  }

  close(): Promise<number> {
    return this.thread.terminate();
  }
}

/** A running dev server with a throw-away state, one school and its API key. */
export interface DevServer {
  base: string;
  pid: number;
  stop(): Promise<void>;
}

/**
 * The vars of the served Worker, whichever way it is started: receivers on 127.0.0.1 over
 * http, and no rate limit on the benchmark's own calls.
 */
export const SERVED_VARS = { WEBHOOK_ALLOW_INSECURE_URLS: "true", RATE_LIMIT_ENABLED: "false" };

/**
 * Makes `state` a local state directory with the D1 migrations applied (the directory and
 * every shard), the `schools` (default: the bench school, SCHOOL) on SHARD_0 with their keys;
 * builds the docs assets the Worker serves. Ids and keys are the script's own constants
 * (inlined in the SQL).
 *
 * @returns `state`.
 * @throws Error when a migration fails (with wrangler's output).
 */
export async function prepareState(state: string, schools: readonly BenchSchool[] = [BENCH_SCHOOL]): Promise<string> {
  ensureDocsAssets();
  await applyMigrations("local", state, { quiet: true });
  const execute = (binding: string, sql: string) => wranglerSync(["d1", "execute", binding, "--local", "--persist-to", state, "--command", sql]);
  execute(
    DIRECTORY_BINDING,
    schools
      .map(({ id, key }, i) => {
        const keyHash = createHash("sha256").update(key).digest("hex");
        const keyId = id === SCHOOL ? "key_bench" : `key_bench${i}`;
        return `INSERT INTO schools (id, name, shard) VALUES ('${id}', 'Bench ${i}', 'SHARD_0'); INSERT INTO api_keys (key_hash, school_id, created_at, id) VALUES ('${keyHash}', '${id}', 0, '${keyId}');`;
      })
      .join(" "),
  );
  execute("SHARD_0", schools.map(({ id }) => `INSERT INTO held_schools (school_id, state) VALUES ('${id}', 'active');`).join(" "));
  return state;
}

/**
 * Applies the D1 migrations to a fresh state directory, inserts the bench school, and starts
 * wrangler's dev server API without the devtools inspector (`serveSelf` re-runs the calling
 * script with `--serve`), or with `inspector: true` the `wrangler dev` CLI (which always
 * attaches it, and whose custom-build watcher may reload the Worker mid-run), with
 * `SERVED_VARS`. The Worker is the benchmark entry (src/bench/entry.ts: the
 * production Worker plus POST /__bench/publish), or `entry` (the simulated platform's,
 * scripts/bench-hub-worker.ts, which wraps it). `schools` as `prepareState`'s (the bench
 * school among them: the start-up check calls the API with its key).
 */
export async function startDevServer(opts: { inspector: boolean; entry?: string; serveSelf: string; schools?: readonly BenchSchool[] }): Promise<DevServer> {
  const state = await prepareState(mkdtempSync(path.join(tmpdir(), "bench-hub-")), opts.schools);
  console.log(`local state: ${state}`);
  const port = await freePort();
  const entry = opts.entry ?? BENCH_ENTRY;
  const args = [
    "dev",
    entry,
    "--ip",
    "127.0.0.1",
    "--port",
    String(port),
    "--persist-to",
    state,
    ...Object.entries(SERVED_VARS).flatMap(([name, value]) => ["--var", `${name}:${value}`]),
    "--show-interactive-dev-session=false",
    "--log-level",
    process.env.BENCH_LOG_LEVEL ?? "warn",
  ];
  const env = wranglerEnv({ BENCH_PORT: String(port), BENCH_STATE: state, BENCH_ENTRY: entry });
  let child: ChildProcess;
  if (!opts.inspector) {
    console.log(`wrangler's dev server (unstable_startWorker) without the devtools inspector, port ${port}, entry ${entry}`);
    child = spawn(process.execPath, [...process.execArgv, opts.serveSelf, "--serve"], {
      cwd: root,
      detached: true,
      stdio: ["ignore", "inherit", "inherit"],
      env,
    });
  } else {
    console.log(`wrangler ${args.join(" ")}`);
    child = spawn(wranglerBin, args, { cwd: root, detached: true, stdio: ["ignore", "inherit", "inherit"], env });
  }
  const base = `http://127.0.0.1:${port}`;
  const stop = async () => {
    try {
      process.kill(-child.pid!, "SIGTERM");
      // The dev server shares our stdout: make sure it is gone, or a reader never sees EOF.
      await sleep(3000);
      process.kill(-child.pid!, "SIGKILL");
    } catch {
      /* already gone */
    }
    rmSync(state, { recursive: true, force: true });
  };
  for (let i = 0; ; i++) {
    try {
      if ((await api(base, "/v3/webhooks")).status === 200) break;
    } catch {
      /* not listening yet */
    }
    if (i > 600) {
      await stop();
      throw new Error("the dev server did not start within 60 s");
    }
    await sleep(100);
  }
  return { base, pid: child.pid!, stop };
}

/**
 * `--serve`: the dev server of `wrangler dev` started through wrangler's API with the devtools
 * inspector off (the CLI always attaches it, and it relays every request and subrequest as
 * devtools Network events through an extra workerd and Node). Same config, vars and state.
 */
export async function serve(): Promise<void> {
  const { unstable_startWorker } = await import("wrangler");
  // No custom build: its file watcher reloads the Worker once its first scan of src/ ends,
  // which on a loaded machine lands in the middle of a run ("Your worker restarted
  // mid-request"). The only thing it builds, the docs assets, is ensured by the caller.
  const worker = await unstable_startWorker({
    config: path.join(root, "wrangler.toml"),
    build: { custom: { command: "" } },
    entrypoint: path.join(root, process.env.BENCH_ENTRY ?? BENCH_ENTRY),
    bindings: {
      ...Object.fromEntries(Object.entries(SERVED_VARS).map(([name, value]) => [name, { type: "plain_text" as const, value }])),
      BENCH_FLOOR: { type: "plain_text", value: "true" },
      ...(process.env.BENCH_TIMEOUT_MS ? { WEBHOOK_TIMEOUT_MS: { type: "plain_text" as const, value: process.env.BENCH_TIMEOUT_MS } } : {}),
    },
    dev: {
      inspector: false,
      persist: process.env.BENCH_STATE!,
      server: { hostname: "127.0.0.1", port: Number(process.env.BENCH_PORT) },
      logLevel: (process.env.BENCH_LOG_LEVEL ?? "warn") as "warn",
      watch: false,
    },
  });
  await worker.ready;
  process.on("SIGTERM", () => void worker.dispose().finally(() => process.exit(0)));
}

/** A request to the API with the bench key (or `key`, another school's). */
export function api(base: string, p: string, init: RequestInit = {}, key = KEY): Promise<Response> {
  return fetch(`${base}${p}`, { ...init, headers: { authorization: `Bearer ${key}`, "content-type": "application/json", ...init.headers } });
}

/**
 * Creates a registration (of the bench school, or of the school of `opts.key`), with
 * `opts.maxPerSecond` and `opts.ordering` if given; returns its id and secret.
 */
export async function createHook(
  base: string,
  url: string,
  events?: string[],
  opts: { key?: string; maxPerSecond?: number; ordering?: "course" | "none" } = {},
): Promise<{ id: string; secret: string }> {
  const body = JSON.stringify({
    url,
    events,
    ...(opts.maxPerSecond === undefined ? {} : { maxPerSecond: opts.maxPerSecond }),
    ...(opts.ordering === undefined ? {} : { ordering: opts.ordering }),
  });
  const res = await api(base, "/v3/webhooks", { method: "POST", body }, opts.key);
  if (res.status !== 201) throw new Error(`create: ${res.status} ${await res.text()}`);
  return ((await res.json()) as { result: { id: string; secret: string } }).result;
}

/** Deletes a registration; returns the client-observed ms and the Worker's `total` from Server-Timing. */
export async function timedDelete(base: string, id: string): Promise<{ ms: number; serverMs: number }> {
  const t0 = performance.now();
  const res = await api(base, `/v3/webhooks/${id}`, { method: "DELETE" });
  const ms = performance.now() - t0;
  if (res.status !== 200) throw new Error(`delete: ${res.status} ${await res.text()}`);
  const total = /total;dur=([\d.]+)/.exec(res.headers.get("server-timing") ?? "");
  await res.arrayBuffer();
  return { ms, serverMs: total ? Number(total[1]) : NaN };
}

/**
 * Create + DELETE cycles, one every `everyMs`, until `stop()` is true or `max` are done;
 * only the DELETE is timed. The registrations subscribe to an event type the benchmark never
 * publishes, so they add no deliveries (and their couriers are never used).
 */
export async function deleteLoop(base: string, url: string, stop: () => boolean, max: number, everyMs: number) {
  const client: number[] = [];
  const server: number[] = [];
  const errors: string[] = [];
  while (!stop() && client.length < max && errors.length < 10) {
    const slot = performance.now() + everyMs;
    try {
      const extra = await createHook(base, url, ["course.archived"]);
      if (stop()) break;
      const { ms, serverMs } = await timedDelete(base, extra.id);
      client.push(ms);
      server.push(serverMs);
    } catch (err) {
      errors.push(String(err));
    }
    const wait = slot - performance.now();
    if (wait > 0) await sleep(wait);
  }
  if (errors.length > 0) console.log(`delete loop: ${errors.length} failed cycles, first: ${errors[0]}`);
  return { client, server };
}

/** Requests that met a Worker restarted mid-request (and were sent again). */
export const restarts = { count: 0 };

/**
 * Publishes `count` synthetic events (POST /__bench/publish, batches of `batch`, `parallel`
 * requests at once) to the bench school's hub, or to that of the school of `key`;
 * `onAccepted` hears each answer's count of events accepted as it arrives.
 *
 * @returns how many events the hub acknowledged as accepted (answers received).
 * @throws Error on an answer other than 200 (after one resend of a restarted request).
 */
export async function publish(
  base: string,
  count: number,
  batch: number,
  parallel: number,
  type = "course.updated",
  key = KEY,
  onAccepted: (n: number) => void = () => {},
): Promise<number> {
  let next = 0;
  let accepted = 0;
  const worker = async () => {
    while (next < count) {
      const n = Math.min(batch, count - next);
      next += n;
      let res = await api(base, "/__bench/publish", { method: "POST", body: JSON.stringify({ count: n, type }) }, key);
      // The dev server may restart the Worker mid-request (the CLI's custom-build watcher; a
      // crash of the local runtime under heavy load): send again (the first try may have been
      // accepted: a few events then arrive twice), and count it (the run says so).
      if (res.status === 503 && /restarted mid-request/.test(await res.clone().text())) {
        restarts.count += 1;
        res = await api(base, "/__bench/publish", { method: "POST", body: JSON.stringify({ count: n, type }) }, key);
      }
      if (res.status !== 200) throw new Error(`publish: ${res.status} ${await res.text()}`);
      const { result } = (await res.json()) as { result: { accepted: number } };
      accepted += result.accepted;
      onAccepted(result.accepted);
    }
  };
  await Promise.all(Array.from({ length: parallel }, worker));
  return accepted;
}
