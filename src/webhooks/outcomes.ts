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
      this.ctx.storage.transactionSync(() => {
        for (const outcome of batch) this.record(outcome);
      });
    } finally {
      for (const { attempt } of batch) this.books.setBusy(attempt.deliveryId, attempt.webhookId, false);
    }
  }

  private record({ attempt, status, error, retryAfter, sentAt, finishedAt }: Outcome): void {
    const sql = this.ctx.storage.sql;
    const verdict = judgeAttempt(status, attempt.attempt, this.schedule, parseRetryAfter(retryAfter, finishedAt));
    // Each wait counts from the end of the failed attempt.
    const nextAttemptAt = verdict.status === "pending" ? finishedAt + verdict.retryInMs : null;
    // Only if the delivery is still at this attempt (not deleted, not advanced by another run).
    const changed =
      nextAttemptAt === null
        ? sql.exec(`DELETE FROM deliveries WHERE id = ? AND attempts = ?`, attempt.deliveryId, attempt.attempt - 1)
        : sql.exec(
            `UPDATE deliveries SET attempts = ?, next_attempt_at = ? WHERE id = ? AND attempts = ?`,
            attempt.attempt,
            nextAttemptAt,
            attempt.deliveryId,
            attempt.attempt - 1,
          );
    if (changed.rowsWritten === 0) return;
    sql.exec(
      `INSERT INTO attempts (webhook_id, event_id, event_type, attempt, status, response_status, error, attempted_at, next_attempt_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      attempt.webhookId,
      attempt.eventId,
      attempt.eventType,
      attempt.attempt,
      verdict.status,
      status ?? null,
      error,
      sentAt,
      nextAttemptAt,
    );
  }
}
