/**
 * The shards' cost on a course read (`npm run bench`, docs/operations.md § Capacity): the
 * listing mix served by the Worker under Miniflare in two layouts of the same data, side by
 * side in one run — the directory and the school's shard as two D1 databases (wrangler.toml),
 * and as one (the directory's tables and rows copied into the shard's database, every D1
 * binding pointed at it) — each request's latency and its D1 round trips, requests of the two
 * layouts interleaved; and each layout's cold isolate's first request, reported apart.
 */
import { cpSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import autocannon from "autocannon";
import { moveSchool } from "../../src/db/move";
import { startD1ApiStub } from "./d1-api-stub";
import { openRemoteD1 } from "./d1-http";
import { openLocalD1 } from "./d1-local";
import { type MiniflareServer, startMiniflare } from "./miniflare-server";
import { BENCH_ENTRY, DIRECTORY_BINDING, d1DatabaseIdsOfConfig, directoryAndShards, ROOT } from "./wrangler";

/** One request of the mix. */
export interface ShardBenchQuery {
  name: string;
  method: string;
  path: string;
  body?: unknown;
}

/** One query's figures in both layouts: p50 latency (ms) and the D1 round trips seen. */
interface ShardBenchResult {
  name: string;
  twoP50: number;
  oneP50: number;
  /** twoP50 / oneP50. */
  ratio: number;
  twoTrips: number[];
  oneTrips: number[];
}

/** Figures of a run: per query, the whole mix, and the first request of a cold isolate of each layout (ms, round trips). */
export interface ShardBench {
  results: ShardBenchResult[];
  /** Every warm request of the mix pooled per layout: p50 (ms) of each and their ratio (two / one). */
  mix: { twoP50: number; oneP50: number; ratio: number };
  cold: { two: { ms: number; trips: number }; one: { ms: number; trips: number } };
  /** The school's shard: its courses, its size (D1's `size_after`, bytes) and bytes per course. */
  shard: { binding: string; courses: number; bytes: number; bytesPerCourse: number };
  /** What the shard's primary served at 16 connections for `seconds`: listing requests/s (one batch each) and course creations/s. */
  load: { seconds: number; readsPerSecond: number; writesPerSecond: number };
  /** The school moved to another shard over the D1 HTTP API's stand-in: requests sent, seconds, rows copied. */
  move: { to: string; requests: number; seconds: number; rows: number };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)] ?? Number.NaN;

/**
 * A copy of the state in `persistTo` where `shard` (the bench school's) also holds the
 * directory's tables and rows: the one-database layout. @returns its directory and the bindings' ids.
 */
async function oneDatabaseCopy(persistTo: string, shard: string): Promise<{ dir: string; ids: Record<string, string> }> {
  const dir = `${persistTo}-one-database`;
  rmSync(dir, { recursive: true, force: true });
  cpSync(persistTo, dir, { recursive: true });
  const local = await openLocalD1(dir);
  try {
    const directory = local.databases[DIRECTORY_BINDING]!;
    const target = local.databases[shard]!;
    const folder = path.join(ROOT, "migrations", "directory");
    for (const f of readdirSync(folder)
      .filter((n) => n.endsWith(".sql"))
      .sort()) {
      for (const q of readFileSync(path.join(folder, f), "utf8").split("--> statement-breakpoint")) if (q.trim()) await target.prepare(q).run();
    }
    for (const table of ["schools", "api_keys"]) {
      const { results } = await directory.prepare(`SELECT * FROM ${table}`).all<Record<string, unknown>>();
      for (const row of results) {
        const cols = Object.keys(row);
        await target
          .prepare(`INSERT INTO ${table} (${cols.join(", ")}) VALUES (${cols.map(() => "?").join(", ")})`)
          .bind(...cols.map((c) => row[c]))
          .run();
      }
    }
    const ids = await d1DatabaseIdsOfConfig("local");
    return { dir, ids: Object.fromEntries(Object.keys(ids).map((b) => [b, b === DIRECTORY_BINDING ? ids[shard]! : ids[b]!])) };
  } finally {
    await local.dispose();
  }
}

