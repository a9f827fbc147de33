/**
 * Delivery statistics (API.md § "Delivery statistics: GET /v3/webhooks/{id}/stats"): the log
 * of one registration counted per hour or per day, as one grouped SQL statement on the hub's
 * storage, served by the covering index `attempts_by_webhook_status` (webhook, time, status;
 * schema.ts) and, for deliveries not attempted yet, by the partial index
 * `deliveries_unattempted` (webhook, queued time).
 * test/webhooks-stats.test.ts checks the plan and the counts against the log.
 */
import { formatInstant } from "../lib/time";
import { LOG_RETENTION_MS } from "./schema";
import type { StatsBucket } from "./stats-schemas";

/** Bucket widths, in ms. Buckets are aligned on UTC hours or UTC days. */
const STATS_BUCKET_MS = { hour: 3_600_000, day: 86_400_000 } as const;

/** A bucket width of the query: `hour` (the default) or `day`. */
export type StatsBucketSize = keyof typeof STATS_BUCKET_MS;

/** The longest window one call may ask for, in ms: the log's 7-day retention. */
export const STATS_MAX_WINDOW_MS = LOG_RETENTION_MS;

/** The window when the query gives none, in ms: the last 24 hours. */
export const STATS_DEFAULT_WINDOW_MS = 24 * 3_600_000;

/**
 * The grouped statement: ?1 webhook id, ?2 the first bucket's start, ?3 the window's end
 * (exclusive), ?4 the bucket width, ?5 the first instant counted (inclusive: the window's
 * start, or the retention's if later), all ms. One row per bucket that holds anything, `k`
 * its index from the first. The hub's SQL binds JS numbers as doubles, so the division is a
 * floating one and CAST truncates it: right because ?5 ≥ ?2 keeps it non-negative.
 */
export const STATS_SQL = `SELECT CAST((at - ?2) / ?4 AS INTEGER) AS k,
       sum(s = 'succeeded') AS succeeded, sum(s IN ('failed', 'pending')) AS failed,
       sum(s = 'queued') AS pending, sum(s = 'skipped') AS skipped
  FROM (
    SELECT attempted_at AS at, status AS s FROM attempts
     WHERE webhook_id = ?1 AND attempted_at >= ?5 AND attempted_at < ?3
    UNION ALL
    SELECT d.created_at, 'queued' FROM deliveries d JOIN events e ON e.id = d.event_id
     WHERE d.webhook_id = ?1 AND d.attempts = 0 AND d.created_at >= ?5 AND d.created_at < ?3
  )
 GROUP BY k ORDER BY k`;

type Row = { k: number; succeeded: number; failed: number; pending: number; skipped: number };

/**
 * The buckets of `webhookId` over [since, until) (ms, `since < until`), oldest first, every
 * bucket that overlaps the window included, empty ones as zeros. Entries older than the
 * retention at `now` (ms) are not counted, as in the log.
 */
export function readStats(sql: SqlStorage, webhookId: string, since: number, until: number, size: StatsBucketSize, now: number): StatsBucket[] {
  const width = STATS_BUCKET_MS[size];
  const first = Math.floor(since / width) * width;
  const count = Math.ceil((until - first) / width);
  const from = Math.max(since, now - LOG_RETENTION_MS);
  const buckets: StatsBucket[] = Array.from({ length: count }, (_, k) => ({
    start: formatInstant(first + k * width),
    succeeded: 0,
    failed: 0,
    pending: 0,
    skipped: 0,
  }));
  for (const { k, ...counts } of sql.exec<Row>(STATS_SQL, webhookId, first, until, width, from)) {
    const bucket = buckets[k];
    if (bucket) Object.assign(bucket, counts);
  }
  return buckets;
}
