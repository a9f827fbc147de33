/**
 * Event hub benchmark (issue 3, "Performance"): `npm run bench:hub`.
 *
 * 1. Starts `wrangler dev` with the benchmark entry (src/bench.ts: the Worker plus POST
 *    /__bench/publish) on 127.0.0.1 with a throw-away local state directory and the var
 *    `WEBHOOK_ALLOW_INSECURE_URLS:true` (http://127.0.0.1 targets), after applying the D1
 *    migrations and inserting one school with an API key.
 * 2. Starts a Node HTTP receiver on 127.0.0.1 that answers 204 at once, counts deliveries
 *    and verifies a sample of signatures with the `standardwebhooks` package.
 * 3. Creates 5 registrations, publishes 1,000 `course.updated` events (batches through
 *    POST /__bench/publish, a few requests in parallel) and measures deliveries per second
 *    end to end: from the first publish request to the 5,000th delivery received.
 * 4. While that dispatch runs, creates and deletes an extra registration every 25 ms and
 *    records each DELETE's latency (client-observed, and the Worker's `total` from
 *    `Server-Timing`); then the same with the hub idle, for comparison.
 *
 * `BENCH_INSPECTOR=off` serves the same Worker through wrangler's `unstable_startWorker` with
 * the devtools inspector off, to separate the hub's cost from the CLI's devtools relay.
 *
 * Options (env): BENCH_EVENTS (1000), BENCH_HOOKS (5), BENCH_BATCH (events per publish
 * request, 50), BENCH_PARALLEL (publish requests in flight, 2), BENCH_DELETE_EVERY_MS (25).
 * Targets: ≥ 1,000 deliveries/s; DELETE p99 < 20 ms while dispatching.
 */
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { createHash } from "node:crypto";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { Worker } from "node:worker_threads";
import { BENCH_ENTRY, wranglerEnv } from "./lib/wrangler";

const EVENTS = Number(process.env.BENCH_EVENTS ?? 1000);
const HOOKS = Number(process.env.BENCH_HOOKS ?? 5);
const BATCH = Number(process.env.BENCH_BATCH ?? 50);
const PARALLEL = Number(process.env.BENCH_PARALLEL ?? 2);
const DELETE_EVERY_MS = Number(process.env.BENCH_DELETE_EVERY_MS ?? 25);
/** `BENCH_INSPECTOR=off`: serve with wrangler's API and no devtools inspector (see `serve`). */
const NO_INSPECTOR = process.env.BENCH_INSPECTOR === "off";
const KEY = "sk_test_bench_hub";
const SCHOOL = "sch_bench_hub";
const root = path.resolve(import.meta.dirname, "..");
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
function treeCpu(pid: number): Map<string, number> {
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
const cpuDelta = (a: Map<string, number>, b: Map<string, number>) =>
  [...b].map(([name, t]) => `${name} ${(t - (a.get(name) ?? 0)).toFixed(2)} s`).join(", ");

const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
const summary = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return { n: s.length, p50: percentile(s, 50), p99: percentile(s, 99), max: s[s.length - 1]! };
};
const fmt = (x: { n: number; p50: number; p99: number; max: number }) =>
  `n=${x.n} p50=${x.p50.toFixed(1)} ms p99=${x.p99.toFixed(1)} ms max=${x.max.toFixed(1)} ms`;

/** Absolute ms, comparable between threads. */
const now = () => performance.timeOrigin + performance.now();

/**
 * The receiver thread (own event loop, so it does not delay the benchmark's client): an HTTP
 * server on 127.0.0.1 that answers 204 at once, counts deliveries and distinct
 * (path, webhook-id) pairs, verifies every 50th signature, and reports every 20 ms.
 */