/**
 * Sends this process's first `fetch` to a throw-away server: Node loads and compiles its
 * HTTP client then, which would otherwise count in whichever cold request is timed first.
 */
async function warmClient(): Promise<void> {
  const server = createServer((_req, res) => res.end("ok"));
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  try {
    await (await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/`)).text();
  } finally {
    server.close();
  }
}

/** One request: its latency (ms, client side) and its D1 round trips (`Server-Timing`). */
async function timed(base: string, q: ShardBenchQuery, apiKey: string): Promise<{ ms: number; trips: number }> {
  const t0 = performance.now();
  const res = await fetch(`${base}${q.path}`, {
    method: q.method,
    headers: { authorization: `Bearer ${apiKey}`, ...(q.body ? { "content-type": "application/json" } : {}) },
    body: q.body ? JSON.stringify(q.body) : undefined,
  });
  await res.arrayBuffer();
  const ms = performance.now() - t0;
  if (res.status !== 200) throw new Error(`${q.name}: ${res.status}`);
  return { ms, trips: Number(/D1 round trips: (\d+)/.exec(res.headers.get("server-timing") ?? "")?.[1] ?? Number.NaN) };
}

/** The shard of `schoolId` in `persistTo`: its courses and its size as D1 reports it. */
async function shardSize(persistTo: string, schoolId: string): Promise<ShardBench["shard"]> {
  const local = await openLocalD1(persistTo);
  try {
    const { shard } = (await local.databases.DIRECTORY!.prepare("SELECT shard FROM schools WHERE id = ?").bind(schoolId).first<{ shard: string }>())!;
    const r = await local.databases[shard]!.prepare("SELECT count(*) AS n FROM courses").all<{ n: number }>();
    const courses = r.results[0]!.n;
    const bytes = Number((r.meta as { size_after?: number }).size_after ?? Number.NaN);
    return { binding: shard, courses, bytes, bytesPerCourse: bytes / courses };
  } finally {
    await local.dispose();
  }
}

/** Requests/s that `base` serves for `q` at 16 connections over `seconds`. */
async function throughput(base: string, q: ShardBenchQuery, apiKey: string, seconds: number): Promise<number> {
  const result = await autocannon({
    url: `${base}${q.path}`,
    method: q.method as "GET" | "POST",
    connections: 16,
    duration: seconds,
    headers: { authorization: `Bearer ${apiKey}`, ...(q.body ? { "content-type": "application/json" } : {}) },
    body: q.body ? JSON.stringify(q.body) : undefined,
  });
  if (result.non2xx > 0 || result.errors > 0) throw new Error(`${q.name}: ${result.non2xx} non-2xx, ${result.errors} errors under load`);
  return result.requests.average;
}

/**
 * Runs the comparison on the imported state in `persistTo` (left unchanged): `rounds`
 * requests of each query per layout, alternating, after 10 of warm-up.
 */
export async function runShardBench(opts: {
  persistTo: string;
  queries: ShardBenchQuery[];
  apiKey: string;
  schoolId: string;
  rounds: number;
  log: (s: string) => void;
}): Promise<ShardBench> {
  const shard = await shardSize(opts.persistTo, opts.schoolId);
  const one = await oneDatabaseCopy(opts.persistTo, shard.binding);
  const vars = { RATE_LIMIT_ENABLED: "false" };
  let two: MiniflareServer | undefined;
  let single: MiniflareServer | undefined;
  let measured: Omit<ShardBench, "move">;
  try {
    two = await startMiniflare({ persistTo: opts.persistTo, entry: BENCH_ENTRY, vars });
    single = await startMiniflare({ persistTo: one.dir, entry: BENCH_ENTRY, vars, d1Databases: one.ids });
    const first = opts.queries[0]!;
    await warmClient();
    const cold = { two: await timed(two.base, first, opts.apiKey), one: await timed(single.base, first, opts.apiKey) };
    const results: ShardBenchResult[] = [];
    const pooled = { two: [] as number[], one: [] as number[] };
    for (const q of opts.queries) {
      for (let i = 0; i < 10; i++) {
        await timed(two.base, q, opts.apiKey);
        await timed(single.base, q, opts.apiKey);
      }
      const a: { ms: number; trips: number }[] = [];
      const b: { ms: number; trips: number }[] = [];
      for (let i = 0; i < opts.rounds; i++) {
        if (i % 2 === 0) {
          a.push(await timed(two.base, q, opts.apiKey));
          b.push(await timed(single.base, q, opts.apiKey));
        } else {
          b.push(await timed(single.base, q, opts.apiKey));
          a.push(await timed(two.base, q, opts.apiKey));
        }
      }
      const r: ShardBenchResult = {
        name: q.name,
        twoP50: median(a.map((x) => x.ms)),
        oneP50: median(b.map((x) => x.ms)),
        ratio: median(a.map((x) => x.ms)) / median(b.map((x) => x.ms)),
        twoTrips: [...new Set(a.map((x) => x.trips))],
        oneTrips: [...new Set(b.map((x) => x.trips))],
      };
      opts.log(
        `shards: ${q.name.padEnd(30)} two shards p50 ${r.twoP50.toFixed(2)} ms, one database ${r.oneP50.toFixed(2)} ms (×${r.ratio.toFixed(3)}), round trips ${r.twoTrips.join("/")} vs ${r.oneTrips.join("/")}`,
      );
      results.push(r);
      pooled.two.push(...a.map((x) => x.ms));
      pooled.one.push(...b.map((x) => x.ms));
    }
    const mix = { twoP50: median(pooled.two), oneP50: median(pooled.one), ratio: median(pooled.two) / median(pooled.one) };
    opts.log(
      `shards: the mix                          two shards p50 ${mix.twoP50.toFixed(2)} ms, one database ${mix.oneP50.toFixed(2)} ms (×${mix.ratio.toFixed(3)})`,
    );
    // Load on the shard's primary: the mix's listings in turn, then course creations (the copy
    // of the state is the one-database layout's, so its data is left as imported).
    const seconds = 5;
    const reads: number[] = [];
    for (const q of opts.queries) reads.push(await throughput(two.base, q, opts.apiKey, seconds));
    const write = {
      name: "create",
      method: "POST",
      path: "/v3/courses",
      body: { name: "Charge", startDateTime: "2026-10-01T08:00:00Z", endDateTime: "2026-10-01T10:00:00Z" },
    };
    const writesPerSecond = await throughput(single.base, write, opts.apiKey, seconds);
    const load = { seconds, readsPerSecond: median(reads), writesPerSecond };
    opts.log(
      `shards: ${shard.binding} ${shard.courses} courses, ${shard.bytes} bytes (${shard.bytesPerCourse.toFixed(0)} per course); ${load.readsPerSecond.toFixed(0)} listings/s, ${writesPerSecond.toFixed(0)} creations/s`,
    );
    measured = { results, mix, cold, shard, load };
  } finally {
    await two?.stop();
    await single?.stop();
    rmSync(one.dir, { recursive: true, force: true });
  }
  // Last, as it changes the state: the served layouts are stopped and the school as imported.
  const move = await remoteMove(opts.persistTo, opts.schoolId, shard.binding);
  opts.log(
    `shards: moved ${opts.schoolId} to ${move.to} over the D1 HTTP API's stand-in: ${move.requests} requests, ${move.seconds.toFixed(0)} s, ${move.rows} rows`,
  );
  return { ...measured, move };
}

/**
 * Moves `schoolId` from `from` to the next shard with `npm run shards -- move --remote`'s
 * driver (scripts/lib/d1-http.ts) against the stand-in of the D1 HTTP API over `persistTo`,
 * counting the requests a remote move sends.
 */
async function remoteMove(persistTo: string, schoolId: string, from: string): Promise<ShardBench["move"]> {
  const stub = await startD1ApiStub(persistTo);
  try {
    const { databases } = await openRemoteD1({ baseUrl: stub.baseUrl, accountId: stub.accountId, token: stub.token });
    const dbs = directoryAndShards(databases);
    const names = Object.keys(dbs.shards);
    const to = names[(names.indexOf(from) + 1) % names.length]!;
    const t0 = performance.now();
    const r = await moveSchool(dbs, schoolId, to);
    return { to, requests: stub.requests.length, seconds: (performance.now() - t0) / 1000, rows: Object.values(r.rows).reduce((a, b) => a + b, 0) };
  } finally {
    await stub.close();
  }
}

/** The p50 ratio the shards may cost a warm read (docs/operations.md § Capacity). */
const SHARD_TARGET_RATIO = 1.05;

/** The section of bench/RESULTS.md (markdown lines). */
export function shardSection(b: ShardBench, info: { courses: number; rounds: number; date: string; cpus: number }): string[] {
  const worst = Math.max(...b.results.map((r) => r.ratio));
  const within = b.results.filter((r) => r.ratio <= SHARD_TARGET_RATIO).length;
  const oneTrip = b.results.every((r) => r.twoTrips.length === 1 && r.twoTrips[0] === 1);
  return [
    SHARD_SECTION_START,
    "## Two shards beside one database",
    "",
    `${info.date}, ${info.cpus} CPUs, ${info.courses.toLocaleString("en")} courses, ${info.rounds} requests per query and layout, interleaved, after a warm-up; the Worker under Miniflare (scripts/lib/bench-shards.ts). **Two shards**: the directory and the school's shard are two D1 databases (wrangler.toml). **One database**: the directory's tables and rows copied into the shard's database and every D1 binding pointed at it. Latency measured by the client; round trips from \`Server-Timing\`.`,
    "",
    "| query | p50 two shards ms | p50 one database ms | ratio | round trips two / one |",
    "|---|---|---|---|---|",
    ...b.results.map(
      (r) => `| ${r.name} | ${r.twoP50.toFixed(2)} | ${r.oneP50.toFixed(2)} | ${r.ratio.toFixed(3)} | ${r.twoTrips.join("/")} / ${r.oneTrips.join("/")} |`,
    ),
    "",
    `Cold isolate, first request (${b.results[0]?.name ?? "—"}; the isolate does not know the key's shard yet, so the directory's check comes first): two shards ${b.cold.two.ms.toFixed(1)} ms in ${b.cold.two.trips} round trips, one database ${b.cold.one.ms.toFixed(1)} ms in ${b.cold.one.trips}.`,
    "",
    `The school's shard (${b.shard.binding}): ${b.shard.courses.toLocaleString("en")} courses in ${b.shard.bytes.toLocaleString("en")} bytes (D1's \`size_after\`), **${Math.round(b.shard.bytesPerCourse).toLocaleString("en")} bytes per course** with its relation rows, people and indexes. At 16 connections for ${b.load.seconds} s each, one shard's primary served **${Math.round(b.load.readsPerSecond).toLocaleString("en")} listings/s** (median over the mix; one batch each) and **${Math.round(b.load.writesPerSecond).toLocaleString("en")} course creations/s** (one directory read, one reference check, one batch each).`,
    "",
    `A move of the school to ${b.move.to} by \`npm run shards -- move --remote\`'s driver, against the stand-in of the D1 HTTP API over this state (scripts/lib/d1-api-stub.ts): **${b.move.requests.toLocaleString("en")} requests** for ${b.move.rows.toLocaleString("en")} rows, ${b.move.seconds.toFixed(0)} s here; Cloudflare's API allows 1,200 requests per 5 minutes per user.`,
    "",
    `The whole mix (every warm request above, pooled per layout): two shards p50 ${b.mix.twoP50.toFixed(2)} ms, one database ${b.mix.oneP50.toFixed(2)} ms, **×${b.mix.ratio.toFixed(3)}**. Per query, ${within} of ${b.results.length} within ×${SHARD_TARGET_RATIO} (largest ×${worst.toFixed(3)}; one query's p50 moves a few % between runs).`,
    "",
    `Target: the listing mix's warm p50 within ×${SHARD_TARGET_RATIO} of one database — ${b.mix.ratio <= SHARD_TARGET_RATIO ? "**met**" : "**NOT met**"}; one round trip each on a warm isolate — ${oneTrip ? "**met**" : "**NOT met**"}.`,
    SHARD_SECTION_END,
  ];
}

/** The markers of the section in bench/RESULTS.md. */
export const SHARD_SECTION_START = "<!-- bench:shards -->";
export const SHARD_SECTION_END = "<!-- /bench:shards -->";
