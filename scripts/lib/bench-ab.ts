/**
 * The sessions-and-rate-limit A/B of `npm run bench` (alone: `npm run bench -- --ab-only`): a
 * few reads of the mix served as deployed (A: D1 sessions, bookmarks, rate limiter on),
 * without those steps (B), with the sessions only (S) and as A with the limiter's counters in
 * the isolate (M), interleaved request by request on one connection, so that drift of this
 * shared machine touches all four alike. The variants: src/bench/ab-variants.ts; figures and
 * section: scripts/lib/bench-ab-report.ts.
 *
 * Served by Miniflare directly (scripts/lib/miniflare-server.ts), with the binding's limit
 * raised and without `wrangler dev`'s proxy; why, and what A pays locally that it would not
 * deployed: bench/NOTES.md.
 */
import { DEMO_API_KEY } from "../dataset/build";
import { type AbCounts, type AbQueryResult, type AbTimings, quantile } from "./bench-ab-report";
import { startMiniflare } from "./miniflare-server";
import { BENCH_ENTRY } from "./wrangler";

/** The mix's queries the A/B runs (by name, scripts/bench.ts): the floor, no filter, one indexed filter, all four includes. */
const AB_MIX_NAMES = ["floor (SELECT 1)", "no filter", "trainingId", "all four includes, limit=100"];

/** A limit the A/B never reaches (per 60 s; the binding's `simple.limit`). */
const AB_QUOTA = 1_000_000_000;

/** Rounds before the timed ones (isolate, JIT and D1's page cache warm). */
const WARM_UP = 20;
/** Requests per variant with the counts asked for (not timed). */
const COUNTED = 5;

/** A request of an A/B (GET unless `method` says otherwise). */
export interface AbQuery {
  name: string;
  path: string;
  method?: "GET" | "POST";
  /** JSON body of a POST. */
  body?: unknown;
}

/**
 * The A/B's queries: `AB_MIX_NAMES` picked from the mix, and GET one course by id.
 *
 * @throws Error when the mix lacks one of the names (renamed in scripts/bench.ts).
 */
export function abQueries(mixQueries: { name: string; method: string; path: string }[], courseId: string): AbQuery[] {
  const picked = AB_MIX_NAMES.map((name) => {
    const q = mixQueries.find((m) => m.name === name && m.method === "GET");
    if (!q) throw new Error(`the A/B's query "${name}" is not in the mix (scripts/bench.ts)`);
    return { name: q.name, path: q.path };
  });
  return [...picked.slice(0, 2), { name: "GET one course by id", path: `/v3/courses/${courseId}` }, ...picked.slice(2)];
}

type Variant = "a" | "m" | "s" | "b";

/** Orders of the four variants taken in turn (the rotations, forwards and backwards), so that none is always first or always after the same one. */
const ORDERS: Variant[][] = [
  ["a", "m", "s", "b"],
  ["m", "s", "b", "a"],
  ["s", "b", "a", "m"],
  ["b", "a", "m", "s"],
  ["b", "s", "m", "a"],
  ["a", "b", "s", "m"],
  ["m", "a", "b", "s"],
  ["s", "m", "a", "b"],
];

async function send(base: string, q: AbQuery, variant: string, counted: boolean) {
  const t0 = performance.now();
  const res = await fetch(`${base}${q.path}`, {
    method: q.method ?? "GET",
    headers: {
      authorization: `Bearer ${DEMO_API_KEY}`,
      "x-bench-variant": variant,
      ...(counted ? { "x-bench-count": "1" } : {}),
      ...(q.body === undefined ? {} : { "content-type": "application/json" }),
    },
    body: q.body === undefined ? undefined : JSON.stringify(q.body),
  });
  const body = await res.arrayBuffer();
  const ms = performance.now() - t0;
  if (res.status !== 200) throw new Error(`A/B ${q.name} (${variant.toUpperCase()}): ${res.status} ${new TextDecoder().decode(body).slice(0, 300)}`);
  const timing = res.headers.get("server-timing") ?? "";
  return {
    ms,
    total: Number(/total;dur=([\d.]+)/.exec(timing)?.[1] ?? NaN),
    trips: Number(/D1 round trips: (\d+)/.exec(timing)?.[1] ?? NaN),
    d1Calls: Number(res.headers.get("x-bench-d1-calls") ?? NaN),
    rateLimitCalls: Number(res.headers.get("x-bench-ratelimit-calls") ?? NaN),
    bookmark: res.headers.has("x-d1-bookmark"),
    policy: res.headers.has("ratelimit-policy"),
  };
}

