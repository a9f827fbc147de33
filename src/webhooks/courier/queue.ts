/**
 * A courier's queue as synchronous SQL steps on its own storage (docs/reference.md § "Event delivery",
 * § "PATCH", § "Resend", § "Recover"): taking the hub's hand-overs, choosing what is due,
 * recording an attempt's outcome (retry schedule, 410, Retry-After), skipping while disabled.
 * Only the WebhookCourier calls these, inside its synchronous steps.
 */

import { BOUND_LIST, cutBatches } from "../../lib/batches";
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
  /** Attempts of this delivery recorded so far: its place in the retry schedule (not the log's number). */
  attempts: number;
  /** How many resends or recovers asked for it (`enqueue`) when it was read. */
  requested: number;
  body: string;
};

/**
 * Takes the events of a hand-over with `seq` after `cursor` at `now` (ms): each is kept (for
 * resend and recover) and queued due now, or logged `skipped` when it was accepted while the
 * registration was disabled or `enabled` is false now. Events at or before the cursor were
 * taken already (a hand-over sent again) and are ignored. Bound in batches cut by
 * `cutBatches` (count and bytes; the bodies spliced in as JSON, not escaped again), several
 * statements of the caller's synchronous step.
 *
 * @returns how many were queued.
 */
export function take(sql: SqlStorage, events: readonly HandedEvent[], cursor: number, enabled: boolean, now: number): number {
  const fresh = events.filter((e) => e.seq > cursor);
  if (fresh.length === 0) return 0;
  const kept = cutBatches(fresh, BOUND_LIST, (e) => `[${JSON.stringify(e.id)},${JSON.stringify(e.type)},${e.body},${e.acceptedAt}]`);
  for (const batch of kept) {
    sql.exec(
      `INSERT OR IGNORE INTO events (id, type, body, accepted_at) SELECT value ->> 0, value ->> 1, value -> 2, value ->> 3 FROM json_each(?)`,
      batch.json,
    );
  }
  const queued = fresh.filter((e) => enabled && !e.skipped);
  const skipped = fresh.filter((e) => !enabled || e.skipped);
  for (const batch of cutBatches(queued.map((e) => [e.id, e.type]))) {
    sql.exec(
      `INSERT OR IGNORE INTO queue (event_id, event_type, trigger, attempts, next_attempt_at, created_at)
       SELECT value ->> 0, value ->> 1, 'event', 0, ?2, ?2 FROM json_each(?1)`,
      batch.json,
      now,
    );
  }
  for (const batch of cutBatches(skipped.map((e) => e.id))) {
    // Each skipped entry takes its event's next number (`events.last_attempt`).
    sql.exec(`UPDATE events SET last_attempt = last_attempt + 1 WHERE id IN (SELECT value FROM json_each(?))`, batch.json);
    sql.exec(
      `INSERT INTO log (event_id, event_type, attempt, status, trigger, error, attempted_at)
       SELECT e.id, e.type, e.last_attempt, 'skipped', 'event', ?2, ?3 FROM json_each(?1) j JOIN events e ON e.id = j.value ORDER BY j.key`,
      batch.json,
      SKIPPED_ERROR,
      now,
    );
  }
  return queued.length;
}

/**
 * The registration was disabled: every queued delivery not `busy` (in flight) ends `skipped`
 * at `now` (ms), pending retries included (docs/reference.md § "PATCH /v3/webhooks/{id}": `enabled: false`), each
 * entry numbered as its event's next (`events.last_attempt`). Three statements whatever the
 * queue's length (the events' numbers moved on, a log entry per row copied from the queue —
 * also for a row whose event copy is missing, numbered 1 — then the rows deleted), nothing read into memory; the only list bound is `busy` (the few
 * requests in flight, bytes far under any limit). Run inside the caller's synchronous step, so that the disable
 * holds for the whole queue or not at all.
 */
export function skipQueued(sql: SqlStorage, busy: readonly number[], now: number): void {
  const keep = JSON.stringify(busy);
  sql.exec(`UPDATE events SET last_attempt = last_attempt + 1 WHERE id IN (SELECT event_id FROM queue WHERE id NOT IN (SELECT value FROM json_each(?)))`, keep);
  sql.exec(
    `INSERT INTO log (event_id, event_type, attempt, status, trigger, error, attempted_at)
     SELECT q.event_id, q.event_type, COALESCE(e.last_attempt, 1), 'skipped', q.trigger, ?2, ?3 FROM queue q LEFT JOIN events e ON e.id = q.event_id
     WHERE q.id NOT IN (SELECT value FROM json_each(?1)) ORDER BY q.id`,
    keep,
    SKIPPED_ERROR,
    now,
  );
  sql.exec(`DELETE FROM queue WHERE id NOT IN (SELECT value FROM json_each(?))`, keep);
}

/** The deliveries due at `now` (ms), oldest due first, leaving out `busy` ones, at most `limit`. */
export function readDue(sql: SqlStorage, now: number, busy: readonly number[], limit: number): DueRow[] {
  if (limit <= 0) return [];
  return sql
    .exec<DueRow>(
      `SELECT q.id, q.event_id, q.event_type, q.trigger, q.attempts, q.requested, e.body FROM queue q JOIN events e ON e.id = q.event_id
       WHERE q.next_attempt_at <= ? AND q.id NOT IN (SELECT value FROM json_each(?))
       ORDER BY q.next_attempt_at, q.id LIMIT ?`,
      now,
      JSON.stringify(busy),
      limit,
    )
    .toArray();
}

