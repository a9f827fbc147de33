/**
 * The figures and the bench/RESULTS.md section of the sessions-and-rate-limit A/B (scripts/lib/bench-ab.ts):
 * pure functions, no I/O, so that the verdict and the section's place in the file are tested
 * (test/http/bench-ab.test.ts).
 *
 * Target: the bookmark and rate-limit steps add no D1 round trip
 * (1 per read in A) and move a listing's p50 by no more than 1 ms (A − B ≤ 1 ms).
 */

/** The largest p50 difference A − B the target allows (ms). */
const AB_TARGET_DELTA_MS = 1;

/** The markers around the section in bench/RESULTS.md (it is rewritten between them). */
export const AB_SECTION_START = "<!-- bench:ab -->";
export const AB_SECTION_END = "<!-- /bench:ab -->";

/** What one variant's counted requests showed (every request alike, else several values). */
export interface AbCounts {
  /** D1 calls per request, counted at the binding by the benchmark entry (distinct values seen). */
  d1Calls: number[];
  /** D1 round trips per request from `Server-Timing` (the Worker's own count; distinct values seen). */
  roundTrips: number[];
  /** `RATE_LIMITER.limit()` calls per request (distinct values seen). */
  rateLimitCalls: number[];
  /** Whether the responses carried `x-d1-bookmark`, `RateLimit-Policy`. */
  bookmark: boolean;
  policy: boolean;
}

/** One variant's timings of a query: client-side latency and the Worker's `Server-Timing` total (ms). */
export interface AbTimings {
  latencies: number[];
  serverTotals: number[];
  counts: AbCounts;
}

/** One query of the A/B. */
export interface AbQueryResult {
  name: string;
  /** `GET <path>` */
  request: string;
  /** Whether the query reads courses (the target applies to those; the floor is the reference). */
  listing: boolean;
  a: AbTimings;
  /** A with the rate limiter's counters in the isolate, as on Cloudflare (src/bench/ab-variants.ts). */
  m: AbTimings;
  /** The sessions of A without its rate limiter. */
  s: AbTimings;
  b: AbTimings;
  /** Per round (A, M, S and B sent back to back), A − B (ms). */
  pairedDeltas: number[];
}

/** The p-quantile (0–1) of `xs` by nearest rank; NaN for none. */
export function quantile(xs: number[], p: number): number {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((x, y) => x - y);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil(p * s.length) - 1))]!;
}

/** The figures of one query: p50 of A, M, S and B, their differences, A / B, the median paired difference (ms). */
function abFigures(q: AbQueryResult) {
  const p50A = quantile(q.a.latencies, 0.5);
  const p50M = quantile(q.m.latencies, 0.5);
  const p50S = quantile(q.s.latencies, 0.5);
  const p50B = quantile(q.b.latencies, 0.5);
  return {
    p50A,
    p50M,
    p50S,
    p50B,
    /** What the rate limiter costs (A − S; M − S with its counters in the isolate) and the sessions (S − B), p50s (ms). */
    limiter: p50A - p50S,
    isolateLimiter: p50M - p50S,
    sessions: p50S - p50B,
    /** M − B: both steps with the limiter as Cloudflare runs it (ms). */
    deployedDelta: p50M - p50B,
    p90A: quantile(q.a.latencies, 0.9),
    p90B: quantile(q.b.latencies, 0.9),
    delta: p50A - p50B,
    ratio: p50A / p50B,
    pairedDelta: quantile(q.pairedDeltas, 0.5),
    serverA: quantile(q.a.serverTotals, 0.5),
    serverB: quantile(q.b.serverTotals, 0.5),
  };
}

/** The figures and counts of each query, for bench/results.json (the samples themselves left out). */
export function abSummary(results: AbQueryResult[]) {
  return results.map((q) => ({
    name: q.name,
    request: q.request,
    listing: q.listing,
    rounds: q.pairedDeltas.length,
    figures: abFigures(q),
    counts: { a: q.a.counts, m: q.m.counts, s: q.s.counts, b: q.b.counts },
  }));
}

