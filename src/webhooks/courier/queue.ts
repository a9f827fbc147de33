/**
 * A courier's queue as synchronous SQL steps on its own storage (docs/reference.md § "Event delivery",
 * § "PATCH", § "Resend", § "Recover"): taking the hub's hand-overs, choosing what is due,
 * recording an attempt's outcome (retry schedule, 410, Retry-After), skipping while disabled.
 * Only the WebhookCourier calls these, inside its synchronous steps.
 */

import { BOUND_LIST, cutBatches, utf8Bytes } from "../../lib/batches";
import { type AttemptVerdict, type DeliveryControl, isSuccess, judgeAttempt, parseRetryAfter } from "../delivery/schedule";
import type { HandedEvent, Trigger } from "../rpc";
import { COURSE_FULL_ERROR, courseOf, coursesOf, HoldRoom, headFailing, type Load, seqOf, startable } from "./course-hold";
import { recordLatency } from "./latency";
import { type Gap, gapOfEvents } from "./missed";
import { SKIPPED_ERROR, skipRows } from "./skip";

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
  /** Its course key (`courseOf`; `null` or absent: never held). */
  course?: string | null;
  body: string;
};

/**
 * The queue's bound (docs/reference.md § "Event delivery", back-pressure): a hand-over's
 * events are queued only while the queue holds fewer than QUEUE_MAX_ROWS deliveries and
 * QUEUE_MAX_BYTES bytes of their bodies — with `ordering: course`, not counting those held
 * behind a failing head, which have bounds of their own (course-hold.ts), so a failing course
 * never takes this room; the rest stays in the hub's log, handed over as the queue drains.
 * So a courier's queue, its copies of queued events and every step over them stay bounded
 * whatever the receiver's pace: 1,000 rows and 16 MB plus one event (≤ 2 MB), two
 * hand-overs' worth, enough that a fast receiver never waits for the next one (it is asked
 * for at half: QUEUE_LOW_ROWS, QUEUE_LOW_BYTES). A recover queues only while the whole queue,
 * held rows included, is down to half (courier/recover.ts), so never past it.
 */
const QUEUE_MAX_ROWS = 1_000;
/** See QUEUE_MAX_ROWS (bytes of queued bodies). */
const QUEUE_MAX_BYTES = 16_000_000;
/** A courier that left events in the hub asks for more once its queue is down to these. */
const QUEUE_LOW_ROWS = QUEUE_MAX_ROWS / 2;
const QUEUE_LOW_BYTES = QUEUE_MAX_BYTES / 2;

/**
 * The queue's load: deliveries — when `ordered`, not those held behind a failing head
 * (`headFailing`) — and bytes of their bodies, counted over at most QUEUE_MAX_ROWS + 1 of
 * them (a bounded read, which passes over at most the held bounds' rows; a longer queue is
 * at its bound anyway).
 */
export function queueLoad(sql: SqlStorage, ordered = false): Load {
  return sql
    .exec<Load>(
      `SELECT COUNT(*) AS rows, TOTAL(bytes) AS bytes FROM (SELECT q.bytes FROM queue q INDEXED BY queue_due ${ordered ? `WHERE NOT (q.held = 1 AND ${headFailing("q")})` : ""} LIMIT ?)`,
      QUEUE_MAX_ROWS + 1,
    )
    .one();
}

/** Whether a queue of `load` is down to the point where a courier asks for more (QUEUE_LOW_ROWS, QUEUE_LOW_BYTES). */
export function drained(load: { rows: number; bytes: number }): boolean {
  return load.rows <= QUEUE_LOW_ROWS && load.bytes <= QUEUE_LOW_BYTES;
}

/** What `take` did: deliveries queued, the last event taken (`null`: none), and whether the bound left some out. */
export interface Taken {
  queued: number;
  through: number | null;
  /** The queue reached its bound: the events after `through` were not taken (they stay in the hub). */
  full: boolean;
  /** What was logged `skipped` (disabled, course backlog full): dropped unsent (missed.ts). */
  gap: Gap | null;
}

