/**
 * Delivery latency (docs/reference.md § "Delivery statistics", docs/architecture.md § "Delivery
 * latency"): each succeeded attempt adds its delay (from the event's acceptance by the hub to
 * the receiver's 2xx status line) and its duration to log-scale histograms kept per UTC hour
 * in the courier's table `latency`, in the step that logs it; the statistics read p50, p95
 * and p99 from them. Relative error ≤ LATENCY_ERROR (5 %), plus the rounding to whole ms.
 */

/** The histogram's relative error bound (DDSketch's α): every reported value is within 5 % of the true one, before rounding. */
const LATENCY_ERROR = 0.05;
/** The ratio of consecutive bucket bounds: (1 + α) / (1 − α). */
const GAMMA = (1 + LATENCY_ERROR) / (1 - LATENCY_ERROR);
const LOG_GAMMA = Math.log(GAMMA);
/** Histograms are kept per UTC hour, the statistics' smallest bucket (ms). */
export const LATENCY_HOUR_MS = 3_600_000;

/** The two histograms: delay since acceptance, and the attempt's own duration. */
type LatencyKind = "delay" | "duration";

/**
 * The histogram key of `ms`: 0 holds 0 (and a negative delay, clocks apart); key k ≥ 1 holds
 * (γ^(k−2), γ^(k−1)]. Whole milliseconds up to 2^53 take fewer than 380 keys: a histogram
 * has at most that many rows, whatever the traffic.
 */
export function latencyKey(ms: number): number {
  return ms <= 0 ? 0 : 1 + Math.max(0, Math.ceil(Math.log(ms) / LOG_GAMMA));
}

/** The value key `k` stands for: the one within α of every value of its bucket (2γ^(k−1) / (γ + 1)). */
export function latencyValue(key: number): number {
  return key === 0 ? 0 : (2 * GAMMA ** (key - 1)) / (GAMMA + 1);
}

/**
 * Adds one succeeded attempt sent at `sentAt` (ms: its hour's histograms) with `delayMs` (`null`:
 * not counted, a resend) and `durationMs` (`null`: unknown) to the histograms. Inside the
 * caller's synchronous step, with the attempt's log row.
 */
export function recordLatency(sql: SqlStorage, sentAt: number, delayMs: number | null, durationMs: number | null): void {
  const hour = Math.floor(sentAt / LATENCY_HOUR_MS) * LATENCY_HOUR_MS;
  for (const [kind, ms] of [
    ["delay", delayMs],
    ["duration", durationMs],
  ] as const) {
    if (ms === null) continue;
    sql.exec(`INSERT INTO latency (hour, kind, key, n) VALUES (?, ?, ?, 1) ON CONFLICT (hour, kind, key) DO UPDATE SET n = n + 1`, hour, kind, latencyKey(ms));
  }
}

/** p50, p95 and p99 of a histogram, in whole ms; `null` when it is empty. */
export type Percentiles = { p50: number; p95: number; p99: number } | null;

/**
 * The statement of `readLatency` (exported for its plan test): ?1 the first hour, ?2 the
 * window's end (exclusive), ms. Walks the primary key in its order: no sort.
 */
export const LATENCY_SQL = `SELECT hour, kind, key, n FROM latency WHERE hour >= ?1 AND hour < ?2 ORDER BY hour, kind, key`;

/**
 * The percentiles of every stats bucket of `width` ms from `first` (aligned on it) up to
 * `until` (ms, exclusive): each bucket merges the histograms of its hours that overlap
 * [from, until) — whole hours: the first and last may reach outside the window. The q-th
 * percentile is the nearest-rank one (the ⌈q·n⌉-th smallest value), reported as its key's
 * value rounded to the ms. Reads at most 2 histograms per hour of the window (each under
 * 380 rows), in key order.
 */
export function readLatency(sql: SqlStorage, first: number, width: number, from: number, until: number): { delayMs: Percentiles; durationMs: Percentiles }[] {
  const counts: { delay: Map<number, number>; duration: Map<number, number> }[] = [];
  const fromHour = Math.floor(from / LATENCY_HOUR_MS) * LATENCY_HOUR_MS;
  for (const r of sql.exec<{ hour: number; kind: LatencyKind; key: number; n: number }>(LATENCY_SQL, Math.max(first, fromHour), until)) {
    const k = Math.floor((r.hour - first) / width);
    counts[k] ??= { delay: new Map(), duration: new Map() };
    const map = counts[k][r.kind];
    map.set(r.key, (map.get(r.key) ?? 0) + r.n);
  }
  const count = Math.max(0, Math.ceil((until - first) / width));
  return Array.from({ length: count }, (_, k) => ({ delayMs: percentiles(counts[k]?.delay), durationMs: percentiles(counts[k]?.duration) }));
}

/** p50, p95, p99 of a histogram (key → count), nearest rank. */
function percentiles(histogram: Map<number, number> | undefined): Percentiles {
  if (histogram === undefined || histogram.size === 0) return null;
  const keys = [...histogram.keys()].sort((a, b) => a - b);
  const total = keys.reduce((n, key) => n + histogram.get(key)!, 0);
  const at = (q: number) => {
    const rank = Math.max(1, Math.ceil(q * total));
    let seen = 0;
    for (const key of keys) {
      seen += histogram.get(key)!;
      if (seen >= rank) return Math.round(latencyValue(key));
    }
    return Math.round(latencyValue(keys.at(-1)!));
  };
  return { p50: at(0.5), p95: at(0.95), p99: at(0.99) };
}