const oneEach = (xs: number[]) => xs.length === 1 && xs[0] === 1;

/**
 * The verdict over the course reads: the p50 of A within `AB_TARGET_DELTA_MS` of B's, and
 * one D1 round trip (`Server-Timing`) per request in A (two calls at the bindings: the directory's check and the shard's page, sent together).
 */
export function abVerdict(results: AbQueryResult[]): {
  latencyMet: boolean;
  tripsMet: boolean;
  met: boolean;
  worst: number;
  /** The same over M − B (the limiter's counters in the isolate, as on Cloudflare). */
  deployedMet: boolean;
  deployedWorst: number;
} {
  const reads = results.filter((q) => q.listing).map(abFigures);
  const deltas = reads.map((f) => f.delta);
  const deployed = reads.map((f) => f.deployedDelta);
  const latencyMet = deltas.every((d) => d <= AB_TARGET_DELTA_MS);
  const tripsMet = results.every((q) => oneEach(q.a.counts.roundTrips));
  return {
    latencyMet,
    tripsMet,
    met: latencyMet && tripsMet,
    worst: Math.max(...deltas),
    deployedMet: deployed.every((d) => d <= AB_TARGET_DELTA_MS),
    deployedWorst: Math.max(...deployed),
  };
}

const fmt = (n: number, d = 1) => (Number.isFinite(n) ? n.toFixed(d) : "—");
const signed = (n: number, d = 1) => (Number.isFinite(n) ? `${n > 0 ? "+" : ""}${n.toFixed(d)}` : "—");
const values = (xs: number[]) => (xs.length ? xs.join("/") : "—");

/** What the section says about the run (its setting, stated above the table). */
export interface AbRunInfo {
  date: string;
  cpus: number;
  /** 1-minute load average when the A/B started and ended. */
  load: [number, number];
  courses: number;
  rounds: number;
  /** Where A and B were served (e.g. "Miniflare directly"). */
  server: string;
  /** The command of the run (`npm run bench`, or with `--ab-only`). */
  command: string;
}

/**
 * The section of bench/RESULTS.md, markers included: the setting, one table row per query
 * (A, B, difference, ratio, counts), the target and whether the run met it.
 */
