/**
 * Finished attempts, buffered and written to the hub's queue and delivery log in batches
 * (API.md § "Event delivery": retries, 410, Retry-After; the log of GET …/deliveries).
 */
import type { Attempt, Books } from "./books";
import { judgeAttempt, parseRetryAfter } from "./delivery";
import type { Platform, Timer } from "./platform";

/** Outcomes are written at most this long after the attempt ends (ms), or … */
const FLUSH_AFTER_MS = 10;
/** … as soon as this many are waiting: one storage commit for many attempts. */
const FLUSH_BATCH = 64;

/** A finished attempt, waiting to be written. Instants in ms. */
export interface Outcome {
  attempt: Attempt;
  /** HTTP status; `undefined` for network errors and timeouts. */
  status: number | undefined;
  error: string | null;
  /** The raw `Retry-After` of a 429/503 answer, if any. */
  retryAfter: string | null;
  sentAt: number;
  finishedAt: number;
}

/** The buffer of finished attempts and their writing (see `flush`). */
export class Outcomes {
  private buffer: Outcome[] = [];
  private timer: Timer | null = null;

  /**
   * @param schedule seconds to wait after failed attempt n (`schedule[n - 1]`).
   * @param afterTimedFlush called after a flush that the 10 ms timer started (the dispatcher
   *   then starts what became free).
   */
  constructor(
    private readonly ctx: DurableObjectState,
    private readonly platform: Platform,
    private readonly books: Books,
    private readonly schedule: readonly number[],
    private readonly afterTimedFlush: () => void,
  ) {}

  /** Buffers an outcome (its delivery stays busy until written). */
  add(outcome: Outcome): void {
    this.buffer.push(outcome);
    if (this.buffer.length >= FLUSH_BATCH) this.flush();
    else
      this.timer ??= this.platform.setTimer(() => {
        this.timer = null;
        this.flush();
        this.afterTimedFlush();
      }, FLUSH_AFTER_MS);
  }

  /**
   * Writes the buffered outcomes in one synchronous step (one storage commit for many
   * attempts): per attempt a log row, then the delivery is removed (succeeded / failed) or
   * rescheduled (pending; a 429/503's Retry-After pushes it later). An outcome whose delivery
   * is gone (registration deleted) or was already advanced by another run is dropped.
   * Outcomes not yet written when the object stops are lost and sent again (at least once).
   */
  flush(): void {
    this.timer?.cancel();
    this.timer = null;
    if (this.buffer.length === 0) return;
    const batch = this.buffer;
    this.buffer = [];
    try {
      this.ctx.storage.transactionSync(() => this.record(batch));
    } finally {
      for (const { attempt } of batch) this.books.setBusy(attempt.deliveryId, attempt.webhookId, false);
    }
  }

  /**
   * The batch's writes in three statements: deliveries done (succeeded / failed) deleted,
   * those pending rescheduled — each only if still at this attempt (not deleted, not
   * advanced by another run) — then a log row for each delivery that changed.
   */
  private record(batch: Outcome[]): void {
    const sql = this.ctx.storage.sql;
    const done: [number, number][] = [];
    const pending: [number, number, number][] = [];
    const logged = new Map<number, unknown[]>();
    for (const { attempt, status, error, retryAfter, sentAt, finishedAt } of batch) {
      const verdict = judgeAttempt(status, attempt.attempt, this.schedule, parseRetryAfter(retryAfter, finishedAt));
      // Each wait counts from the end of the failed attempt.
      const nextAttemptAt = verdict.status === "pending" ? finishedAt + verdict.retryInMs : null;
      if (nextAttemptAt === null) done.push([attempt.deliveryId, attempt.attempt - 1]);
      else pending.push([attempt.deliveryId, attempt.attempt - 1, nextAttemptAt]);
      const row = [attempt.webhookId, attempt.eventId, attempt.eventType, attempt.attempt, verdict.status, status ?? null, error, sentAt, nextAttemptAt];
      logged.set(attempt.deliveryId, row);
    }
    const changed = new Set<number>();
    if (done.length > 0) {
      const rows = sql.exec<{ id: number }>(
        `DELETE FROM deliveries WHERE id IN (
           SELECT d.id FROM json_each(?) j JOIN deliveries d ON d.id = j.value ->> 0 AND d.attempts = j.value ->> 1)
         RETURNING id`,
        JSON.stringify(done),
      );
      for (const { id } of rows) changed.add(id);
    }
    if (pending.length > 0) {
      const rows = sql.exec<{ id: number }>(
        `UPDATE deliveries SET attempts = deliveries.attempts + 1, next_attempt_at = j.value ->> 2
         FROM json_each(?) j WHERE deliveries.id = j.value ->> 0 AND deliveries.attempts = j.value ->> 1
         RETURNING deliveries.id AS id`,
        JSON.stringify(pending),
      );
      for (const { id } of rows) changed.add(id);
    }
    if (changed.size === 0) return;
    sql.exec(
      `INSERT INTO attempts (webhook_id, event_id, event_type, attempt, status, response_status, error, attempted_at, next_attempt_at)
       SELECT value ->> 0, value ->> 1, value ->> 2, value ->> 3, value ->> 4, value ->> 5, value ->> 6, value ->> 7, value ->> 8
       FROM json_each(?)`,
      JSON.stringify(batch.filter((o) => changed.has(o.attempt.deliveryId)).map((o) => logged.get(o.attempt.deliveryId))),
    );
  }
}
