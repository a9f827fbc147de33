/**
 * The hub's dispatcher: which due deliveries start, in what order, and what their outcomes
 * do to the queue and the log (API.md § "Event delivery"; DESIGN.md § "Invariants"). The
 * SchoolHub owns it and is its only caller; it works on the hub's own SQLite storage.
 *
 * Slots. Each attempt is sent by its registration's courier (courier.ts), from the courier's
 * own I/O context, so a registration has COURIER_SLOTS (5) requests waiting for headers of
 * its own (and COURIER_QUEUE more attempts ready to go) and a hanging receiver holds only
 * those. The hub itself only makes Durable Object calls, budgeted as if they counted toward
 * its context's 6 (couriers.ts: at most 5 hand-overs under way, the sixth kept for a
 * delete's close). `fill` visits registrations round-robin from a rotating start, giving
 * each at most its free courier slots per hand-over, so every registration gets its turn at
 * the hub's slots.
 *
 * Invariants. `fill` re-reads each delivery with its registration and hands the signed
 * attempts to the courier in one synchronous step (the call is under way when it returns;
 * nothing starts after a delete's tombstone). The hub remembers in memory what is in flight,
 * so a second alarm run never starts an attempt twice; a new instance sends again whatever
 * was in flight (at least once). Outcomes are written in batches (one storage commit for up
 * to 64 attempts, at most 10 ms late), only if the delivery is still where it was.
 */
import { type Attempt, Books } from "./books";
import { Couriers } from "./couriers";
import { parseRetrySchedule, parseTimeoutMs, secretKey, signedHeaders } from "./delivery";
import { Outcomes } from "./outcomes";
import type { Platform, Timer } from "./platform";
import { COURIER_CLOSED, COURIER_NONE, COURIER_OPEN, pruneLog } from "./schema";
import { type AttemptReport, COURIER_QUEUE, COURIER_SLOTS, type SendOrder, type SendReceipt } from "./types";

/**
 * An attempt not reported this long after its latest possible end (hand-over + 2 timeouts: a
 * queued attempt is sent within one timeout, when the request ahead of it ends) is lost (ms).
 */
export const BACKSTOP_GRACE_MS = 5_000;
/** While attempts are in flight, lost ones are looked for this often (ms). */
const BACKSTOP_SWEEP_MS = 1_000;
/** A registration whose courier answered `busy` is left alone this long (ms). */
const BUSY_PAUSE_MS = 1_000;
/** While attempts are in flight the alarm stays armed (a watchdog for restarts) this far ahead (ms). */
const WATCHDOG_SLACK_MS = 60_000;
/** A delete whose close call failed is retried by the alarm this much later (ms). */
const CLOSE_RETRY_MS = 10_000;
/** When idle with a log to prune, the alarm comes back after this long (ms). */
const PRUNE_INTERVAL_MS = 24 * 60 * 60 * 1000;

/** A due delivery as `fill` reads it, with its event and registration. */
type DueRow = { id: number; event_id: string; attempts: number; type: string; body: string; url: string; secret: string };

/** The SchoolHub's dispatcher (see the module comment). */
export class Dispatcher {
  private readonly sql: SqlStorage;
  /** One attempt's timeout in ms; WEBHOOK_TIMEOUT_MS. */
  private readonly timeoutMs: number;
  private readonly books = new Books();
  private readonly couriers: Couriers;
  private readonly outcomes: Outcomes;
  /** HMAC keys by registration id (decoded once); registrations paused after a `busy`. */
  private readonly keys = new Map<string, Uint8Array>();
  private readonly paused = new Map<string, number>();
  /** Active registration ids, oldest first (cache; `null` = reload); registrations known COURIER_OPEN. */
  private hookIds: string[] | null = null;
  private readonly openCouriers = new Set<string>();
  private nextFillStart = 0;
  /** The next look for lost attempts, while any are in flight. */
  private sweep: Timer | null = null;
  /** The alarm as last set by this instance (`null`: none or already fired; `undefined`: unknown). */
  private alarmAt: number | null | undefined = undefined;
  /** Callers of `whenIdle()` waiting for the in-flight count to reach zero. */
  private idleWaiters: (() => void)[] = [];

