/**
 * A courier's queue as synchronous SQL steps on its own storage (docs/reference.md § "Event delivery",
 * § "PATCH", § "Resend", § "Recover"): taking the hub's hand-overs, choosing what is due,
 * recording an attempt's outcome (retry schedule, 410, Retry-After), skipping while disabled.
 * Only the WebhookCourier calls these, inside its synchronous steps.
 */
import { type AttemptVerdict, judgeAttempt, parseRetryAfter } from "../delivery/schedule";
import type { HandedEvent, Trigger } from "../rpc";

/** The log's `error` of a skipped entry (docs/reference.md § "Delivery log"). */
const SKIPPED_ERROR = "registration disabled";

/** A due delivery, with its event's body. */
export type DueRow = {
  id: number;
  event_id: string;
  event_type: string;
  trigger: Trigger;
  attempts: number;
  body: string;
};

/**
 * Takes the events of a hand-over with `seq` after `cursor` at `now` (ms): each is kept (for
 * resend and recover) and queued due now, or logged `skipped` when it was accepted while the
 * registration was disabled or `enabled` is false now. Events at or before the cursor were
 * taken already (a hand-over sent again) and are ignored.
 *
 * @returns how many were queued.
 */
export function take(sql: SqlStorage, events: readonly HandedEvent[], cursor: number, enabled: boolean, now: number): number {
  const fresh = events.filter((e) => e.seq > cursor);
  if (fresh.length === 0) return 0;
  sql.exec(
    `INSERT OR IGNORE INTO events (id, type, body, accepted_at) SELECT value ->> 0, value ->> 1, value ->> 2, value ->> 3 FROM json_each(?)`,
    JSON.stringify(fresh.map((e) => [e.id, e.type, e.body, e.acceptedAt])),
  );
  const queued = fresh.filter((e) => enabled && !e.skipped);
  const skipped = fresh.filter((e) => !enabled || e.skipped);
  if (queued.length > 0) {
    sql.exec(
      `INSERT OR IGNORE INTO queue (event_id, event_type, trigger, attempts, next_attempt_at, created_at)
       SELECT value ->> 0, value ->> 1, 'event', 0, ?2, ?2 FROM json_each(?1)`,
      JSON.stringify(queued.map((e) => [e.id, e.type])),
      now,
    );
  }
  logSkipped(
    sql,
    skipped.map((e): [string, string, Trigger] => [e.id, e.type, "event"]),
    now,
  );
  return queued.length;
}

/** Logs `skipped` entries (`[eventId, eventType, trigger]`) at `now` (ms), in one statement. */
function logSkipped(sql: SqlStorage, entries: [string, string, Trigger][], now: number): void {
  if (entries.length === 0) return;
  sql.exec(
    `INSERT INTO log (event_id, event_type, attempt, status, trigger, error, attempted_at)
     SELECT value ->> 0, value ->> 1, 1, 'skipped', value ->> 2, ?2, ?3 FROM json_each(?1)`,
    JSON.stringify(entries),
    SKIPPED_ERROR,
    now,
  );
}

/**
 * The registration was disabled: every queued delivery not `busy` (in flight) ends `skipped`
 * at `now` (ms), pending retries included (docs/reference.md § "PATCH /v3/webhooks/{id}": `enabled: false`).
 */
export function skipQueued(sql: SqlStorage, busy: readonly number[], now: number): void {
  const rows = sql
    .exec<{ event_id: string; event_type: string; trigger: Trigger }>(
      `DELETE FROM queue WHERE id NOT IN (SELECT value FROM json_each(?)) RETURNING event_id, event_type, trigger`,
      JSON.stringify(busy),
    )
    .toArray();
  logSkipped(
    sql,
    rows.map((r): [string, string, Trigger] => [r.event_id, r.event_type, r.trigger]),
    now,
  );
}

/** The deliveries due at `now` (ms), oldest due first, leaving out `busy` ones, at most `limit`. */
export function readDue(sql: SqlStorage, now: number, busy: readonly number[], limit: number): DueRow[] {
  if (limit <= 0) return [];
  return sql
    .exec<DueRow>(
      `SELECT q.id, q.event_id, q.event_type, q.trigger, q.attempts, e.body FROM queue q JOIN events e ON e.id = q.event_id
       WHERE q.next_attempt_at <= ? AND q.id NOT IN (SELECT value FROM json_each(?))
       ORDER BY q.next_attempt_at, q.id LIMIT ?`,
      now,
      JSON.stringify(busy),
      limit,
    )
    .toArray();
}

