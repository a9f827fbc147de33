/**
 * A courier's attempt log, read (docs/reference.md § "Delivery log", § "Resend", § "Recover"): pages
 * of attempts with their filters, whether an event was addressed to the registration, and
 * the events a recover queues again. Synchronous SQL on the courier's storage; every query is
 * served by an index (courier/storage.ts), which test/webhooks/log.test.ts checks.
 */
import { RETENTION_MS } from "../../lib/limits";
import { formatInstant } from "../../lib/time";
import type { DeliveryRecord, Trigger } from "../rpc";

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
  trigger: Trigger;
  url: string | null;
  response_status: number | null;
  error: string | null;
  duration_ms: number | null;
  response_body: string | null;
  attempted_at: number | null;
  next_attempt_at: number | null;
};

/**
 * The statement and its parameters for one page of the log at `now` (ms): attempts (and
 * skipped entries) of the retention window plus deliveries still waiting for their first
 * attempt (numbered as their event's next entry; when the registration orders by course,
 * `ordered`, one held behind an earlier delivery of its course has no `next_attempt_at`),
 * newest first, with only the filters given written into the SQL (so that the planner picks
 * the matching index).
 *
 * A compound SELECT ordered as a whole: SQLite merges its two arms, each walked through an
 * index in the page's order (`log_at`, `log_status`, `log_type`, `log_event_at` by (time, id);
 * `queue_unattempted` by (queued time, id)), and stops after the page: no sort of the window,
 * whatever the filters (test/webhooks/deliveries-plan.test.ts). The two sort keys come last.
 */
export function logQuery(filter: LogFilter, now: number, offset: number, limit: number, ordered = false): { sql: string; params: unknown[] } {
  const params: unknown[] = [Math.max(now - RETENTION_MS, filter.since ?? 0)];
  const a: string[] = ["attempted_at >= ?1"];
  const q: string[] = ["attempts = 0", "created_at >= ?1"];
  const add = (value: unknown, attempts: string, queued: string) => {
    params.push(value);
    a.push(`${attempts} ?${params.length}`);
    q.push(`${queued} ?${params.length}`);
  };
  if (filter.until !== undefined) add(filter.until, "attempted_at <", "created_at <");
  if (filter.eventId !== undefined) add(filter.eventId, "event_id =", "event_id =");
  if (filter.eventType !== undefined) add(filter.eventType, "event_type =", "event_type =");
  if (filter.status !== undefined) {
    params.push(filter.status);
    a.push(`status = ?${params.length}`);
    q.push(`'pending' = ?${params.length}`);
  }
  params.push(limit, offset);
  const sql = `SELECT event_id, event_type, attempt, status, trigger, url, response_status, error, duration_ms, response_body,
            CASE WHEN status = 'skipped' THEN NULL ELSE attempted_at END AS attempted_at, next_attempt_at,
            attempted_at AS sort_at, id AS tiebreak
       FROM log WHERE ${a.join(" AND ")}
     UNION ALL
     SELECT event_id, event_type, COALESCE((SELECT e.last_attempt FROM events e WHERE e.id = queue.event_id), 0) + 1, 'pending', trigger,
            NULL, NULL, NULL, NULL, NULL, NULL, ${ordered ? "CASE WHEN held = 1 THEN NULL ELSE next_attempt_at END" : "next_attempt_at"}, created_at, id
       FROM queue WHERE ${q.join(" AND ")}
     ORDER BY sort_at DESC, tiebreak DESC
     LIMIT ?${params.length - 1} OFFSET ?${params.length}`;
  return { sql, params };
}

/** One page of the log (see `logQuery`), as `DeliveryRecord`s. */
export function readLog(sql: SqlStorage, filter: LogFilter, now: number, offset: number, limit: number, ordered = false): DeliveryRecord[] {
  const q = logQuery(filter, now, offset, limit, ordered);
  return sql
    .exec<Row>(q.sql, ...q.params)
    .toArray()
    .map((r) => ({
      eventId: r.event_id,
      eventType: r.event_type,
      attempt: r.attempt,
      status: r.status,
      trigger: r.trigger,
      url: r.url,
      responseStatus: r.response_status,
      error: r.error,
      durationMs: r.duration_ms,
      responseBody: r.response_body,
      attemptedAt: r.attempted_at === null ? null : formatInstant(r.attempted_at),
      nextAttemptAt: r.next_attempt_at === null ? null : formatInstant(r.next_attempt_at),
    }));
}

/** The retained event `eventId`, if it was addressed to this registration (the condition of a resend). */
export function retainedEvent(sql: SqlStorage, eventId: string): { id: string; type: string } | null {
  return sql.exec<{ id: string; type: string }>(`SELECT id, type FROM events WHERE id = ?`, eventId).toArray()[0] ?? null;
}

/**
 * The statement of `toRecover` (exported for its query-plan test): ?1 since, ?2 until, ?3/?4
 * the position after which to read, ?5 the chunk. It reads only events whose delivery ended
 * failed or skipped (`ended`, the partial index `events_ended`), never the succeeded ones.
 */
export const RECOVER_SQL = `SELECT e.rowid AS rid, e.id, e.type, e.accepted_at FROM events e INDEXED BY events_ended
   WHERE e.ended IS NOT NULL AND e.accepted_at >= ?1 AND e.accepted_at < ?2 AND (e.accepted_at, e.rowid) > (?3, ?4)
     AND NOT EXISTS (SELECT 1 FROM queue q WHERE q.event_id = e.id)
   ORDER BY e.accepted_at, e.rowid LIMIT ?5`;

/** A position in acceptance order (accepted at, rowid), where a chunked recover goes on. */
export type RecoverPosition = [number, number];

/**
 * One chunk of the events to recover (docs/reference.md § "Recover"): retained, accepted in
 * [since, until) (ms), after `from`, whose delivery ended `failed` or `skipped` (its latest
 * log entry) and is not queued again; in acceptance order, at most `limit`.
 */
export function toRecover(
  sql: SqlStorage,
  since: number,
  until: number,
  from: RecoverPosition,
  limit: number,
): { events: { id: string; type: string }[]; next: RecoverPosition | null } {
  const rows = sql.exec<{ rid: number; id: string; type: string; accepted_at: number }>(RECOVER_SQL, since, until, from[0], from[1], limit).toArray();
  const last = rows.at(-1);
  return { events: rows, next: last && rows.length === limit ? [last.accepted_at, last.rid] : null };
}