const RECEIVER_THREAD = `
const { parentPort } = require("node:worker_threads");
const http = require("node:http");
const { Webhook } = require("standardwebhooks");
const now = () => performance.timeOrigin + performance.now();
const secrets = new Map();
const ids = new Set();
let count = 0, firstAt = 0, lastAt = 0, verified = 0, bad = 0, reported = -1;
parentPort.on("message", (m) => secrets.set(m.path, m.secret));
const server = http.createServer((req, res) => {
  const chunks = [];
  req.on("data", (c) => chunks.push(c));
  req.on("end", () => {
    res.writeHead(204).end();
    count += 1;
    lastAt = now();
    if (count === 1) firstAt = lastAt;
    ids.add(req.url + " " + req.headers["webhook-id"]);
    const secret = secrets.get(req.url);
    if (secret && count % 50 === 0) {
      try { new Webhook(secret).verify(Buffer.concat(chunks).toString("utf8"), req.headers); verified += 1; }
      catch { bad += 1; }
    }
  });
});
server.listen(0, "127.0.0.1", () => parentPort.postMessage({ port: server.address().port }));
setInterval(() => {
  if (count === reported) return;
  reported = count;
  parentPort.postMessage({ count, firstAt, lastAt, distinct: ids.size, verified, bad });
}, 20);
`;

/** The main thread's view of the receiver thread. */
class Receiver {
  count = 0;
  firstAt = 0;
  lastAt = 0;
  distinct = 0;
  verified = 0;
  badSignatures = 0;
  private readonly thread = new Worker(RECEIVER_THREAD, { eval: true });
  private waiters: { n: number; resolve: () => void }[] = [];

  listen(): Promise<number> {
    return new Promise((resolve) => {
      this.thread.on("message", (m: { port?: number; count?: number }) => {
        if (m.port !== undefined) return resolve(m.port);
        Object.assign(this, m);
        this.waiters = this.waiters.filter((w) => (this.count >= w.n ? (w.resolve(), false) : true));
      });
    });
  }

  /** Tells the receiver the secret of the registration that posts to `path`. */
  secret(path: string, secret: string): void {
    this.thread.postMessage({ path, secret });
  }

  reached(n: number): Promise<void> {
    if (this.count >= n) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push({ n, resolve }));
  }

  close(): Promise<number> {
    return this.thread.terminate();
  }
}