/**
 * The earliest due time (ms) among deliveries not `busy`, or `null`. Read in `queue_due`
 * order, it stops at the first delivery not busy (MIN() with a condition would read them all).
 */
export function nextDueAt(sql: SqlStorage, busy: readonly number[]): number | null {
  const first = sql
    .exec<{ t: number }>(
      `SELECT next_attempt_at AS t FROM queue WHERE id NOT IN (SELECT value FROM json_each(?)) ORDER BY next_attempt_at, id LIMIT 1`,
      JSON.stringify(busy),
    )
    .toArray()[0];
  return first === undefined ? null : first.t;
}

/** How many deliveries are due at `now` (ms), counted up to `cap` (a bounded read of `queue_due`). */
export function backlog(sql: SqlStorage, now: number, cap: number): number {
  return sql.exec<{ n: number }>(`SELECT COUNT(*) AS n FROM (SELECT 1 FROM queue WHERE next_attempt_at <= ? LIMIT ?)`, now, cap).one().n;
}

/**
 * Queues `eventId` (kept in `events`) due at `now` (ms) with `trigger`; a delivery of it
 * already queued becomes due now instead (no second copy), its next attempt made for `trigger`
 * — also when an attempt of it is in flight: `requested` grows, and that attempt's outcome
 * leaves it due (`recordAttempt`), so one more attempt follows (docs/reference.md § "Resend").
 */
export function enqueue(sql: SqlStorage, eventId: string, eventType: string, trigger: Trigger, now: number): void {
  sql.exec(
    `INSERT INTO queue (event_id, event_type, trigger, attempts, next_attempt_at, created_at) VALUES (?1, ?2, ?3, 0, ?4, ?4)
     ON CONFLICT (event_id) DO UPDATE SET next_attempt_at = MIN(next_attempt_at, ?4), trigger = ?3, requested = requested + 1`,
    eventId,
    eventType,
    trigger,
    now,
  );
  sql.exec(`UPDATE events SET ended = NULL WHERE id = ? AND ended IS NOT NULL`, eventId);
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
 * advanced meanwhile is not recorded; one whose delivery was asked for again meanwhile (resend,
 * recover: `requested` grew) is recorded and leaves it due at once. A refused attempt (`o.refused`: never sent, the URL
 * policy in force refuses the URL) ends the delivery `failed`.
 *
 * The log row's number is its event's next (`events.last_attempt`), taken in this step: an
 * event's entries are numbered 1, 2, … in the order they are recorded, across resends and
 * recovers, and an outcome never recorded (lost to a restart, or not recorded here) takes none.
 *
 * @returns the attempt's status, its number in the log (`attempt`) and whether its delivery is
 *   due again at once (`again`), or `null` when nothing was recorded.
 */
export function recordAttempt(
  sql: SqlStorage,
  o: Outcome,
  schedule: readonly number[],
  jitter: number,
): { status: "succeeded" | "pending" | "failed"; attempt: number; again: boolean } | null {
  // This delivery's place in the retry schedule (the queue row's own count).
  const attempt = o.row.attempts + 1;
  const verdict: AttemptVerdict = o.refused
    ? { status: "failed" }
    : judgeAttempt(o.status ?? undefined, attempt, schedule, parseRetryAfter(o.retryAfter, o.finishedAt), jitter);
  const nextAttemptAt = verdict.status === "pending" ? o.finishedAt + verdict.retryInMs : null;
  const r = o.row;
  let changed =
    nextAttemptAt === null
      ? sql.exec(`DELETE FROM queue WHERE id = ? AND attempts = ? AND requested = ?`, r.id, r.attempts, r.requested).rowsWritten
      : sql.exec(
          `UPDATE queue SET attempts = ?3, next_attempt_at = ?4, trigger = 'retry' WHERE id = ?1 AND attempts = ?2 AND requested = ?5`,
          r.id,
          r.attempts,
          attempt,
          nextAttemptAt,
          r.requested,
        ).rowsWritten;
  // Asked for again while in flight (`enqueue`): the delivery stays, due at once, for that request.
  const again =
    changed === 0 &&
    sql.exec(
      `UPDATE queue SET attempts = ?3, next_attempt_at = ?4 WHERE id = ?1 AND attempts = ?2 AND requested > ?5`,
      r.id,
      r.attempts,
      attempt,
      o.finishedAt,
      r.requested,
    ).rowsWritten > 0;
  if (again) changed = 1;
  if (changed === 0) return null;
  const numbered = sql.exec<{ n: number }>(`UPDATE events SET last_attempt = last_attempt + 1 WHERE id = ? RETURNING last_attempt AS n`, r.event_id).one().n;
  sql.exec(
    `INSERT INTO log (event_id, event_type, attempt, status, trigger, url, response_status, error, duration_ms, response_body, attempted_at, next_attempt_at)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    o.row.event_id,
    o.row.event_type,
    numbered,
    verdict.status,
    o.row.trigger,
    o.url,
    o.status,
    o.error,
    o.durationMs,
    o.responseBody,
    o.sentAt,
    again ? o.finishedAt : nextAttemptAt,
  );
  // Its delivery goes on: it has not ended (`events.ended`, set by the log's trigger).
  if (again) sql.exec(`UPDATE events SET ended = NULL WHERE id = ?`, r.event_id);
  return { status: verdict.status, attempt: numbered, again };
}