/** The earliest due time (ms) among deliveries not `busy`, or `null`. */
export function nextDueAt(sql: SqlStorage, busy: readonly number[]): number | null {
  return sql
    .exec<{ t: number | null }>(`SELECT MIN(next_attempt_at) AS t FROM queue WHERE id NOT IN (SELECT value FROM json_each(?))`, JSON.stringify(busy))
    .one().t;
}

/** How many deliveries are due at `now` (ms). */
export function backlog(sql: SqlStorage, now: number): number {
  return sql.exec<{ n: number }>(`SELECT COUNT(*) AS n FROM queue WHERE next_attempt_at <= ?`, now).one().n;
}

/**
 * Queues `eventId` (kept in `events`) due at `now` (ms) with `trigger`; a delivery of it
 * already queued becomes due now instead (no second copy), its next attempt made for `trigger`.
 */
export function enqueue(sql: SqlStorage, eventId: string, eventType: string, trigger: Trigger, now: number): void {
  sql.exec(
    `INSERT INTO queue (event_id, event_type, trigger, attempts, next_attempt_at, created_at) VALUES (?1, ?2, ?3, 0, ?4, ?4)
     ON CONFLICT (event_id) DO UPDATE SET next_attempt_at = MIN(next_attempt_at, ?4), trigger = ?3`,
    eventId,
    eventType,
    trigger,
    now,
  );
}

/** The end of one attempt, as the courier saw it. Instants in ms. */
export interface Outcome {
  row: DueRow;
  url: string;
  sentAt: number;
  finishedAt: number;
  /** From sending until the status line arrived (or the timeout or error); `null` if nothing was sent. */
  durationMs: number | null;
  /** HTTP status; `null` for network errors, timeouts and attempts not sent. */
  status: number | null;
  error: string | null;
  /** The raw `Retry-After` of a 429 or 503 answer, if any. */
  retryAfter: string | null;
  /** The first 1,024 bytes of the answer's body, as UTF-8; `null` without an answer. */
  responseBody: string | null;
  /** Never sent: the URL policy in force refuses the URL (the delivery ends failed). */
  refused?: boolean;
}

/**
 * Records an attempt: a log row, and its delivery removed (succeeded, failed) or rescheduled
 * (pending: the schedule's wait from the attempt's end, lengthened by `jitter` ∈ [0, 1) × 10 %,
 * and no earlier than a 429/503's Retry-After). An outcome whose delivery is gone or was
 * advanced meanwhile is not recorded. A refused attempt (`o.refused`: never sent, the URL
 * policy in force refuses the URL) ends the delivery `failed`.
 *
 * @returns the delivery's status after it, or `null` when nothing was recorded.
 */
export function recordAttempt(sql: SqlStorage, o: Outcome, schedule: readonly number[], jitter: number): "succeeded" | "pending" | "failed" | null {
  const attempt = o.row.attempts + 1;
  const verdict: AttemptVerdict = o.refused
    ? { status: "failed" }
    : judgeAttempt(o.status ?? undefined, attempt, schedule, parseRetryAfter(o.retryAfter, o.finishedAt), jitter);
  const nextAttemptAt = verdict.status === "pending" ? o.finishedAt + verdict.retryInMs : null;
  const changed =
    nextAttemptAt === null
      ? sql.exec(`DELETE FROM queue WHERE id = ? AND attempts = ?`, o.row.id, o.row.attempts).rowsWritten
      : sql.exec(
          `UPDATE queue SET attempts = ?3, next_attempt_at = ?4, trigger = 'retry' WHERE id = ?1 AND attempts = ?2`,
          o.row.id,
          o.row.attempts,
          attempt,
          nextAttemptAt,
        ).rowsWritten;
  if (changed === 0) return null;
  sql.exec(
    `INSERT INTO log (event_id, event_type, attempt, status, trigger, url, response_status, error, duration_ms, response_body, attempted_at, next_attempt_at)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    o.row.event_id,
    o.row.event_type,
    attempt,
    verdict.status,
    o.row.trigger,
    o.url,
    o.status,
    o.error,
    o.durationMs,
    o.responseBody,
    o.sentAt,
    nextAttemptAt,
  );
  return verdict.status;
}