  constructor(
    private readonly ctx: DurableObjectState,
    env: Env,
    private readonly platform: Platform,
  ) {
    this.sql = ctx.storage.sql;
    this.timeoutMs = parseTimeoutMs(env.WEBHOOK_TIMEOUT_MS);
    const schedule = parseRetrySchedule(env.WEBHOOK_RETRY_SCHEDULE);
    this.outcomes = new Outcomes(ctx, platform, this.books, schedule, () => this.afterChange());
    this.couriers = new Couriers(env, platform, ctx.id.toString(), () => this.afterChange());
  }

  // -------------------------------------------------------------------------------------
  // Queue and registrations (called inside the hub's synchronous steps)

  /** Queues deliveries, `[eventId, webhookId]` pairs due at `now`, in one statement; marks their couriers in use. */
  queue(pairs: [string, string][], now: number): void {
    if (pairs.length === 0) return;
    const insert = `INSERT OR IGNORE INTO deliveries (event_id, webhook_id, attempts, next_attempt_at, created_at)`;
    this.sql.exec(`${insert} SELECT value ->> 0, value ->> 1, 0, ?2, ?2 FROM json_each(?1)`, JSON.stringify(pairs), now);
    for (const [, webhookId] of pairs) {
      if (this.openCouriers.has(webhookId)) continue;
      this.sql.exec(`UPDATE webhooks SET courier = ? WHERE id = ? AND courier = ?`, COURIER_OPEN, webhookId, COURIER_NONE);
      this.openCouriers.add(webhookId);
    }
  }

  /** The set of active registrations changed. */
  invalidate(): void {
    this.hookIds = null;
  }

  /** A registration was just deleted: its attempts in flight are dropped, unrecorded. */
  forget(webhookId: string): void {
    this.hookIds = null;
    this.keys.delete(webhookId);
    this.paused.delete(webhookId);
    for (const attempt of this.books.of(webhookId)) this.drop(attempt);
    if (this.books.count === 0) this.settle();
  }

  /**
   * Closes a deleted registration's courier (see courier.ts) and records it. A close already
   * under way is joined. Rejects if the courier cannot be reached; the alarm retries.
   */
  async closeCourier(webhookId: string): Promise<void> {
    try {
      await this.couriers.close(webhookId);
    } catch (err) {
      this.armAlarm(this.platform.now() + CLOSE_RETRY_MS);
      throw err;
    }
    this.sql.exec(`UPDATE webhooks SET courier = ? WHERE id = ?`, COURIER_CLOSED, webhookId);
  }

  /** The close under way for `webhookId`, if any. */
  closing(webhookId: string): Promise<void> | undefined {
    return this.couriers.closing(webhookId);
  }

  // -------------------------------------------------------------------------------------
  // Dispatch

  /** After queuing: join the running dispatch, or set the alarm to start one now. */
  async wake(): Promise<void> {
    if (this.books.count > 0) return this.fill();
    const now = this.platform.now();
    this.alarmAt = now;
    await this.ctx.storage.setAlarm(now);
  }

  /**
   * The alarm: prunes, retries unfinished closes, starts what is due; when nothing is in
   * flight, re-arms itself (`settle`). Safe to run more than once, even concurrently.
   */
  alarm(): void {
    this.alarmAt = null;
    pruneLog(this.sql, this.platform.now());
    const unclosed = this.sql.exec<{ id: string }>(`SELECT id FROM webhooks WHERE deleted_at IS NOT NULL AND courier = ?`, COURIER_OPEN).toArray();
    for (const { id } of unclosed) this.closeCourier(id).catch((err) => console.error("SchoolHub: closing a courier failed", err));
    this.fill();
    if (this.books.count === 0) this.settle();
  }

