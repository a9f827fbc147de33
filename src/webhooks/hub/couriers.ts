/**
 * The hub's side of its couriers (docs/architecture.md § "Invariants"): hand-overs of the event log by
 * cursor, config pushes, closes and forwarded calls — every one timed out, its stub replaced
 * after an error, an overloaded courier backed off. The hub's I/O context is budgeted as if
 * these calls counted toward its 6 requests waiting: at most HUB_CALL_SLOTS under way, of
 * which at most HANDOVER_SLOTS hand-overs, so that a DELETE's close finds a slot soon.
 */

import { describeError, logObjectCallFailure } from "../../lib/log";
import { IdleWaiters } from "../platform/idle-waiters";
import { isOverloaded, ObjectCalls } from "../platform/object-calls";
import type { Platform, Timer } from "../platform/platform";
import { BACKLOG_HIGH, type CourierConfig, courierFor, type Handover, type HandoverReceipt } from "../rpc";
import { courierConfig } from "./courier-config";
import { addressedAfter } from "./event-log";
import { clearMissed, owedMissed } from "./missed";
import { readWebhook, type UnclosedAt, unclosed } from "./registrations";
import { COURIER_CLOSED, COURIER_OPEN } from "./storage";

/** Durable Object calls the hub may have under way at once (its I/O context's 6). */
const HUB_CALL_SLOTS = 6;
/** Hand-overs under way at once: the sixth slot stays for closes and config pushes. */
const HANDOVER_SLOTS = HUB_CALL_SLOTS - 1;
/** Events one hand-over carries at most (and at most 1,000,000 bytes of them: `addressedAfter`). */
const HANDOVER_BATCH = 500;
/** While a courier still has BACKLOG_HIGH deliveries due, its next hand-over waits this long (ms). */
const HANDOVER_SPACING_MS = 100;
/** After a failed call, a courier is left alone this long, doubling up to the maximum (ms). */
const BACKOFF_MS = 250;
const MAX_BACKOFF_MS = 30_000;
/**
 * A courier whose queue reached its bound (`HandoverReceipt.full`) gets no hand-over for this
 * long (ms) unless it asks (`drained`): its ask, not polling, brings the next one; this is
 * the fallback if the ask is lost.
 */
const FULL_WAIT_MS = 60_000;
/** Unconfirmed closes one alarm run retries at most: the other call slots stay free for hand-overs. */
const CLOSES_PER_ALARM = 2;
/** An overloaded courier is left alone at least this long (ms). */
const OVERLOAD_BACKOFF_MS = 2_000;

/** The wait (ms) after a call's `n`-th failure in a row: BACKOFF_MS doubling, at most MAX_BACKOFF_MS. */
const backoffMs = (n: number): number => Math.min(MAX_BACKOFF_MS, BACKOFF_MS * 2 ** (n - 1));

/** What the hub gives its couriers to work with. */
export interface CourierHost {
  readonly sql: SqlStorage;
  readonly platform: Platform;
  readonly schoolId: () => string;
  readonly hubId: string;
  /** A call failed and should be tried again: the hub arms its alarm for `at` (ms). */
  retryAt(at: number): void;
}

/**
 * How one hand-over ended: acknowledged (`done`), taken only in part because the courier's
 * queue is at its bound (`full`), not made (`none`: nothing owed, or the registration is gone
 * or its courier closed), or `failed` (backed off, tried again).
 */
type HandOverEnd = "done" | "full" | "none" | "failed";

/** Calls from one hub instance to its registrations' couriers. */
export class Couriers {
  private readonly calls: ObjectCalls<ReturnType<typeof courierFor>>;
  private used = 0;
  private handing = 0;
  /** Calls waiting for a slot, in order. */
  private readonly waiters: (() => void)[] = [];
  /** Registrations with something to hand over; those with a hand-over under way. */
  private readonly dirty = new Set<string>();
  private readonly inFlight = new Map<string, Promise<HandOverEnd>>();
  /** No hand-over to these before the instant (ms): spacing or back-off. */
  private readonly notBefore = new Map<string, number>();
  private readonly failures = new Map<string, number>();
  private wakeTimer: Timer | null = null;
  /** Close calls under way, by registration (a second close joins the first). */
  private readonly closings = new Map<string, Promise<void>>();
  private readonly idleWaiters = new IdleWaiters();
  /** Where the last close `retryCloses` retried is (`unclosed`): the next run goes on after it. */
  private closesAfter: UnclosedAt = [-1, 0];

