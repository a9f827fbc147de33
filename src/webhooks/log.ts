/**
 * The delivery log's reads (API.md § "Delivery log", § "Resend", § "Recover"), as
 * synchronous SQL on the hub's storage. Every query is served by an index of `attempts`
 * (schema.ts: by webhook and time, by event, by status, by type); test/webhooks-log.test.ts
 * checks the plans.
 */
import { formatInstant } from "../lib/time";
import { LOG_RETENTION_MS } from "./schema";
import type { DeliveryRecord } from "./types";

/** Filters of GET /v3/webhooks/{id}/deliveries, combined with AND. Instants in ms. */
export interface LogFilter {
  status?: DeliveryRecord["status"];
  eventType?: string;
  eventId?: string;
  /** `attemptedAt` (or queued time) ≥ since; ms. */
  since?: number;
  /** `attemptedAt` (or queued time) < until; ms. */
  until?: number;
}

type Row = {
  event_id: string;
  event_type: string;
  attempt: number;
  status: DeliveryRecord["status"];
  response_status: number | null;
  error: string | null;
  attempted_at: number | null;
  next_attempt_at: number | null;
};

/**
 * The statement and its parameters for one page of the log of `webhookId` at `now` (ms):
 * attempts (and skipped entries) of the retention window plus deliveries still waiting for
 * their first attempt, newest first, with only the filters given written into the SQL (so
 * that the planner picks the matching index).
 */
export function logQuery(webhookId: string, filter: LogFilter, now: number, offset: number, limit: number): { sql: string; params: unknown[] } {
  const params: unknown[] = [webhookId, Math.max(now - LOG_RETENTION_MS, filter.since ?? 0)];
  const a: string[] = ["webhook_id = ?1", "attempted_at >= ?2"];
  const d: string[] = ["d.webhook_id = ?1", "d.attempts = 0", "d.created_at >= ?2"];
  const add = (value: unknown, attempts: string, queued: string) => {
    params.push(value);
    a.push(`${attempts} ?${params.length}`);
    d.push(`${queued} ?${params.length}`);
  };
  if (filter.until !== undefined) add(filter.until, "attempted_at <", "d.created_at <");
  if (filter.eventId !== undefined) add(filter.eventId, "event_id =", "d.event_id =");
  if (filter.eventType !== undefined) add(filter.eventType, "event_type =", "e.type =");
  if (filter.status !== undefined) {
    params.push(filter.status);
    a.push(`status = ?${params.length}`);
    d.push(`'pending' = ?${params.length}`);
  }
  params.push(limit, offset);
  const sql = `SELECT event_id, event_type, attempt, status, response_status, error, attempted_at, next_attempt_at
     FROM (
       SELECT event_id, event_type, attempt, status, response_status, error,
              CASE WHEN status = 'skipped' THEN NULL ELSE attempted_at END AS attempted_at, next_attempt_at,
              attempted_at AS sort_at, id AS tiebreak
       FROM attempts WHERE ${a.join(" AND ")}
       UNION ALL
       SELECT d.event_id, e.type, 1, 'pending', NULL, NULL, NULL, d.next_attempt_at, d.created_at, d.id
       FROM deliveries d JOIN events e ON e.id = d.event_id
       WHERE ${d.join(" AND ")}
     )
     ORDER BY sort_at DESC, tiebreak DESC
     LIMIT ?${params.length - 1} OFFSET ?${params.length}`;
  return { sql, params };
}

/** One page of the log (see `logQuery`), as `DeliveryRecord`s. */
export function readLog(sql: SqlStorage, webhookId: string, filter: LogFilter, now: number, offset: number, limit: number): DeliveryRecord[] {
  const q = logQuery(webhookId, filter, now, offset, limit);
  return sql
    .exec<Row>(q.sql, ...q.params)
    .toArray()
    .map((r) => ({
      eventId: r.event_id,
      eventType: r.event_type,
      attempt: r.attempt,
      status: r.status,
      responseStatus: r.response_status,
      error: r.error,
      attemptedAt: r.attempted_at === null ? null : formatInstant(r.attempted_at),
      nextAttemptAt: r.next_attempt_at === null ? null : formatInstant(r.next_attempt_at),
    }));
}

/**
 * Whether event `eventId` is retained and was addressed to `webhookId` (a log entry or a
 * queued delivery of it for this registration): the condition of a resend.
 */
export function wasAddressed(sql: SqlStorage, webhookId: string, eventId: string): boolean {
  return (
    sql
      .exec(
        `SELECT 1 FROM events e WHERE e.id = ?2 AND (
         EXISTS (SELECT 1 FROM attempts a WHERE a.webhook_id = ?1 AND a.event_id = ?2)
         OR EXISTS (SELECT 1 FROM deliveries d WHERE d.webhook_id = ?1 AND d.event_id = ?2))`,
        webhookId,
        eventId,
      )
      .toArray().length > 0
  );
}

/** The statement of `toRecover` (exported for its query-plan test). */
export const RECOVER_SQL = `SELECT e.id FROM events e
   WHERE e.created_at >= ?2 AND e.created_at < ?3
     AND (SELECT a.status FROM attempts a WHERE a.webhook_id = ?1 AND a.event_id = e.id ORDER BY a.id DESC LIMIT 1) IN ('failed', 'skipped')
     AND NOT EXISTS (SELECT 1 FROM deliveries d WHERE d.event_id = e.id AND d.webhook_id = ?1)
   ORDER BY e.created_at, e.rowid`;

/**
 * Events to recover for `webhookId` (API.md § "Recover"): retained, accepted in
 * [since, until) (ms), whose delivery to it ended `failed` or `skipped` (its latest log entry)
 * and is not queued again; in acceptance order, each once.
 */
export function toRecover(sql: SqlStorage, webhookId: string, since: number, until: number): string[] {
  return sql
    .exec<{ id: string }>(RECOVER_SQL, webhookId, since, until)
    .toArray()
    .map((r) => r.id);
}
