/**
 * WebhookCourier: one SQLite-backed Durable Object per registration (`courierFor(env, id)`),
 * the only thing that ever sends to its URL. It owns the registration's queue, retries,
 * attempt log, statistics, alarm and throttle; the hub hands it events by cursor and gives it
 * its config. Its requests wait for headers in its own I/O context (6 slots), so a hanging
 * receiver holds only its own deliveries. Why a deleted registration receives nothing:
 * docs/architecture.md § "The deregistration promise".
 */
import { DurableObject } from "cloudflare:workers";
import { describeError, logObjectCallFailure } from "../../lib/log";
import type { StatsBucket } from "../api/stats-schemas";
import { parseDisableAfterMs } from "../delivery/schedule";
import { AlarmClock } from "../platform/alarm-clock";
import { ObjectCalls } from "../platform/object-calls";
import { type Platform, platformFor, storageOf } from "../platform/platform";
import {
  BACKLOG_HIGH,
  type CourierConfig,
  type CourierStep,
  type DeliveryRecord,
  emptyBuckets,
  type Handover,
  type HandoverReceipt,
  ordersByCourse,
  type StatsBucketSize,
} from "../rpc";
import { type LogFilter, readLog, retainedEvent } from "./attempt-log";
import { Dispatch } from "./dispatch";
import { FailureReport, REPORT_RETRY_MS } from "./failure-report";
import { MissedNotices } from "./missed-notice";
import { backlog, drained, enqueue, nextDueAt, queueLoad, take } from "./queue";
import { type RecoverCount, Recovery } from "./recover";
import { DisableSkip, skipMark } from "./skip";
import { readStats } from "./stats";
import { erase, hasRetained, migrate, PRUNE_INTERVAL_MS, PRUNE_START, type PrunePosition, pruneLog } from "./storage";

/** What a config step leaves for memory: the config in force, and whether it re-enabled the registration. */
interface Applied {
  config: CourierConfig;
  enabled: boolean;
}

