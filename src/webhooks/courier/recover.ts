/**
 * A courier's recover as durable, bounded work (docs/reference.md § "Recover";
 * docs/architecture.md § Bounded work and storage): the call counts what it will queue (up to
 * RECOVER_COUNT_CAP) and keeps a job in the courier's KV (`recover`) with its window and
 * position; each step — the call's own first, then one per alarm — reads at most
 * RECOVER_CHUNK queue rows (those waiting for a retry made due now), then queues at most
 * RECOVER_CHUNK ended events again while the queue is down to half its bound. Synchronous SQL
 * inside the courier's steps.
 */
import { RECOVER_COUNT_CAP } from "../../lib/limits";
import type { Trigger } from "../rpc";
import { type RecoverPosition, toRecover } from "./attempt-log";
import { drained, enqueue, queueLoad } from "./queue";

/** Queue rows read, and events queued again, per recover step at most (docs/architecture.md, the work table). */
const RECOVER_CHUNK = 200;

/** The start of the acceptance order: a recover's events walk begins after it. */
const START: RecoverPosition = [Number.MIN_SAFE_INTEGER, 0];
const TRIGGER: Trigger = "recover";

/**
 * A recover under way, as kept in the courier's KV (`recover`). Instants in ms. It first walks
 * the queue rows with id in (`queueFrom`, `through`] — the queue as it was at the call — making
 * those waiting for a retry due now; then (`queueFrom` ≥ `through`) the ended events after
 * `from` in acceptance order.
 */
export interface RecoverJob {
  since: number;
  until: number;
  through: number;
  queueFrom: number;
  from: RecoverPosition;
}

/** What a recover's answer says: the events it will queue, counted up to RECOVER_COUNT_CAP, and whether that count is all of them. */
export interface RecoverCount {
  queued: number;
  exact: boolean;
}

/** `countRecover`'s statements (exported for their query-plan test): ?1 since, ?2 until, then ?3 the cap (ended) or ?3 now, ?4 the cap (waiting). */
export const COUNT_ENDED_SQL = `SELECT COUNT(*) AS n FROM (SELECT 1 FROM events e INDEXED BY events_ended
   WHERE e.ended IS NOT NULL AND e.accepted_at >= ?1 AND e.accepted_at < ?2 AND NOT EXISTS (SELECT 1 FROM queue q WHERE q.event_id = e.id) LIMIT ?3)`;
export const COUNT_WAITING_SQL = `SELECT COUNT(*) AS n FROM (SELECT 1 FROM queue q INDEXED BY queue_due JOIN events e ON e.id = q.event_id
   WHERE q.next_attempt_at > ?3 AND q.attempts > 0 AND e.accepted_at >= ?1 AND e.accepted_at < ?2 LIMIT ?4)`;

/**
 * The queue walk of `recoverStep` (exported for its query-plan test): ?1/?2 the ids after
 * and up to which to read, ?3 now, ?4/?5 the window, ?6 the chunk; `waiting` marks the rows
 * of the window waiting for a retry.
 */
export const RECOVER_QUEUE_SQL = `SELECT q.id, q.event_id, q.event_type,
          q.attempts > 0 AND q.next_attempt_at > ?3 AND e.accepted_at >= ?4 AND e.accepted_at < ?5 AS waiting
     FROM queue q LEFT JOIN events e ON e.id = q.event_id WHERE q.id > ?1 AND q.id <= ?2 ORDER BY q.id LIMIT ?6`;

/**
 * Counts, at `now` (ms), what a recover of [since, until) will queue: retained events whose
 * delivery ended failed or skipped and is not queued (index `events_ended`), and queued
 * deliveries waiting for a retry (index `queue_due`, after `now`), of events accepted in the
 * window; each read stops after RECOVER_COUNT_CAP + 1 rows, so the count never walks a long
 * window.
 */
function countRecover(sql: SqlStorage, since: number, until: number, now: number): RecoverCount {
  const cap = RECOVER_COUNT_CAP + 1;
  const ended = sql.exec<{ n: number }>(COUNT_ENDED_SQL, since, until, cap).one().n;
  const waiting = sql.exec<{ n: number }>(COUNT_WAITING_SQL, since, until, now, cap).one().n;
  const total = ended + waiting;
  return { queued: Math.min(total, RECOVER_COUNT_CAP), exact: total <= RECOVER_COUNT_CAP };
}

/**
 * The job of a recover of [since, until) called while `running` (or `null`) is under way:
 * one job over the smallest window covering both, walked again from its start (what the
 * earlier call queued is queued or delivered by then, so it is not queued twice), and the
 * queue walked again up to its last id now (`lastQueueId`).
 */
