/**
 * Delivery statistics (docs/reference.md § "Delivery statistics: GET /v3/webhooks/{id}/stats"): the log
 * of one registration counted per hour or per day, as one grouped SQL statement on its
 * courier's storage, served by the covering index `log_time` (time, status) and, for
 * deliveries not attempted yet, by the partial index `queue_unattempted` (queued time).
 * Each bucket's delay and duration percentiles come from the hourly histograms (latency.ts).
 * test/webhooks/stats.test.ts checks the plan and the counts against the log.
 */

import { RETENTION_MS } from "../../lib/limits";
import type { StatsBucket } from "../api/stats-schemas";
import { emptyBuckets, STATS_BUCKET_MS, type StatsBucketSize } from "../rpc";
import { readLatency } from "./latency";

/**
 * The grouped statement: ?2 the first bucket's start, ?3 the window's end
 * (exclusive), ?4 the bucket width, ?5 the first instant counted (inclusive: the window's
 * start, or the retention's if later), all ms. One row per bucket that holds anything, `k`
 * its index from the first. The hub's SQL binds JS numbers as doubles, so the division is a
 * floating one and CAST truncates it: right because ?5 ≥ ?2 keeps it non-negative.
 */
export const STATS_SQL = `SELECT CAST((at - ?2) / ?4 AS INTEGER) AS k,
       sum(s = 'succeeded') AS succeeded, sum(s = 'failed') AS failed,
       sum(s = 'queued') AS pending, sum(s = 'skipped') AS skipped
  FROM (
    SELECT attempted_at AS at, status AS s FROM log
     WHERE attempted_at >= ?5 AND attempted_at < ?3
    UNION ALL
    SELECT created_at, 'queued' FROM queue
     WHERE attempts = 0 AND created_at >= ?5 AND created_at < ?3
  )
 GROUP BY k ORDER BY k`;

type Row = { k: number; succeeded: number; failed: number; pending: number; skipped: number };

/**
 * The buckets of the registration over [since, until) (ms, `since < until`), oldest first, every
 * bucket that overlaps the window included, empty ones as zeros (and `null` percentiles).
 * Entries older than the retention at `now` (ms) are not counted, as in the log.
 */
export function readStats(sql: SqlStorage, since: number, until: number, size: StatsBucketSize, now: number): StatsBucket[] {
  const { first, buckets } = emptyBuckets(since, until, size);
  const from = Math.max(since, now - RETENTION_MS);
  const width = STATS_BUCKET_MS[size];
  for (const { k, ...counts } of sql.exec<Row>(STATS_SQL, null, first, until, width, from)) {
    const bucket = buckets[k];
    if (bucket) Object.assign(bucket, counts);
  }
  readLatency(sql, first, width, from, until).forEach((latency, k) => {
    const bucket = buckets[k];
    if (bucket) Object.assign(bucket, latency);
  });
  return buckets;
}