  /** Resolves when no attempt is in flight and every outcome is written. */
  whenIdle(): Promise<void> {
    if (this.books.count === 0) this.settle();
    if (this.books.count === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  /** Earliest due time of the queue (ms), or `null` when empty. */
  nextDueAt(): number | null {
    return this.sql.exec<{ t: number | null }>(`SELECT MIN(next_attempt_at) AS t FROM deliveries`).one().t;
  }

  /**
   * Hands due deliveries to their couriers while slots are free, visiting registrations
   * round-robin from a rotating start. Synchronous and read-only (no storage write, so the
   * calls it starts are not held by the output gate), except for arming the watchdog alarm.
   */
  private fill(): void {
    if (!this.couriers.canHandOver()) return;
    this.hookIds ??= this.sql
      .exec<{ id: string }>(`SELECT id FROM webhooks WHERE deleted_at IS NULL ORDER BY created_at, id`)
      .toArray()
      .map((r) => r.id);
    const hooks = this.hookIds;
    if (hooks.length === 0) return;
    const now = this.platform.now();
    const start = this.nextFillStart++ % hooks.length;
    for (let i = 0; i < hooks.length && this.couriers.canHandOver(); i++) {
      const webhookId = hooks[(start + i) % hooks.length]!;
      if ((this.paused.get(webhookId) ?? 0) > now) continue;
      const free = COURIER_SLOTS + COURIER_QUEUE - this.books.inFlightFor(webhookId);
      if (free <= 0) continue;
      // The check before the attempts: each due delivery re-read with its registration (a
      // deleted registration or a dropped delivery yields no row), in this synchronous step.
      // Busy deliveries (in flight, or outcome not yet written) are still due: left out.
      const due = this.sql
        .exec<DueRow>(
          `SELECT d.id, d.event_id, d.attempts, e.type, e.body, w.url, w.secret
           FROM deliveries d
           JOIN webhooks w ON w.id = d.webhook_id AND w.deleted_at IS NULL
           JOIN events e ON e.id = d.event_id
           WHERE d.webhook_id = ? AND d.next_attempt_at <= ? AND d.id NOT IN (SELECT value FROM json_each(?))
           ORDER BY d.next_attempt_at, d.id LIMIT ?`,
          webhookId,
          now,
          JSON.stringify(this.books.busyOf(webhookId)),
          free,
        )
        .toArray();
      const orders = due.map((row) => this.prepare(webhookId, row, now));
      if (orders.length > 0) this.handOver(webhookId, orders, now);
    }
  }

  /** Signs a due delivery and books it as in flight. Part of `fill`'s synchronous step. */
  private prepare(webhookId: string, row: DueRow, now: number): SendOrder {
    let key = this.keys.get(webhookId);
    if (!key) {
      key = secretKey(row.secret);
      this.keys.set(webhookId, key);
    }
    const attempt: Attempt = {
      token: crypto.randomUUID(),
      deliveryId: row.id,
      webhookId,
      eventId: row.event_id,
      eventType: row.type,
      attempt: row.attempts + 1,
      handedAt: now,
      sentAt: null,
    };
    this.books.add(attempt);
    const headers = signedHeaders(key, row.event_id, Math.floor(now / 1000), row.body);
    return { deliveryId: row.id, token: attempt.token, url: row.url, headers, body: row.body };
  }

  /** Starts the hand-over call (synchronously: it is under way when this returns). */
  private handOver(webhookId: string, orders: SendOrder[], now: number): void {
    const receipt = this.couriers.handOver(webhookId, orders);
    this.sweep ??= this.platform.setTimer(() => this.findLost(), BACKSTOP_SWEEP_MS);
    const by = now + 2 * this.timeoutMs + BACKSTOP_GRACE_MS;
    if (this.alarmAt == null || this.alarmAt < now || this.alarmAt > by + WATCHDOG_SLACK_MS) this.armAlarm(by + WATCHDOG_SLACK_MS);
    // What comes next starts on the courier's reports (and when a hand-over slot frees).
    receipt.then(
      (r) => this.onReceipt(webhookId, r),
      (err: unknown) => this.onHandOverFailed(orders, err),
    );
  }

  private onReceipt(webhookId: string, receipt: SendReceipt): void {
    for (const { token, sentAt } of receipt.accepted) {
      const attempt = this.books.get(token);
      if (attempt && sentAt !== null) attempt.sentAt = sentAt;
    }
    for (const { token, reason } of receipt.refused) {
      const attempt = this.books.get(token);
      if (attempt) this.drop(attempt);
      if (reason === "busy") this.paused.set(webhookId, this.platform.now() + BUSY_PAUSE_MS);
    }
    if (receipt.refused.length > 0) this.afterChange();
  }

  private onHandOverFailed(orders: SendOrder[], err: unknown): void {
    const error = `courier unreachable: ${err instanceof Error ? err.message : String(err)}`;
    for (const order of orders) {
      const attempt = this.books.get(order.token);
      if (attempt) this.finish(attempt, undefined, error, null, attempt.handedAt, this.platform.now());
    }
    this.afterChange();
  }

  /** Attempts never reported (their courier restarted) are network errors, retried. */
  private findLost(): void {
    this.sweep = null;
    const now = this.platform.now();
    const waited = 2 * this.timeoutMs + BACKSTOP_GRACE_MS;
    const error = `network error: no answer reported within ${waited} ms`;
    for (const attempt of this.books.handedBefore(now - waited)) {
      this.finish(attempt, undefined, error, null, attempt.sentAt ?? attempt.handedAt, now);
    }
    if (this.books.count > 0) this.sweep = this.platform.setTimer(() => this.findLost(), BACKSTOP_SWEEP_MS);
    this.afterChange();
  }

  /** Outcomes from couriers (`SchoolHub.report`); a report that matches nothing is ignored. */
  report(reports: AttemptReport[]): void {
    for (const r of reports) {
      const attempt = this.books.get(r.token);
      if (attempt?.deliveryId !== r.deliveryId) continue;
      this.finish(attempt, r.status ?? undefined, r.error, r.retryAfter, r.sentAt, r.finishedAt);
    }
    this.afterChange();
  }

  /** Takes an attempt off the in-flight books and buffers its outcome. */
  private finish(attempt: Attempt, status: number | undefined, error: string | null, retryAfter: string | null, sentAt: number, finishedAt: number): void {
    this.books.remove(attempt);
    this.outcomes.add({ attempt, status, error, retryAfter, sentAt, finishedAt });
  }

  /** Takes an attempt off the books without an outcome (refused, or its registration deleted). */
  private drop(attempt: Attempt): void {
    this.books.remove(attempt);
    this.books.setBusy(attempt.deliveryId, attempt.webhookId, false);
  }

  /** After attempts ended: start the next ones; when nothing is in flight, settle. */
  private afterChange(): void {
    try {
      this.fill();
    } catch (err) {
      console.error("SchoolHub: starting the next attempts failed", err);
    }
    if (this.books.count === 0) this.settle();
  }

  private armAlarm(at: number | null): void {
    this.alarmAt = at;
    void (at === null ? this.ctx.storage.deleteAlarm() : this.ctx.storage.setAlarm(at));
  }

  /** Writes the buffered outcomes now (before reading the log). */
  flush(): void {
    this.outcomes.flush();
  }

  /**
   * Called when nothing is in flight: writes the buffered outcomes, starts anything that
   * became due meanwhile; if nothing started, re-arms the alarm and wakes `whenIdle()`
   * callers. Synchronous, so a `publish` cannot slip between the last check and the re-arm.
   */
  private settle(): void {
    this.outcomes.flush();
    this.fill();
    if (this.books.count > 0) return;
    this.sweep?.cancel();
    this.sweep = null;
    const now = this.platform.now();
    const next = this.nextDueAt();
    const unclosed = this.sql.exec(`SELECT 1 FROM webhooks WHERE deleted_at IS NOT NULL AND courier = ? LIMIT 1`, COURIER_OPEN).toArray().length > 0;
    if (next !== null || unclosed) {
      // Anything due now was just started; a row still due could not start (paused, or
      // the hub's slots taken): come back in a second rather than spin.
      const at = Math.max(next ?? Infinity, now + 1000);
      this.armAlarm(unclosed ? Math.min(at, now + CLOSE_RETRY_MS) : at);
    } else {
      const hasLog = this.sql.exec(`SELECT 1 FROM events LIMIT 1`).toArray().length > 0;
      this.armAlarm(hasLog ? now + PRUNE_INTERVAL_MS : null);
    }
    const waiters = this.idleWaiters;
    this.idleWaiters = [];
    for (const wake of waiters) wake();
  }
}
