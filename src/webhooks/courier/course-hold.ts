/**
 * Ordering per course in a courier's queue (docs/reference.md § "Event delivery", ordering;
 * docs/architecture.md § Bounded work and storage): the course and place a queue row takes,
 * which rows may start, and the bounds of the rows held behind a failing head — per course
 * and per registration — kept apart from the queue's bound, so that one course's failing
 * head never takes the room of other courses' events.
 */

import type { Batch } from "../../lib/batches";

/**
 * The course key a queue row of the event whose id is `id` (an SQL expression) takes: its
 * copy's `data.course.id` for an event of the hub's log (a `seq`) that is not a `webhook.*`
 * one; `NULL` otherwise (never held). Read from `events` by its primary key.
 */
export const courseOf = (id: string) =>
  `(SELECT CASE WHEN e.seq IS NULL OR e.type LIKE 'webhook.%' THEN NULL ELSE e.body ->> '$.data.course.id' END FROM events e WHERE e.id = ${id})`;

/** The log position of the event whose id is `id` (an SQL expression). */
export const seqOf = (id: string) => `(SELECT e.seq FROM events e WHERE e.id = ${id})`;

/**
 * The conditions that leave out, when the registration orders by course (`ordered`),
 * deliveries held behind an earlier one of their course (`held`: the partial index
 * `queue_ready`) and those whose course has a delivery sent (`sent`: the SQL parameter of
 * the JSON of the ids in flight or whose outcome is not yet recorded) — an earlier event
 * resent while a later one is in flight waits for that attempt to end; one being signed is
 * not sent yet, and waits itself (`heldBack`). `q` is the queue's alias.
 */
export const startable = (ordered: boolean, q: string, sent: string): string =>
  ordered
    ? `${q}.held = 0 AND (${q}.course IS NULL OR ${q}.course NOT IN
         (SELECT b.course FROM queue b WHERE b.id IN (SELECT value FROM json_each(${sent})) AND b.course IS NOT NULL)) AND `
    : "";

/** The log's `error` of an event its course's full backlog left unqueued (docs/reference.md § "Delivery log"). */
export const COURSE_FULL_ERROR = "course backlog full";

/**
 * Deliveries held behind one course's failing head at most, and bytes of their bodies (plus
 * one event): a course whose head keeps failing queues 1,000 later events, the rest end
 * `skipped` (COURSE_FULL_ERROR) until it flows again (recover queues them again).
 */
const COURSE_HELD_ROWS = 1_000;
const COURSE_HELD_BYTES = 16_000_000;
/** Deliveries held behind failing heads in the whole registration at most (several failing courses), and their bytes. */
const HELD_ROWS = 5_000;
const HELD_BYTES = 64_000_000;

/** Rows and bytes of queued bodies. */
export type Load = { rows: number; bytes: number };

/**
 * Whether the course of queue row `q` (an alias) has a failing head: its first queued
 * delivery (by `seq`, the one not held) has failed at least once and waits for its retry.
 * One probe of `queue_course`.
 */
export const headFailing = (q: string) => `(SELECT h.attempts FROM queue h WHERE h.course = ${q}.course ORDER BY h.seq LIMIT 1) > 0`;

/**
 * The deliveries held behind a failing head, of `course` (`null`: of the whole registration,
 * a walk of the held rows cut at `cap` of them behind failing heads), through the covering
 * partial index `queue_held`.
 */
function heldLoad(sql: SqlStorage, course: string | null, cap: number): Load {
  const where = course === null ? `AND ${headFailing("q")}` : "AND q.course = ?2";
  return sql
    .exec<Load>(
      `SELECT COUNT(*) AS rows, TOTAL(bytes) AS bytes FROM (SELECT q.bytes FROM queue q INDEXED BY queue_held WHERE q.held = 1 ${where} LIMIT ?1)`,
      cap,
      ...(course === null ? [] : [course]),
    )
    .one();
}

/**
 * The course key of each event of hand-over `batches` (JSON arrays `[id, type, body, …]`
 * with the body spliced in), in order, as `courseOf` would read it from the event's copy.
 */
export function coursesOf(sql: SqlStorage, batches: readonly Batch<unknown>[]): (string | null)[] {
  return batches.flatMap((batch) =>
    sql
      .exec<{ course: string | null }>(
        `SELECT CASE WHEN value ->> 1 LIKE 'webhook.%' THEN NULL ELSE value -> 2 ->> '$.data.course.id' END AS course FROM json_each(?) ORDER BY key`,
        batch.json,
      )
      .toArray()
      .map((r) => (r.course === null ? null : String(r.course))),
  );
}

/**
 * What one hand-over may hold behind failing course heads: reads each course's held load
 * once (and the registration's), then counts what the hand-over adds. Inside the caller's step.
 */
export class HoldRoom {
  /** Whether each course seen has a failing head (its next events take the held bounds' room). */
  private readonly failing = new Map<string, boolean>();
  /** Each course's held load, read when it first holds one, with what this hand-over added. */
  private readonly loads = new Map<string, Load>();
  private all: Load | null = null;

  constructor(private readonly sql: SqlStorage) {}

  /**
   * Whether `course`'s first queued delivery has failed and waits for its retry: its next
   * events are held behind it for as long as it fails. One index probe per course.
   */
  failingHead(course: string): boolean {
    let failing = this.failing.get(course);
    if (failing === undefined) {
      failing = (this.sql.exec<{ a: number }>(`SELECT attempts AS a FROM queue WHERE course = ? ORDER BY seq LIMIT 1`, course).toArray()[0]?.a ?? 0) > 0;
      this.failing.set(course, failing);
    }
    return failing;
  }

  /** Takes room for one held delivery of `course` of `bytes`: false when its course or the registration is at its bound. */
  hold(course: string, bytes: number): boolean {
    const own = this.loads.get(course) ?? heldLoad(this.sql, course, COURSE_HELD_ROWS + 1);
    this.all ??= heldLoad(this.sql, null, HELD_ROWS + 1);
    this.loads.set(course, own);
    if (own.rows >= COURSE_HELD_ROWS || own.bytes >= COURSE_HELD_BYTES || this.all.rows >= HELD_ROWS || this.all.bytes >= HELD_BYTES) return false;
    this.loads.set(course, { rows: own.rows + 1, bytes: own.bytes + bytes });
    this.all = { rows: this.all.rows + 1, bytes: this.all.bytes + bytes };
    return true;
  }
}

/**
 * Whether delivery `id` may not start now in a registration that orders by course: gone from
 * the queue, or held behind an earlier delivery of its course (`held`, set by `queue_hold`
 * when a resend or recover put an earlier event ahead). One read by primary key.
 */
export function heldBack(sql: SqlStorage, id: number): boolean {
  const row = sql.exec<{ held: number }>(`SELECT held FROM queue WHERE id = ?`, id).toArray()[0];
  return row === undefined || row.held !== 0;
}

/**
 * Whether an attempt of `course` just ended with a later delivery of its course waiting
 * behind it (its outcome is then recorded at once, so that the next starts: docs/reference.md
 * § "Event delivery", ordering). One probe of `queue_held`.
 */
export function awaited(sql: SqlStorage, course: string | null): boolean {
  return course !== null && sql.exec(`SELECT 1 FROM queue INDEXED BY queue_held WHERE held = 1 AND course = ? LIMIT 1`, course).toArray().length > 0;
}