/**
 * Takes the events of a hand-over with `seq` after `cursor` at `now` (ms), in order, while
 * the queue is under its bound (QUEUE_MAX_ROWS, QUEUE_MAX_BYTES: `queueLoad`): each is kept
 * (for resend and recover) and queued due now, or logged `skipped` when it was accepted while
 * the registration was disabled or `enabled` is false now (a skipped one takes no room). When
 * the registration orders by course (`ordered`), an event whose course's head is failing is
 * held behind it and takes room of the held bounds instead (`HoldRoom`): past them it is
 * logged `skipped` (COURSE_FULL_ERROR), and the cursor goes on. What ends skipped is
 * summed as `gap` (missed.ts) for the registration's missed-events notice. Events at or
 * before the cursor were taken already (a hand-over sent again) and are ignored. Bound in
 * batches cut by `cutBatches` (count and bytes; the bodies spliced in as JSON, not escaped
 * again), several statements of the caller's synchronous step.
 */
export function take(sql: SqlStorage, events: readonly HandedEvent[], cursor: number, enabled: boolean, now: number, ordered = false): Taken {
  const fresh = events.filter((e) => e.seq > cursor);
  if (fresh.length === 0) return { queued: 0, through: null, full: false, gap: null };
  const encode = (e: HandedEvent) => `[${JSON.stringify(e.id)},${JSON.stringify(e.type)},${e.body},${e.acceptedAt},${e.seq}]`;
  const batches = cutBatches(fresh, BOUND_LIST, encode);
  const courses = enabled && ordered ? coursesOf(sql, batches) : [];
  const room = new HoldRoom(sql);
  let load = enabled ? queueLoad(sql, ordered) : { rows: 0, bytes: 0 };
  /** Each event taken, with the `error` of its `skipped` entry (`null`: queued). */
  const taken: { event: HandedEvent; bytes: number; error: string | null }[] = [];
  let full = false;
  for (const [i, event] of fresh.entries()) {
    const bytes = utf8Bytes(event.body);
    const course = courses[i] ?? null;
    if (!enabled || event.skipped) taken.push({ event, bytes, error: SKIPPED_ERROR });
    else if (course !== null && room.failingHead(course)) taken.push({ event, bytes, error: room.hold(course, bytes) ? null : COURSE_FULL_ERROR });
    else if (load.rows >= QUEUE_MAX_ROWS || load.bytes >= QUEUE_MAX_BYTES) {
      full = true;
      break;
    } else {
      load = { rows: load.rows + 1, bytes: load.bytes + bytes };
      taken.push({ event, bytes, error: null });
    }
  }
  const kept =
    taken.length === fresh.length
      ? batches
      : cutBatches(
          taken.map((t) => t.event),
          BOUND_LIST,
          encode,
        );
  for (const batch of kept) {
    sql.exec(
      `INSERT OR IGNORE INTO events (id, type, body, accepted_at, seq) SELECT value ->> 0, value ->> 1, value -> 2, value ->> 3, value ->> 4 FROM json_each(?)`,
      batch.json,
    );
  }
  const queued = taken.filter((t) => t.error === null);
  const skipped = taken.filter((t) => t.error !== null).map((t) => [t.event.id, t.error]);
  for (const batch of cutBatches(queued.map((t) => [t.event.id, t.event.type, t.bytes]))) {
    // The trigger `queue_hold` holds each row behind the queued ones of its course before it.
    sql.exec(
      `INSERT OR IGNORE INTO queue (event_id, event_type, trigger, attempts, next_attempt_at, created_at, bytes, course, seq)
       SELECT value ->> 0, value ->> 1, 'event', 0, ?2, ?2, value ->> 2, ${courseOf("value ->> 0")}, ${seqOf("value ->> 0")} FROM json_each(?1)`,
      batch.json,
      now,
    );
  }
  for (const batch of cutBatches(skipped)) {
    // Each skipped entry takes its event's next number (`events.last_attempt`).
    sql.exec(`UPDATE events SET last_attempt = last_attempt + 1 WHERE id IN (SELECT value ->> 0 FROM json_each(?))`, batch.json);
    sql.exec(
      `INSERT INTO log (event_id, event_type, attempt, status, trigger, error, attempted_at)
       SELECT e.id, e.type, e.last_attempt, 'skipped', 'event', j.value ->> 1, ?2 FROM json_each(?1) j JOIN events e ON e.id = j.value ->> 0 ORDER BY j.key`,
      batch.json,
      now,
    );
  }
  const gap = gapOfEvents(
    sql,
    skipped.map(([id]) => id as string),
  );
  return { queued: queued.length, through: taken.at(-1)?.event.seq ?? null, full, gap };
}