/** One registration's courier. RPC methods: see each; the hub is its only caller besides reads. */
export class WebhookCourier extends DurableObject<Env> {
  private readonly sql: SqlStorage;
  /** The object's storage, through the platform's seam (`storageOf`): every read and write goes through it. */
  private readonly storage: DurableObjectStorage;
  private readonly platform: Platform;
  private readonly failures: FailureReport;
  private readonly dispatch: Dispatch;
  private readonly recovery: Recovery;
  private readonly missed: MissedNotices;
  private readonly skip: DisableSkip;
  private config: CourierConfig | null;
  private closed: boolean;
  private cursor: number;
  /** Where the next pruning of event copies goes on (`pruneLog`). */
  private pruneFrom: PrunePosition = PRUNE_START;
  private readonly alarms: AlarmClock;
  /** Calls to the hub (reports, asks for more): one at a time, in the slot kept for them. */
  private readonly hubs: ObjectCalls<ReturnType<Env["SCHOOL_HUB"]["get"]>>;
  /** An ask for more (`askForMore`) is under way; one was answered since the last hand-over. */
  private asking = false;
  private asked = false;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    const storage = storageOf(ctx.storage);
    this.storage = storage;
    this.platform = platformFor(ctx.id.toString(), "courier");
    this.alarms = new AlarmClock(storage);
    this.sql = storage.sql;
    const kv = storage.kv;
    migrate(this.sql);
    const hubs = new ObjectCalls(this.platform, (hubId: string) => env.SCHOOL_HUB.get(env.SCHOOL_HUB.idFromString(hubId)), undefined, true);
    this.hubs = hubs;
    this.failures = new FailureReport(kv, hubs, parseDisableAfterMs(env.WEBHOOK_DISABLE_AFTER_HOURS), () => {
      void this.armAlarm(this.platform.now() + REPORT_RETRY_MS);
    });
    this.dispatch = new Dispatch(storage, env, this.platform, this.failures, {
      config: () => this.config,
      closed: () => this.closed,
      armAlarm: (at) => this.armAlarm(at),
      armedAfter: (now) => this.alarms.armedAfter(now),
      sooner: (at) => this.alarms.sooner(at),
      skipped: () => this.skip.through,
      skipOn: (now) => this.skip.step(now),
      recorded: () => {
        this.askForMore();
        if (!this.closed) this.recovery.later();
      },
    });
    this.recovery = new Recovery(storage, () => void this.armAlarm(this.platform.now()));
    this.missed = new MissedNotices(this.sql, kv, () => this.failures.failing);
    this.skip = new DisableSkip(this.sql, kv, () => this.dispatch.busy(), this.missed);
    this.closed = kv.get("closed") === true;
    this.config = (kv.get("config") as CourierConfig | undefined) ?? null;
    this.cursor = Number(kv.get("cursor") ?? 0);
    // A new instance re-arms for its earliest work (an alarm may have been lost: under
    // `wrangler dev` none survives a restart): attempts whose outcome was lost are due again
    // at once, a report may be owed, a closed courier may have data left to erase.
    const at = this.earliestWork();
    if (at !== null) void ctx.blockConcurrencyWhile(() => this.armAlarm(at));
  }

  /** When this instance, just started, has work (ms), or `null`: none. */
  private earliestWork(): number | null {
    const now = this.platform.now();
    if (this.closed) return hasRetained(this.sql) ? now : null;
    if (this.failures.owed || this.skip.through > 0 || this.storage.kv.get("full") === true || this.recovery.pending || this.missed.pending) return now;
    const due = nextDueAt(this.sql, [], 0, this.ordered());
    if (due !== null) return Math.max(now, due);
    return hasRetained(this.sql) ? now + PRUNE_INTERVAL_MS : null;
  }

  // -------------------------------------------------------------------------------------
  // From the hub

  /**
   * Takes a hand-over: the config, then the events after this courier's cursor, queued (or
   * logged skipped) in one step while the queue is under its bound (queue.ts
   * QUEUE_MAX_ROWS); sending starts at once. Events past the bound are not taken: the cursor
   * stops before them, the receipt says `full`, and the courier asks the hub for more
   * (`SchoolHub.drained`) once its queue is down to half — KV `full` keeps that owed across
   * restarts. A closed courier takes nothing.
   *
   * @returns `closed`, the cursor now, the backlog and whether the bound left events out (see `HandoverReceipt`).
   */
  deliver(handover: Handover): HandoverReceipt {
    if (this.closed) return this.receipt(0);
    const now = this.platform.now();
    const step = this.storage.transactionSync(() => {
      const applied = this.apply(handover.config, now);
      const taken = take(this.sql, handover.events, this.cursor, applied.config.enabled, now, ordersByCourse(applied.config));
      const upTo = taken.full ? (taken.through ?? this.cursor) : handover.upTo;
      if (upTo > this.cursor) this.storage.kv.put("cursor", upTo);
      if (taken.full) this.storage.kv.put("full", true);
      else if (this.storage.kv.get("full") !== undefined) this.storage.kv.delete("full");
      this.missed.noteHub(handover.missed);
      this.missed.note(taken.gap);
      return { applied, upTo, full: taken.full };
    });
    // Memory follows storage once the step has committed.
    this.adopt(step.applied);
    this.cursor = Math.max(this.cursor, step.upTo);
    this.asked = false;
    this.emitMissed(now);
    this.dispatch.pump();
    this.dispatch.handedOver();
    return { ...this.receipt(now), full: step.full };
  }

  /**
   * Takes a newer config (after a PATCH or a rotation) in one step: from its answer on,
   * attempts start with it; a disabled config starts none and ends the queue `skipped`.
   */
  configure(config: CourierConfig): HandoverReceipt {
    if (this.closed) return this.receipt(0);
    const now = this.platform.now();
    this.adopt(this.storage.transactionSync(() => this.apply(config, now)));
    this.emitMissed(now);
    this.dispatch.pump();
    return this.receipt(now);
  }

  /**
   * Closes the courier for good (its registration is deleted), in one bounded synchronous
   * step: marked closed in storage — durable before the hub hears back (output gate) — its
   * config, secrets, cursor, recover and failure streak dropped, its requests aborted, none
   * reported. Nothing of a closed courier starts (`closed` is read before any send, and from
   * storage by a new instance); its alarm erases the rest (queue, log, event copies) in
   * bounded steps, until only the closed marker is left. Idempotent.
   */
  close(): void {
    if (this.closed) return;
    this.storage.transactionSync(() => {
      this.storage.kv.put("closed", true);
      this.failures.forget();
      this.missed.forget();
      for (const key of ["config", "cursor", "full", "skipping", "recover"]) this.storage.kv.delete(key);
    });
    this.closed = true;
    this.config = null;
    this.dispatch.stop();
    void this.armAlarm(this.platform.now());
  }

  /**
   * Wakes a new instance (the hub's, once per courier when it starts): it sends what is due.
   * Its constructor has re-armed the alarm for its earliest work.
   */
  wake(): void {
    if (!this.closed) this.dispatch.pump();
  }

  /**
   * Queues a `webhook.test` event (the hub mints it; it is in no log but this one).
   *
   * @returns its id, or `WEBHOOK_NOT_FOUND` (closed) / `WEBHOOK_DISABLED`.
   */
  enqueue(config: CourierConfig, event: { id: string; type: string; body: string; acceptedAt: number }): CourierStep<{ eventId: string }> {
    return this.queueing(config, () => {
      this.sql.exec(`INSERT OR IGNORE INTO events (id, type, body, accepted_at) VALUES (?, ?, ?, ?)`, event.id, event.type, event.body, event.acceptedAt);
      enqueue(this.sql, event.id, event.type, "test", this.platform.now());
      return { ok: true, value: { eventId: event.id } };
    });
  }

  /**
   * Resend: `eventId` due now (an already queued delivery of it becomes due now), behind the
   * queued deliveries of its course accepted before it when the registration orders by course
   * (`enqueue`).
   *
   * @returns `{ eventId }`, or `WEBHOOK_NOT_FOUND` (closed) / `WEBHOOK_DISABLED` /
   *   `EVENT_NOT_FOUND` (not retained, or never addressed to this registration).
   */
  resend(config: CourierConfig, eventId: string): CourierStep<{ eventId: string }> {
    return this.queueing(config, () => {
      const event = retainedEvent(this.sql, eventId);
      if (!event) return { ok: false, error: "EVENT_NOT_FOUND" };
      enqueue(this.sql, event.id, event.type, "resend", this.platform.now(), this.skip.through);
      return { ok: true, value: { eventId } };
    });
  }

  /**
   * Recover (docs/reference.md § "Recover"), answered at once: counts what it will queue
   * (`countRecover`), keeps the job in KV `recover` — one with a recover under way covers both
   * windows (`startRecover`) — and runs its first step; the alarm runs the others, one per
   * run, while the queue has room (recover.ts `Recovery`). A close or a disable drops it.
   *
   * @returns `{ queued, exact }`, or `WEBHOOK_NOT_FOUND` (closed) / `WEBHOOK_DISABLED`.
   */
  recover(config: CourierConfig, since: number, until: number): CourierStep<RecoverCount> {
    return this.queueing(config, () => ({ ok: true, value: this.recovery.start(since, until, this.platform.now(), this.skip.through) }));
  }

  // -------------------------------------------------------------------------------------
  // Reads (the Worker calls them after the hub found the registration)

  /**
   * One page of the registration's log (GET /v3/webhooks/{id}/deliveries): the last 7 days,
   * newest first, filtered (`LogFilter`); `offset` entries skipped, at most `limit`.
   */
  listDeliveries(filter: LogFilter, offset: number, limit: number): DeliveryRecord[] {
    return this.closed ? [] : readLog(this.sql, filter, this.platform.now(), offset, limit, this.ordered());
  }

  /** The log counted per bucket over [since, until) (ms; GET /v3/webhooks/{id}/stats). */
  deliveryStats(since: number, until: number, bucket: StatsBucketSize): StatsBucket[] {
    return this.closed ? emptyBuckets(since, until, bucket).buckets : readStats(this.sql, since, until, bucket, this.platform.now());
  }

  /** The size of this object's SQLite database, in bytes (operators, the benchmark's storage figures). */
  storageBytes(): number {
    return this.storage.sql.databaseSize;
  }

  /** Resolves when no request is in flight and nothing due could start (tests, benchmark). */
  whenIdle(): Promise<void> {
    return this.dispatch.idle.wait(this.dispatch.isIdle());
  }

  // -------------------------------------------------------------------------------------
  // Sending

  /**
   * Prunes one chunk of the log, sends a report still owed, starts what is due, re-arms.
   * Runs at least once per arming: every step is idempotent.
   */
  override async alarm(): Promise<void> {
    this.alarms.fired();
    if (this.closed) {
      if (erase(this.sql)) await this.armAlarm(this.platform.now() + 1_000);
      return;
    }
    const pruned = pruneLog(this.sql, this.platform.now(), this.pruneFrom);
    this.pruneFrom = pruned.next;
    const skipping = this.storage.transactionSync(() => this.skip.step(this.platform.now()));
    if (this.config?.enabled === true) this.storage.transactionSync(() => this.recovery.step(this.platform.now(), this.skip.through));
    this.emitMissed(this.platform.now());
    this.failures.send(this.config?.hubId);
    this.dispatch.pump();
    this.askForMore();
    if (skipping) await this.armAlarm(this.platform.now());
    else if (pruned.more) await this.armAlarm(this.platform.now() + 1_000);
  }

  // -------------------------------------------------------------------------------------

  /** The answer to a hand-over or a config at `now` (ms): closed, or the cursor and the backlog due. */
  private receipt(now: number): HandoverReceipt {
    return this.closed
      ? { closed: true, cursor: this.cursor, backlog: 0, full: false }
      : { closed: false, cursor: this.cursor, backlog: backlog(this.sql, now, BACKLOG_HIGH, this.ordered()), full: false };
  }

  /** Whether the config in force orders deliveries by course (`CourierConfig.ordering`). */
  private ordered(): boolean {
    return ordersByCourse(this.config);
  }

  /**
   * Stores `config` if newer than the one held (inside a step): a disable skips the queue.
   * Memory is left alone: the caller `adopt`s the result once the step has committed.
   *
   * @returns the config in force after the step, and whether it re-enables the registration.
   */
  private apply(config: CourierConfig, now: number): Applied {
    const held = this.config;
    if (held !== null && held.version >= config.version) return { config: held, enabled: false };
    this.storage.kv.put("config", config);
    if (!config.enabled || config.disables > (held?.disables ?? 0)) {
      // Every delivery queued now ends skipped: marked at once, ended SKIP_CHUNK per step
      // (the first one here), the rest by the alarm (`continueSkip`), never started meanwhile.
      this.storage.kv.put("skipping", Math.max(this.skip.through, skipMark(this.sql)));
      this.recovery.drop();
      this.skip.step(now);
      this.failures.disabled();
    }
    return { config, enabled: config.enabled && held !== null && (!held.enabled || config.disables > held.disables) };
  }

  /**
   * After the step of `apply` committed: the config in memory, an enable clears the failure
   * streak, a disable's skip with rows left goes on in the alarm.
   */
  private adopt(applied: Applied): void {
    this.config = applied.config;
    if (applied.enabled) this.failures.enabled();
    this.continueSkip();
  }

  /** Runs a queueing step for test, resend or recover after the courier's own checks. */
  private queueing<T>(config: CourierConfig, step: () => CourierStep<T>): CourierStep<T> {
    if (this.closed) return { ok: false, error: "WEBHOOK_NOT_FOUND" };
    const { applied, result } = this.storage.transactionSync(() => {
      const applied = this.apply(config, this.platform.now());
      const result: CourierStep<T> = applied.config.enabled ? step() : { ok: false, error: "WEBHOOK_DISABLED" };
      return { applied, result };
    });
    this.adopt(applied);
    this.dispatch.pump();
    return result;
  }

  private armAlarm(at: number): Promise<void> {
    return this.alarms.arm(at, this.platform.now());
  }

  // -------------------------------------------------------------------------------------
  // Back-pressure, a disable's skip (skip.ts), missed events (missed-notice.ts)

  /** A step of its own, after the config in force was adopted (a re-enable ended the failure streak): the pending missed-events notice queued, or the alarm armed for when it may be. */
  private emitMissed(now: number): void {
    const at = this.storage.transactionSync(() => this.missed.emit(this.config, now));
    if (at !== null) void this.armAlarm(at);
  }

  /** A skip with rows left goes on in the alarm, 500 rows per run, at once. */
  private continueSkip(): void {
    if (this.skip.through > 0) void this.armAlarm(this.platform.now());
  }

  /**
   * Asks the hub for more (`SchoolHub.drained`) when the bound left events in its log (KV
   * `full`) and the queue is down to half (QUEUE_LOW_ROWS): once per hand-over, one call at a
   * time; a failed ask is made again by the alarm. The read is bounded (`queueLoad`).
   */
  private askForMore(): void {
    const config = this.config;
    if (this.closed || config === null || this.asking || this.asked || this.storage.kv.get("full") !== true) return;
    if (!drained(queueLoad(this.sql, this.ordered()))) return;
    this.asking = true;
    this.hubs
      .call(config.hubId, (hub) => hub.drained(config.webhookId))
      .then(
        () => {
          this.asked = true;
        },
        (err: unknown) => {
          logObjectCallFailure({
            from: "courier",
            webhookId: config.webhookId,
            call: "drained",
            failures: 1,
            retryInMs: REPORT_RETRY_MS,
            error: describeError(err).error,
          });
          void this.armAlarm(this.platform.now() + REPORT_RETRY_MS);
        },
      )
      .finally(() => {
        this.asking = false;
      });
  }
}