export function abSection(results: AbQueryResult[], info: AbRunInfo): string[] {
  const v = abVerdict(results);
  const lines = [
    AB_SECTION_START,
    "## Sessions and rate limit, A/B",
    "",
    `Run with \`${info.command}\` on ${info.date.slice(0, 10)}: ${info.cpus} CPUs, load average ${fmt(info.load[0], 2)} at the start and ${fmt(info.load[1], 2)} at the end; ${info.courses.toLocaleString("en")} courses in \`sch_demo\`; ${info.server}, 1 connection.`,
    "",
    `**A** is the Worker as deployed: each course read in a D1 session (\`withSession("first-unconstrained")\`, \`x-d1-bookmark\` on the response) and the rate limiter on (\`RATE_LIMIT_ENABLED=true\`, the binding's limit raised so that it never trips). **B** is the same Worker, same isolate, without those steps: each D1 binding's \`withSession()\` hands back the binding itself (no bookmark) and \`RATE_LIMIT_ENABLED=false\` (src/bench/ab-variants.ts, chosen per request by the benchmark entry). **S** is A's sessions without its rate limiter, to tell the two steps' costs apart; **M** is A with the limiter's counters in the isolate (\`isolateLimiter\`), as Cloudflare runs it: locally each \`limit()\` is a call to a Durable Object of miniflare's, while on Cloudflare “the underlying counters are cached on the same machine that your Worker runs in” and \`limit()\` waits on no network request ([Workers docs, Rate Limiting § Performance](https://developers.cloudflare.com/workers/runtime-apis/bindings/rate-limit/#performance)). Each query: ${info.rounds} rounds of sequential requests, one of each variant back to back, the order rotating, after a warm-up. Δ p50 = p50 A − p50 B (= limiter + sessions); paired Δ = median over the rounds of A − B; limiter = p50 A − p50 S (M − S in the isolate); sessions = p50 S − p50 B; M − B = both steps with the limiter as deployed. Counts (per request, \`x-bench-count\`): D1 calls counted at the binding, D1 round trips from \`Server-Timing\`, calls to \`RATE_LIMITER.limit()\`.`,
    "",
    "| query | p50 A ms | p50 B ms | Δ p50 ms | A / B | paired Δ ms | p50 M ms | p50 S ms | limiter ms | limiter in isolate ms | sessions ms | M − B ms | p90 A ms | p90 B ms | Worker total A ms | Worker total B ms | D1 calls A / B | round trips A / B | limit() calls A / B | bookmark A / B |",
    "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
  ];
  for (const q of results) {
    const f = abFigures(q);
    const yes = (b: boolean) => (b ? "yes" : "no");
    lines.push(
      `| ${q.name} | ${fmt(f.p50A, 2)} | ${fmt(f.p50B, 2)} | ${signed(f.delta, 2)} | ${fmt(f.ratio, 3)} | ${signed(f.pairedDelta, 2)} | ${fmt(f.p50M, 2)} | ${fmt(f.p50S, 2)} | ${signed(f.limiter, 2)} | ${signed(f.isolateLimiter, 2)} | ${signed(f.sessions, 2)} | ${signed(f.deployedDelta, 2)} | ${fmt(f.p90A, 2)} | ${fmt(f.p90B, 2)} | ${fmt(f.serverA)} | ${fmt(f.serverB)} | ${values(q.a.counts.d1Calls)} / ${values(q.b.counts.d1Calls)} | ${values(q.a.counts.roundTrips)} / ${values(q.b.counts.roundTrips)} | ${values(q.a.counts.rateLimitCalls)} / ${values(q.b.counts.rateLimitCalls)} | ${yes(q.a.counts.bookmark)} / ${yes(q.b.counts.bookmark)} |`,
    );
  }
  const reads = results.filter((q) => q.listing).length;
  lines.push(
    "",
    `Target: every read 1 D1 round trip in A — ${v.tripsMet ? "**met**" : "**NOT met**"}; the p50 of a course read moves by ≤ ${AB_TARGET_DELTA_MS} ms (A − B over ${reads} reads, largest ${signed(v.worst, 2)} ms) — ${v.latencyMet ? "**met**" : "**NOT met**"} here; with the limiter's counters in the isolate as deployed (M − B, largest ${signed(v.deployedWorst, 2)} ms) — ${v.deployedMet ? "**met**" : "**NOT met**"}.`,
    AB_SECTION_END,
  );
  return lines;
}

/**
 * `markdown` with its A/B section replaced by `section` (markers included); without one, the
 * section goes before the first hub section, else before "## Reading these numbers", else at
 * the end. The rest of the file is kept as it is.
 */
export function replaceAbSection(markdown: string, section: string[]): string {
  return replaceSection(markdown, section, AB_SECTION_START, AB_SECTION_END);
}

/** `markdown` with the section between `startMarker` and `endMarker` replaced by `section`, placed as `replaceAbSection` says when absent. */
export function replaceSection(markdown: string, section: string[], startMarker: string, endMarker: string): string {
  const lines = markdown.split("\n");
  const start = lines.indexOf(startMarker);
  const end = lines.indexOf(endMarker);
  if (start !== -1 && end > start) return [...lines.slice(0, start), ...section, ...lines.slice(end + 1)].join("\n");
  let at = lines.findIndex((l) => l.startsWith("## Hub"));
  if (at === -1) at = lines.indexOf("## Reading these numbers");
  if (at === -1) return `${markdown.replace(/\n*$/, "\n\n")}${section.join("\n")}\n`;
  return [...lines.slice(0, at), ...section, "", ...lines.slice(at)].join("\n");
}