  constructor(
    env: Env,
    private readonly host: CourierHost,
  ) {
    this.calls = new ObjectCalls(host.platform, (webhookId) => courierFor(env, webhookId));
  }

  /** Registrations `ids` have something new: hand it over as soon as their turn comes. */
  mark(ids: Iterable<string>): void {
    for (const id of ids) this.dirty.add(id);
    this.pump();
  }

  /** Whether no hand-over is under way and none could start now (tests, benchmark). */
  get idle(): boolean {
    const now = this.host.platform.now();
    return this.inFlight.size === 0 && ![...this.dirty].some((id) => (this.notBefore.get(id) ?? 0) <= now);
  }

  /** Resolves when `idle`. */
  whenIdle(): Promise<void> {
    return this.idleWaiters.wait(this.idle);
  }

  /**
   * Starts hand-overs while slots are free, in turn. Synchronous: each reads the courier's
   * events and config and starts its call in one step.
   */
  pump(): void {
    const now = this.host.platform.now();
    let soonest = Infinity;
    for (const id of [...this.dirty]) {
      if (this.handing >= HANDOVER_SLOTS || this.used >= HUB_CALL_SLOTS || this.waiters.length > 0) break;
      if (this.inFlight.has(id)) continue;
      const wait = this.notBefore.get(id) ?? 0;
      if (wait > now) {
        soonest = Math.min(soonest, wait);
        continue;
      }
      this.dirty.delete(id);
      void this.handOver(id);
    }
    if (soonest < Infinity) this.wakeAt(soonest);
    this.idleWaiters.settle(() => this.idle);
  }

  private wakeAt(at: number): void {
    if (this.wakeTimer) return;
    this.wakeTimer = this.host.platform.setTimer(
      () => {
        this.wakeTimer = null;
        this.pump();
      },
      Math.max(0, at - this.host.platform.now()),
    );
  }

  /**
   * Hands over to `id`'s courier what was addressed to it when this was called (a later
   * stream is not waited for), and resolves when it acknowledged it, or when its queue is at
   * its bound (the rest stays in the hub: `heldFor`), or when the registration is gone.
   * Before a resend or recover, so that the courier knows the events the hub addressed to it.
   * Its calls wait for a slot of their own, like a forwarded call; at most one hand-over to
   * `id` is under way. Each round moves the acknowledged cursor on or ends the wait, so it
   * makes at most one call per hand-over batch owed at the start.
   *
   * @throws if this flush's own hand-over fails (an older failure does not count).
   */
  async flush(id: string): Promise<void> {
    const target = this.host.sql.exec<{ seq: number | null }>(`SELECT MAX(seq) AS seq FROM targets WHERE webhook_id = ?`, id).one().seq ?? 0;
    for (;;) {
      const under = this.inFlight.get(id);
      if (under) {
        if ((await under) === "full") return;
        continue;
      }
      const row = readWebhook(this.host.sql, id);
      if (!row || row.acked_seq >= target) return;
      this.dirty.delete(id);
      this.notBefore.delete(id);
      const end = await this.handOver(id, true);
      if (end === "failed") throw new Error(`courier ${id} could not be reached`);
      if (end !== "done") return;
    }
  }

  /**
   * Whether event `eventId` is addressed to `id` and still held by the hub (after the
   * courier's acknowledged cursor: not handed over yet, its queue at its bound). Index reads:
   * the events' id, the targets' key.
   */
  heldFor(id: string, eventId: string): boolean {
    return (
      this.host.sql
        .exec(
          `SELECT 1 FROM events e JOIN targets t ON t.webhook_id = ?1 AND t.seq = e.seq
           WHERE e.id = ?2 AND t.seq > (SELECT acked_seq FROM webhooks WHERE id = ?1)`,
          id,
          eventId,
        )
        .toArray().length > 0
    );
  }

  /**
   * Registration `id`'s courier drained its queue to half after its bound left events here
   * (`SchoolHub.drained`): its next hand-over starts as soon as a slot is free. Idempotent.
   */
  drained(id: string): void {
    this.notBefore.delete(id);
    this.mark([id]);
  }