async function main(): Promise<void> {
  const state = mkdtempSync(path.join(tmpdir(), "bench-hub-"));
  let wrangler: ChildProcess | undefined;
  const receiver = new Receiver();
  try {
    console.log(`local state: ${state}`);
    wranglerSync(["d1", "migrations", "apply", "DB", "--local", "--persist-to", state]);
    const keyHash = createHash("sha256").update(KEY).digest("hex");
    wranglerSync([
      "d1", "execute", "DB", "--local", "--persist-to", state, "--command",
      `INSERT INTO schools (id, name) VALUES ('${SCHOOL}', 'Bench'); INSERT INTO api_keys (key_hash, school_id, created_at) VALUES ('${keyHash}', '${SCHOOL}', 0);`,
    ]);

    const receiverPort = await receiver.listen();
    const apiPort = await freePort();
    const base = `http://127.0.0.1:${apiPort}`;
    const args = [
      "dev", BENCH_ENTRY, "--ip", "127.0.0.1", "--port", String(apiPort), "--persist-to", state,
      "--var", "WEBHOOK_ALLOW_INSECURE_URLS:true", "--var", "RATE_LIMIT_ENABLED:false",
      "--show-interactive-dev-session=false", "--log-level", "warn",
    ];
    const childEnv = wranglerEnv({ BENCH_PORT: String(apiPort), BENCH_STATE: state });
    if (NO_INSPECTOR) {
      console.log(`wrangler's dev server (unstable_startWorker) without the devtools inspector, port ${apiPort}`);
      wrangler = spawn(process.execPath, [...process.execArgv, import.meta.filename, "--serve"], { cwd: root, detached: true, stdio: ["ignore", "inherit", "inherit"], env: childEnv });
    } else {
      console.log(`wrangler ${args.join(" ")}`);
      wrangler = spawn(wranglerBin, args, { cwd: root, detached: true, stdio: ["ignore", "inherit", "inherit"], env: childEnv });
    }

    const api = (p: string, init: RequestInit = {}) =>
      fetch(`${base}${p}`, { ...init, headers: { authorization: `Bearer ${KEY}`, "content-type": "application/json", ...init.headers } });
    for (let i = 0; ; i++) {
      try {
        if ((await api("/v3/webhooks")).status === 200) break;
      } catch {
        /* not listening yet */
      }
      if (i > 600) throw new Error("wrangler dev did not start within 60 s");
      await new Promise((r) => setTimeout(r, 100));
    }

    const create = async (url: string, events?: string[]) => {
      const res = await api("/v3/webhooks", { method: "POST", body: JSON.stringify({ url, events }) });
      if (res.status !== 201) throw new Error(`create: ${res.status} ${await res.text()}`);
      return ((await res.json()) as { result: { id: string; secret: string } }).result;
    };
    const timedDelete = async (id: string) => {
      const t0 = performance.now();
      const res = await api(`/v3/webhooks/${id}`, { method: "DELETE" });
      const ms = performance.now() - t0;
      if (res.status !== 200) throw new Error(`delete: ${res.status} ${await res.text()}`);
      const total = /total;dur=([\d.]+)/.exec(res.headers.get("server-timing") ?? "");
      await res.arrayBuffer();
      return { ms, serverMs: total ? Number(total[1]) : NaN };
    };
    /**
     * Create + DELETE cycles, one every `everyMs`, until `stop()` is true or `max` are done;
     * only the DELETE is timed. Extra registrations subscribe to an event type the benchmark
     * never publishes, so they add no deliveries.
     */
    const deleteLoop = async (stop: () => boolean, max: number, everyMs: number) => {
      const client: number[] = [];
      const server: number[] = [];
      while (!stop() && client.length < max) {
        const slot = performance.now() + everyMs;
        const extra = await create(`http://127.0.0.1:${receiverPort}/extra`, ["course.archived"]);
        if (stop()) break;
        const { ms, serverMs } = await timedDelete(extra.id);
        client.push(ms);
        server.push(serverMs);
        const wait = slot - performance.now();
        if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      }
      return { client, server };
    };

    // Warm-up: the hub's first instance, the code paths, the connections.
    await deleteLoop(() => false, 20, 0);

    for (let i = 0; i < HOOKS; i++) {
      const hook = await create(`http://127.0.0.1:${receiverPort}/r/${i}`);
      receiver.secret(`/r/${i}`, hook.secret);
    }
    const expected = EVENTS * HOOKS;
    console.log(`publishing ${EVENTS} events to ${HOOKS} registrations (${expected} deliveries), batches of ${BATCH}, ${PARALLEL} in parallel`);

    const cpuBefore = treeCpu(wrangler.pid!);
    const selfBefore = process.cpuUsage();
    const t0 = now();
    let publishedAt = 0;
    const publish = (async () => {
      let next = 0;
      const worker = async () => {
        while (next < EVENTS) {
          const count = Math.min(BATCH, EVENTS - next);
          next += count;
          const res = await api("/__bench/publish", { method: "POST", body: JSON.stringify({ count }) });
          if (res.status !== 200) throw new Error(`publish: ${res.status} ${await res.text()}`);
          await res.arrayBuffer();
        }
      };
      await Promise.all(Array.from({ length: PARALLEL }, worker));
      publishedAt = now();
    })();
    let dispatching = true;
    const done = receiver.reached(expected).then(() => (dispatching = false));
    // DELETEs start once deliveries flow, and stop when the last one arrived.
    const busy = receiver.reached(1).then(() => deleteLoop(() => !dispatching, Infinity, DELETE_EVERY_MS));
    await Promise.race([Promise.all([publish, done]), new Promise((_, reject) => setTimeout(() => reject(new Error(`only ${receiver.count}/${expected} deliveries after 120 s`)), 120_000))]);
    const elapsed = (receiver.lastAt - t0) / 1000;
    const dispatchElapsed = (receiver.lastAt - receiver.firstAt) / 1000;
    const underLoad = await busy;
    const cpuWrangler = cpuDelta(cpuBefore, treeCpu(wrangler.pid!));
    const self = process.cpuUsage(selfBefore);
    const idle = await deleteLoop(() => false, 100, DELETE_EVERY_MS);

    const rate = expected / elapsed;
    const busyClient = summary(underLoad.client);
    const busyServer = summary(underLoad.server);
    console.log("");
    console.log(`deliveries:            ${receiver.count} received (${receiver.distinct} distinct), expected ${expected}`);
    console.log(`signatures:            ${receiver.verified} sampled and verified, ${receiver.badSignatures} bad`);
    console.log(`publish:               ${EVENTS} events in ${((publishedAt - t0) / 1000).toFixed(2)} s`);
    console.log(`end to end:            ${elapsed.toFixed(2)} s → ${rate.toFixed(0)} deliveries/s, first publish to last delivery (target ≥ 1000)`);
    console.log(`dispatch:              ${dispatchElapsed.toFixed(2)} s → ${(expected / dispatchElapsed).toFixed(0)} deliveries/s, first to last delivery`);
    console.log(`DELETE while dispatching, client:              ${fmt(busyClient)} (target p99 < 20 ms)`);
    console.log(`DELETE while dispatching, Server-Timing total: ${fmt(busyServer)}`);
    console.log(`DELETE idle hub, client:                       ${fmt(summary(idle.client))}`);
    console.log(`DELETE idle hub, Server-Timing total:          ${fmt(summary(idle.server))}`);
    console.log(`CPU during the run:    wrangler tree: ${cpuWrangler}; bench + receiver: ${((self.user + self.system) / 1e6).toFixed(2)} s`);
    console.log(`machine:               load average ${readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" ")}`);
    const ok = rate >= 1000 && busyClient.p99 < 20 && receiver.badSignatures === 0 && busyClient.n >= 20;
    if (busyClient.n < 20) console.log("(fewer than 20 DELETEs while dispatching: raise BENCH_EVENTS for a meaningful p99)");
    console.log(ok ? "PASS" : "FAIL");
    process.exitCode = ok ? 0 : 1;
  } finally {
    await receiver.close();
    if (wrangler?.pid) {
      const group = -wrangler.pid;
      try {
        process.kill(group, "SIGTERM");
        // The dev server shares our stdout: make sure it is gone, or a reader never sees EOF.
        await new Promise((r) => setTimeout(r, 3000));
        process.kill(group, "SIGKILL");
      } catch {
        /* already gone */
      }
    }
    rmSync(state, { recursive: true, force: true });
  }
}

/**
 * `--serve`: the dev server of `wrangler dev` started through wrangler's API with the devtools
 * inspector off (the CLI always attaches it, and it relays every request and subrequest as
 * devtools Network events through an extra workerd and Node). Same config, vars and state.
 */
async function serve(): Promise<void> {
  const { unstable_startWorker } = await import("wrangler");
  const worker = await unstable_startWorker({
    config: path.join(root, "wrangler.toml"),
    entrypoint: path.join(root, BENCH_ENTRY),
    bindings: {
      WEBHOOK_ALLOW_INSECURE_URLS: { type: "plain_text", value: "true" },
      RATE_LIMIT_ENABLED: { type: "plain_text", value: "false" },
    },
    dev: {
      inspector: false,
      persist: process.env.BENCH_STATE!,
      server: { hostname: "127.0.0.1", port: Number(process.env.BENCH_PORT) },
      logLevel: "warn",
      watch: false,
    },
  });
  await worker.ready;
  process.on("SIGTERM", () => void worker.dispose().finally(() => process.exit(0)));
}

(process.argv.includes("--serve") ? serve() : main().then(() => process.exit(process.exitCode ?? 0))).catch((err) => {
  console.error(err);
  process.exit(1);
});