async function counts(base: string, q: AbQuery, variant: string): Promise<AbCounts> {
  const seen = [];
  for (let i = 0; i < COUNTED; i++) seen.push(await send(base, q, variant, true));
  const distinct = (xs: number[]) => [...new Set(xs)].sort((x, y) => x - y);
  return {
    d1Calls: distinct(seen.map((s) => s.d1Calls)),
    roundTrips: distinct(seen.map((s) => s.trips)),
    rateLimitCalls: distinct(seen.map((s) => s.rateLimitCalls)),
    bookmark: seen.every((s) => s.bookmark),
    policy: seen.every((s) => s.policy),
  };
}

/**
 * One query's variants interleaved: warm-up, counts, then `rounds` timed rounds of one request
 * per variant, back to back, in the orders of `orders` in turn (each order lists every variant).
 *
 * @returns each variant's timings and counts, and each round's latency per variant (ms).
 */
export async function interleave<V extends string>(
  base: string,
  q: AbQuery,
  orders: V[][],
  rounds: number,
): Promise<{ timings: Record<V, AbTimings>; perRound: Record<V, number>[] }> {
  for (let i = 0; i < WARM_UP; i++) for (const v of orders[i % orders.length]!) await send(base, q, v, false);
  const timings = {} as Record<V, AbTimings>;
  for (const v of orders[0]!) timings[v] = { latencies: [], serverTotals: [], counts: await counts(base, q, v) };
  const perRound: Record<V, number>[] = [];
  for (let i = 0; i < rounds; i++) {
    const ms = {} as Record<V, number>;
    for (const v of orders[i % orders.length]!) {
      const r = await send(base, q, v, false);
      timings[v].latencies.push(r.ms);
      timings[v].serverTotals.push(r.total);
      ms[v] = r.ms;
    }
    perRound.push(ms);
  }
  return { timings, perRound };
}

/** One query of the sessions-and-rate-limit A/B: its four variants interleaved (`interleave`), and A − B per round. */
async function measure(base: string, q: AbQuery, rounds: number): Promise<AbQueryResult> {
  const { timings, perRound } = await interleave<Variant>(base, q, ORDERS, rounds);
  return { name: q.name, request: `GET ${q.path}`, listing: q.path.startsWith("/v3/courses"), ...timings, pairedDeltas: perRound.map((ms) => ms.a - ms.b) };
}

/**
 * Serves the benchmark entry with Miniflare on `persistTo`'s database (rate limiter on, its
 * limit out of reach) and runs the A/B of each query in turn; stops the server.
 *
 * @param opts.port Miniflare's port (0: a free one).
 * @param opts.rounds timed rounds per query (one request of each variant: A, M, S, B).
 * @throws Error when a request does not answer 200 (a 429 means the limit was reached).
 */
export async function runAb(opts: { persistTo: string; port: number; queries: AbQuery[]; rounds: number; log: (s: string) => void }): Promise<AbQueryResult[]> {
  const mf = await startMiniflare({
    persistTo: opts.persistTo,
    entry: BENCH_ENTRY,
    vars: { WEBHOOK_ALLOW_INSECURE_URLS: "true", RATE_LIMIT_ENABLED: "true", RATE_LIMIT_QUOTA: String(AB_QUOTA) },
    ratelimits: { RATE_LIMITER: { namespace_id: "1001", simple: { limit: AB_QUOTA, period: 60 } } },
    port: opts.port,
  });
  opts.log(`A/B (sessions, rate limit) under Miniflare directly on ${mf.base}, ${opts.rounds} rounds per query`);
  const results: AbQueryResult[] = [];
  try {
    for (const q of opts.queries) {
      const r = await measure(mf.base, q, opts.rounds);
      results.push(r);
      const [pa, pm, ps, pb] = [r.a, r.m, r.s, r.b].map((v) => quantile(v.latencies, 0.5)) as [number, number, number, number];
      opts.log(
        `${q.name.padEnd(30)} p50 A ${pa.toFixed(2)}  M ${pm.toFixed(2)}  S ${ps.toFixed(2)}  B ${pb.toFixed(2)} ms  Δ ${(pa - pb).toFixed(2)} ms | D1 calls A ${r.a.counts.d1Calls.join("/")} B ${r.b.counts.d1Calls.join("/")} | limit() A ${r.a.counts.rateLimitCalls.join("/")} B ${r.b.counts.rateLimitCalls.join("/")}`,
      );
    }
  } finally {
    await mf.stop();
  }
  return results;
}