  /**
   * Wakes the couriers `ids` (a new hub instance: their alarms may have been lost), each call
   * in a slot of its own; a call that fails is tried again, backed off from BACKOFF_MS
   * doubling to MAX_BACKOFF_MS, until it succeeds or the registration is gone — one call per
   * courier per try.
   */
  wake(ids: readonly string[], failures = 0): void {
    for (const id of ids) {
      this.withSlot(() => this.calls.call(id, (courier) => courier.wake())).catch((err: unknown) => {
        const n = failures + 1;
        const wait = backoffMs(n);
        logObjectCallFailure({ from: "hub", webhookId: id, call: "wake", failures: n, retryInMs: wait, error: describeError(err).error });
        this.host.platform.setTimer(() => {
          if (readWebhook(this.host.sql, id)) this.wake([id], n);
        }, wait);
      });
    }
  }

  /** The hand-over `id`'s courier is owed now (events after its cursor, or a newer config), or `null`. */
  private owed(id: string): { handover: Handover; full: boolean } | null {
    const row = readWebhook(this.host.sql, id);
    if (!row) return null;
    const { events, more } = addressedAfter(this.host.sql, id, row.acked_seq, HANDOVER_BATCH);
    const missed = owedMissed(this.host.sql, id);
    if (events.length === 0 && row.courier_version >= row.version && missed === undefined) return null;
    if (row.courier !== COURIER_OPEN) this.host.sql.exec(`UPDATE webhooks SET courier = ? WHERE id = ?`, COURIER_OPEN, id);
    const config = courierConfig(row, this.host.schoolId(), this.host.hubId);
    return { handover: { config, events, upTo: events.at(-1)?.seq ?? row.acked_seq, ...(missed && { missed }) }, full: more };
  }

  /**
   * One hand-over to `id`'s courier: what is addressed to it after its acknowledged cursor,
   * read in the step that starts the call. `own`: in a slot of its own, waited for (`flush`);
   * else in a hand-over slot `pump` found free.
   */
  private handOver(id: string, own = false): Promise<HandOverEnd> {
    let owed: ReturnType<Couriers["owed"]> = null;
    const send = (): Promise<HandoverReceipt | null> => {
      const handover = owed?.handover;
      return handover ? this.calls.call(id, (courier) => courier.deliver(handover)) : Promise.resolve(null);
    };
    let sent: Promise<HandoverReceipt | null>;
    if (own) {
      sent = this.withSlot(() => {
        owed = this.owed(id);
        return send();
      });
    } else {
      owed = this.owed(id);
      if (owed === null) return Promise.resolve("none");
      this.used += 1;
      this.handing += 1;
      sent = send().finally(() => this.release(true));
    }
    const done = sent
      .then(
        (receipt): HandOverEnd => {
          if (receipt === null || owed === null) return "none";
          this.acknowledged(id, owed.handover.config.version, receipt, owed.handover.missed?.total);
          this.failures.delete(id);
          if (receipt.closed) return "none";
          if (receipt.full) {
            // The rest waits here until the courier asks for it (`drained`).
            this.notBefore.set(id, this.host.platform.now() + FULL_WAIT_MS);
            this.dirty.add(id);
            return "full";
          }
          if (owed.full) this.dirty.add(id);
          if (receipt.backlog >= BACKLOG_HIGH) this.notBefore.set(id, this.host.platform.now() + HANDOVER_SPACING_MS);
          else this.notBefore.delete(id);
          return "done";
        },
        (err: unknown): HandOverEnd => {
          this.failed(id, err);
          return "failed";
        },
      )
      .finally(() => {
        this.inFlight.delete(id);
        this.pump();
      });
    this.inFlight.set(id, done);
    return done;
  }

  /** Records what a courier acknowledged: its cursor, the config version it holds, the retention's drops it took (`missed`). */
  private acknowledged(id: string, version: number, receipt: HandoverReceipt, missed?: number): void {
    if (receipt.closed) return;
    if (missed !== undefined) clearMissed(this.host.sql, id, missed);
    this.host.sql.exec(
      `UPDATE webhooks SET acked_seq = MAX(acked_seq, ?2), courier_version = MAX(courier_version, ?3) WHERE id = ?1`,
      id,
      receipt.cursor,
      version,
    );
  }