/**
 * The deliveries due at `now` (ms), oldest due first, leaving out `busy` ones, those a
 * disable's skip still has to end (id ≤ `skipped`: `skipMark`) and, when the registration
 * orders by course (`ordered`), those held behind an earlier delivery of their course
 * (`held`, walked through `queue_ready`) or whose course has a delivery `sent` (in flight or
 * its outcome not yet recorded: `startable`); at most `limit`.
 */
export function readDue(
  sql: SqlStorage,
  now: number,
  busy: readonly number[],
  limit: number,
  skipped = 0,
  ordered = false,
  sent: readonly number[] = busy,
): DueRow[] {
  if (limit <= 0) return [];
  return sql
    .exec<DueRow>(
      `SELECT q.id, q.event_id, q.event_type, q.trigger, q.attempts, q.requested, q.course, e.body FROM queue q ${ordered ? "INDEXED BY queue_ready" : ""} JOIN events e ON e.id = q.event_id
       WHERE ${startable(ordered, "q", "?5")}q.next_attempt_at <= ?1 AND q.id NOT IN (SELECT value FROM json_each(?2)) AND q.id > ?3
       ORDER BY q.next_attempt_at, q.id LIMIT ?4`,
      now,
      JSON.stringify(busy),
      skipped,
      limit,
      ...(ordered ? [JSON.stringify(sent)] : []),
    )
    .toArray();
}

/**
 * The earliest due time (ms) among deliveries not `busy` nor left to a skip (id ≤ `skipped`)
 * nor, when `ordered`, held behind an earlier one of their course or of a course with a
 * delivery `sent` (see `readDue`), or `null`. Read in `queue_due` (`queue_ready`) order, it stops at the first
 * such delivery (MIN() with a condition would read them all); the rows it passes are at most
 * the busy ones, their courses' (one each, or two behind a resend) and a skip step's worth.
 */
export function nextDueAt(sql: SqlStorage, busy: readonly number[], skipped = 0, ordered = false, sent: readonly number[] = busy): number | null {
  const first = sql
    .exec<{ t: number }>(
      `SELECT q.next_attempt_at AS t FROM queue q ${ordered ? "INDEXED BY queue_ready" : ""} WHERE ${startable(ordered, "q", "?3")}q.id NOT IN (SELECT value FROM json_each(?1)) AND q.id > ?2
       ORDER BY q.next_attempt_at, q.id LIMIT 1`,
      JSON.stringify(busy),
      skipped,
      ...(ordered ? [JSON.stringify(sent)] : []),
    )
    .toArray()[0];
  return first === undefined ? null : first.t;
}

/**
 * How many deliveries are due at `now` (ms), not held behind their course when `ordered`,
 * counted up to `cap` (a bounded read of `queue_due`, `queue_ready`).
 */
export function backlog(sql: SqlStorage, now: number, cap: number, ordered = false): number {
  return sql
    .exec<{ n: number }>(`SELECT COUNT(*) AS n FROM (SELECT 1 FROM queue WHERE ${ordered ? "held = 0 AND " : ""}next_attempt_at <= ? LIMIT ?)`, now, cap)
    .one().n;
}

/**
 * Queues `eventId` (kept in `events`) due at `now` (ms) with `trigger`; a delivery of it
 * already queued becomes due now instead (no second copy), its next attempt made for `trigger`
 * — also when an attempt of it is in flight: `requested` grows, and that attempt's outcome
 * leaves it due (`recordAttempt`), so one more attempt follows (docs/reference.md § "Resend").
 * A queued delivery a disable's skip has still to end (id ≤ `skipped`) ends `skipped` first,
 * and a new one is queued. A new row takes its course and place (`courseOf`): held behind
 * the queued deliveries of its course accepted before it, ahead of those after it
 * (docs/reference.md § "Event delivery", ordering). A retry it makes due now is due now in
 * the log too: the event's latest entry's `next_attempt_at` becomes `now`.
 */
export function enqueue(sql: SqlStorage, eventId: string, eventType: string, trigger: Trigger, now: number, skipped = 0): void {
  const left = sql.exec<{ id: number }>(`SELECT id FROM queue WHERE event_id = ? AND id <= ?`, eventId, skipped).toArray()[0];
  if (left) skipRows(sql, [left.id], now);
  sql.exec(
    `INSERT INTO queue (event_id, event_type, trigger, attempts, next_attempt_at, created_at, bytes, course, seq)
     VALUES (?1, ?2, ?3, 0, ?4, ?4, COALESCE((SELECT length(CAST(body AS BLOB)) FROM events WHERE id = ?1), 0), ${courseOf("?1")}, ${seqOf("?1")})
     ON CONFLICT (event_id) DO UPDATE SET next_attempt_at = MIN(next_attempt_at, ?4), trigger = ?3, requested = requested + 1`,
    eventId,
    eventType,
    trigger,
    now,
  );
  sql.exec(`UPDATE events SET ended = NULL WHERE id = ? AND ended IS NOT NULL`, eventId);
  // The retry its latest failed entry announced is replaced: the entry shows when the next
  // attempt became due (docs/reference.md § "Delivery log").
  sql.exec(RETRY_REPLACED_SQL, eventId, now);
}