function startRecover(running: RecoverJob | null, since: number, until: number, lastQueueId: number): RecoverJob {
  return {
    since: running === null ? since : Math.min(running.since, since),
    until: running === null ? until : Math.max(running.until, until),
    through: lastQueueId,
    queueFrom: 0,
    from: START,
  };
}

/**
 * One step of `job` at `now` (ms), inside the caller's synchronous step: at most
 * RECOVER_CHUNK queue rows read, those waiting for a retry made due now (`enqueue`, as a
 * resend does); then, once the queue is walked, at most RECOVER_CHUNK ended events queued
 * again, only while the queue is down to half its bound (`drained`), so that a recover never
 * takes the queue past its bound. `skipped`: a disable's skip mark (`enqueue`).
 *
 * @returns the job left (`null`: done) and whether its next step can run at once (`ready`;
 *   else it waits for the queue to drain).
 */
function recoverStep(sql: SqlStorage, job: RecoverJob, now: number, skipped: number): { job: RecoverJob | null; ready: boolean } {
  let left = job;
  if (left.queueFrom < left.through) {
    const rows = sql
      .exec<{ id: number; event_id: string; event_type: string; waiting: number }>(
        RECOVER_QUEUE_SQL,
        left.queueFrom,
        left.through,
        now,
        left.since,
        left.until,
        RECOVER_CHUNK,
      )
      .toArray();
    for (const row of rows) if (row.waiting) enqueue(sql, row.event_id, row.event_type, TRIGGER, now, skipped);
    const last = rows.at(-1);
    left = { ...left, queueFrom: rows.length < RECOVER_CHUNK || last === undefined ? left.through : last.id };
    if (left.queueFrom < left.through) return { job: left, ready: true };
  }
  if (!hasRoom(sql)) return { job: left, ready: false };
  const chunk = toRecover(sql, left.since, left.until, left.from, RECOVER_CHUNK);
  for (const event of chunk.events) enqueue(sql, event.id, event.type, TRIGGER, now, skipped);
  if (chunk.next === null) return { job: null, ready: false };
  return { job: { ...left, from: chunk.next }, ready: hasRoom(sql) };
}

/**
 * A courier's recover under way, kept in its KV (`recover`: a `RecoverJob`), every method run
 * inside one of the courier's synchronous steps but `later`. `go` arms the courier's alarm at
 * once (its next run takes the next step): called when a step leaves one that can run at once.
 */
export class Recovery {
  constructor(
    private readonly storage: DurableObjectStorage,
    private readonly go: () => void,
  ) {}

  /** Whether a recover is under way. */
  get pending(): boolean {
    return this.storage.kv.get("recover") !== undefined;
  }

  /**
   * A recover of [since, until) at `now` (ms): counted (`countRecover`), kept (one under way
   * is joined: `startRecover`), its first step taken. `skipped`: a disable's skip mark.
   *
   * @returns what it will queue (the answer's body).
   */
  start(since: number, until: number, now: number, skipped: number): RecoverCount {
    const sql = this.storage.sql;
    const count = countRecover(sql, since, until, now);
    const running = (this.storage.kv.get("recover") as RecoverJob | undefined) ?? null;
    this.step(now, skipped, startRecover(running, since, until, lastQueueId(sql)));
    return count;
  }

  /**
   * One step of the recover under way (`job`) at `now` (ms) (`recoverStep`): the job left is
   * kept (`go` if its next step can run at once), or dropped once done. `skipped`: as `start`.
   */
  step(now: number, skipped: number, job = (this.storage.kv.get("recover") as RecoverJob | undefined) ?? null): void {
    if (job === null) return;
    const next = recoverStep(this.storage.sql, job, now, skipped);
    if (next.job === null) this.storage.kv.delete("recover");
    else this.storage.kv.put("recover", next.job);
    if (next.job !== null && next.ready) this.go();
  }

  /** Drops the recover under way (a disable; a close drops KV `recover` with the rest). */
  drop(): void {
    this.storage.kv.delete("recover");
  }

  /** Outcomes were recorded: a recover waiting for room goes on at once (`go`) if the queue is down to half (a bounded read). */
  later(): void {
    if (this.pending && hasRoom(this.storage.sql)) this.go();
  }
}

/** Whether a recover may queue more now: the queue is down to half its bound (queue.ts `drained`, a bounded read). */
function hasRoom(sql: SqlStorage): boolean {
  return drained(queueLoad(sql));
}

/** The last queue id (0: the queue is empty): where a recover's walk of the queue ends. One read of the primary key. */
function lastQueueId(sql: SqlStorage): number {
  return sql.exec<{ id: number | null }>(`SELECT MAX(id) AS id FROM queue`).one().id ?? 0;
}