  /** A call to `id`'s courier failed: back off (longer when overloaded), then try again. */
  private failed(id: string, err: unknown): void {
    const n = (this.failures.get(id) ?? 0) + 1;
    this.failures.set(id, n);
    const wait = Math.max(isOverloaded(err) ? OVERLOAD_BACKOFF_MS : 0, backoffMs(n));
    const at = this.host.platform.now() + wait;
    this.notBefore.set(id, at);
    this.dirty.add(id);
    this.host.retryAt(at);
    logObjectCallFailure({ from: "hub", webhookId: id, call: "courier", failures: n, retryInMs: wait, error: describeError(err).error });
  }

  /**
   * Pushes registration `id`'s current config to its courier (after a PATCH or a rotation),
   * if the courier may hold state. Resolves once the courier holds it.
   *
   * @throws if the courier cannot be reached (the alarm pushes it again).
   */
  async configure(id: string): Promise<void> {
    const row = readWebhook(this.host.sql, id);
    if (!row || row.courier !== COURIER_OPEN || row.courier_version >= row.version) return;
    const config: CourierConfig = courierConfig(row, this.host.schoolId(), this.host.hubId);
    try {
      const receipt = await this.withSlot(() => this.calls.call(id, (courier) => courier.configure(config)));
      this.acknowledged(id, config.version, receipt);
    } catch (err) {
      this.failed(id, err);
      throw err;
    }
  }

  /**
   * Closes deleted registration `id`'s courier (`WebhookCourier.close`); a close already under
   * way is joined. Tries twice, each time with a new stub.
   *
   * @throws if the courier cannot be reached.
   */
  close(id: string): Promise<void> {
    let closing = this.closings.get(id);
    if (!closing) {
      this.dirty.delete(id);
      closing = this.withSlot(() => this.calls.call(id, (courier) => courier.close()))
        .catch(() => this.withSlot(() => this.calls.call(id, (courier) => courier.close())))
        .finally(() => {
          this.closings.delete(id);
          this.calls.forget(id);
        });
      this.closings.set(id, closing);
    }
    return closing;
  }

  /**
   * Retries unconfirmed closes (tombstones whose courier is open; the hub's alarm) at most
   * CLOSES_PER_ALARM at a time, oldest first, after the last one retried (from the oldest once
   * none is left after it), so that hand-overs never queue behind a backlog of closes. A close
   * confirmed is recorded; `failed` is called for one that failed. @returns whether more are left.
   */
  async retryCloses(failed: () => void): Promise<boolean> {
    const ids = unclosed(this.host.sql, this.closesAfter, CLOSES_PER_ALARM + 1);
    const batch = ids.slice(0, CLOSES_PER_ALARM);
    this.closesAfter = ids.length > CLOSES_PER_ALARM ? batch.at(-1)!.at : [-1, 0];
    const confirm = (id: string) => this.host.sql.exec(`UPDATE webhooks SET courier = ? WHERE id = ?`, COURIER_CLOSED, id);
    await Promise.all(batch.map(({ id }) => this.close(id).then(() => confirm(id), failed)));
    return ids.length > CLOSES_PER_ALARM;
  }

  /** The close under way for `id`, if any. */
  closing(id: string): Promise<void> | undefined {
    return this.closings.get(id);
  }

  /**
   * Forwards a call to `id`'s courier (test, resend, recover), in a slot of its own.
   *
   * @throws if the courier cannot be reached.
   */
  forward<T>(id: string, send: (courier: ReturnType<typeof courierFor>) => PromiseLike<unknown>): Promise<T> {
    // RPC stubs type their answers as promise-and-disposable unions: the caller states T.
    return this.withSlot(() => this.calls.call(id, send)) as Promise<T>;
  }

  /** Makes one call in a slot of its own, waiting in order for one if none is free. */
  private async withSlot<T>(call: () => Promise<T>): Promise<T> {
    if (this.used < HUB_CALL_SLOTS && this.waiters.length === 0) this.used += 1;
    // Else wait: the releaser hands its slot over (`used` stays the same).
    else await new Promise<void>((resolve) => this.waiters.push(resolve));
    try {
      return await call();
    } finally {
      this.release(false);
    }
  }

  /** A call ended: its slot goes to the next call waiting, else waiting hand-overs start in it at once. */
  private release(handOver: boolean): void {
    if (handOver) this.handing -= 1;
    const next = this.waiters.shift();
    if (next) next();
    else {
      this.used -= 1;
      // A hand-over's own end pumps (`handOver`); any other call's frees a slot for them now.
      if (!handOver) this.pump();
    }
  }
}