/**
 * ?1 an event's id, ?2 when its next attempt became due (ms): its latest log entry, if it
 * announced a later retry, shows ?2 instead. One row found through `log_event_at`
 * (test/webhooks/resend-retry-time.test.ts checks the plan).
 */
export const RETRY_REPLACED_SQL = `UPDATE log SET next_attempt_at = ?2
   WHERE id = (SELECT id FROM log WHERE event_id = ?1 ORDER BY attempted_at DESC, id DESC LIMIT 1) AND next_attempt_at > ?2`;

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
  /** What the answer's `webhook-delivery` header asked (absent: nothing, or a value ignored). */
  control?: DeliveryControl;
}

/**
 * Records an attempt: a log row, and its delivery removed (succeeded, failed) or rescheduled
 * (pending: the schedule's wait from the attempt's end, lengthened by `jitter` ∈ [0, 1) × 10 %,
 * and no earlier than a 429/503's Retry-After). An outcome whose delivery is gone or was
 * advanced meanwhile is not recorded; one whose delivery was asked for again meanwhile (resend,
 * recover: `requested` grew) is recorded and leaves it due at once. A refused attempt (`o.refused`: never sent, the URL
 * policy in force refuses the URL) ends the delivery `failed`, and so does a non-2xx answer
 * carrying `webhook-delivery: abort-message` or `disable` (`o.control`: no retry).
 *
 * The log row's number is its event's next (`events.last_attempt`), taken in this step: an
 * event's entries are numbered 1, 2, … in the order they are recorded, across resends and
 * recovers, and an outcome never recorded (lost to a restart, or not recorded here) takes none.
 *
 * The row's `status` is the attempt's own outcome (docs/reference.md § "Delivery log"):
 * `succeeded`, or `failed` whether a retry follows (its `next_attempt_at` says when) or not.
 * A delivery that ends (its row deleted) lets the next queued one of its course go
 * (the trigger `queue_release`): the caller starts what became due. A success adds its delay
 * and duration to the latency histograms (latency.ts `recordLatency`) in the same step.
 *
 * @returns the attempt's outcome as logged, its number in the log (`attempt`), whether its
 *   delivery is due again at once (`again`) or ended (`ended`: its row deleted), or `null`
 *   when nothing was recorded.
 */
export function recordAttempt(
  sql: SqlStorage,
  o: Outcome,
  schedule: readonly number[],
  jitter: number,
): { status: "succeeded" | "failed"; attempt: number; again: boolean; ended: boolean } | null {
  // This delivery's place in the retry schedule (the queue row's own count).
  const attempt = o.row.attempts + 1;
  // A receiver's `webhook-delivery` (abort-message, disable) ends a delivery it did not accept.
  const verdict: AttemptVerdict =
    o.refused || (o.control !== undefined && !isSuccess(o.status))
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
  const status = verdict.status === "succeeded" ? "succeeded" : "failed";
  const { n: numbered, acceptedAt } = sql
    .exec<{ n: number; acceptedAt: number }>(
      `UPDATE events SET last_attempt = last_attempt + 1 WHERE id = ? RETURNING last_attempt AS n, accepted_at AS acceptedAt`,
      r.event_id,
    )
    .one();
  sql.exec(
    `INSERT INTO log (event_id, event_type, attempt, status, trigger, url, response_status, error, duration_ms, response_body, attempted_at, next_attempt_at)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    o.row.event_id,
    o.row.event_type,
    numbered,
    status,
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
  // A resend's delay would count from an acceptance long past, measuring when it was asked for.
  if (status === "succeeded" && o.durationMs !== null)
    recordLatency(sql, o.sentAt, r.trigger === "resend" ? null : o.sentAt + o.durationMs - acceptedAt, o.durationMs);
  return { status, attempt: numbered, again, ended: nextAttemptAt === null && !again };
}
