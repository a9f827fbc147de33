/**
 * WebhookCourier: one SQLite-backed Durable Object per registration (`courierFor(env, id)`),
 * the only thing that ever sends to its URL. It owns the registration's queue, retries,
 * attempt log, statistics, alarm and throttle; the hub hands it events by cursor and gives it
 * its config. Its requests wait for headers in its own I/O context (6 slots), so a hanging
 * receiver holds only its own deliveries. Why a deleted registration receives nothing:
 * docs/architecture.md § "The deregistration promise".
 */
import { DurableObject } from "cloudflare:workers";
import type { StatsBucket } from "../api/stats-schemas";
import { isSuccess, parseDisableAfterMs, parseRetrySchedule, parseTimeoutMs } from "../delivery/schedule";
import { SigningKeys } from "../delivery/signing";
import { checkWebhookUrl } from "../delivery/url-policy";
import { ObjectCalls } from "../platform/object-calls";
import { type Platform, platformFor, type Timer } from "../platform/platform";
import {
  COURIER_SLOTS,
  type CourierConfig,
  type CourierStep,
  type DeliveryRecord,
  type FailingReport,
  type Handover,
  type HandoverReceipt,
  type StatsBucketSize,
} from "../rpc";
import { type LogFilter, type RecoverPosition, readLog, retainedEvent, toRecover } from "./attempt-log";
import { backlog, enqueue, nextDueAt, type Outcome, readDue, recordAttempt, skipQueued, take } from "./queue";
import { Sender, Throttle } from "./sender";
import { readStats } from "./stats";
import { hasRetained, migrate, pruneLog } from "./storage";

/** Events a recover queues per synchronous step (other calls interleave between two). */
const RECOVER_CHUNK = 200;
/** A failure report the hub did not take is sent again this much later (ms). */
const REPORT_RETRY_MS = 10_000;
/** When idle with a log to prune, the alarm comes back after this long (ms). */
const PRUNE_INTERVAL_MS = 60 * 60 * 1000;
/** While deliveries wait for a slot, the alarm stays armed this far ahead: a new instance picks them up (ms). */
const WATCHDOG_MS = 60_000;

/** One registration's courier. RPC methods: see each; the hub is its only caller besides reads. */
export class WebhookCourier extends DurableObject<Env> {
  private readonly sql: SqlStorage;
  private readonly platform: Platform;
  private readonly schedule: number[];
  private readonly disableAfterMs: number;
  private readonly allowInsecure: boolean;
  private readonly keys = new SigningKeys();
  private readonly sender: Sender;
  private readonly throttle = new Throttle();
  private readonly hub: ObjectCalls<ReturnType<Env["SCHOOL_HUB"]["get"]>>;
  private config: CourierConfig | null;
  private closed: boolean;
  private cursor: number;
  private failingSince: number | null;
  private reporting = false;
  private throttleTimer: Timer | null = null;
  private alarmAt: number | null | undefined = undefined;
  private idleWaiters: (() => void)[] = [];

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.sql = ctx.storage.sql;
    migrate(this.sql);
    this.platform = platformFor(ctx.id.toString(), "courier");
    this.schedule = parseRetrySchedule(env.WEBHOOK_RETRY_SCHEDULE);
    this.disableAfterMs = parseDisableAfterMs(env.WEBHOOK_DISABLE_AFTER_HOURS);
    this.allowInsecure = env.WEBHOOK_ALLOW_INSECURE_URLS === "true";
    this.sender = new Sender(this.platform, parseTimeoutMs(env.WEBHOOK_TIMEOUT_MS), (outcome) => this.finished(outcome));
    this.hub = new ObjectCalls(this.platform, (hubId) => env.SCHOOL_HUB.get(env.SCHOOL_HUB.idFromString(hubId)));
    const kv = ctx.storage.kv;
    this.closed = kv.get("closed") === true;
    this.config = (kv.get("config") as CourierConfig | undefined) ?? null;
    this.cursor = Number(kv.get("cursor") ?? 0);
    this.failingSince = (kv.get("failingSince") as number | undefined) ?? null;
    // A new instance: attempts whose outcome was lost are due again, a report may be owed.
    if (!this.closed && (nextDueAt(this.sql, []) !== null || kv.get("report") !== undefined)) {
      void ctx.blockConcurrencyWhile(() => this.armAlarm(this.platform.now()));
    }
  }

  // -------------------------------------------------------------------------------------
  // From the hub

  /**
   * Takes a hand-over: the config, then the events after this courier's cursor, queued (or
   * logged skipped) in one step; sending starts at once. A closed courier takes nothing.
   *
   * @returns `closed`, the cursor now and the backlog (see `HandoverReceipt`).
   */
  deliver(handover: Handover): HandoverReceipt {
    if (this.closed) return { closed: true, cursor: this.cursor, backlog: 0 };
    const now = this.platform.now();
    this.ctx.storage.transactionSync(() => {
      this.apply(handover.config, now);
      take(this.sql, handover.events, this.cursor, this.config!.enabled, now);
      if (handover.upTo > this.cursor) {
        this.cursor = handover.upTo;
        this.ctx.storage.kv.put("cursor", this.cursor);
      }
    });
    this.pump();
    return { closed: false, cursor: this.cursor, backlog: backlog(this.sql, now) };
  }

  /**
   * Takes a newer config (after a PATCH or a rotation) in one step: from its answer on,
   * attempts start with it; a disabled config starts none and ends the queue `skipped`.
   */
  configure(config: CourierConfig): HandoverReceipt {
    if (this.closed) return { closed: true, cursor: this.cursor, backlog: 0 };
    const now = this.platform.now();
    this.ctx.storage.transactionSync(() => this.apply(config, now));
    this.pump();
    return { closed: false, cursor: this.cursor, backlog: backlog(this.sql, now) };
  }

  /**
   * Closes the courier for good (its registration is deleted), in one synchronous step:
   * marked closed in storage — durable before the hub hears back (output gate) — its queue,
   * config and secrets dropped, its requests aborted, none reported. Idempotent.
   */
  close(): void {
    this.ctx.storage.transactionSync(() => {
      this.closed = true;
      this.config = null;
      const kv = this.ctx.storage.kv;
      kv.put("closed", true);
      kv.delete("config");
      kv.delete("report");
      this.sql.exec(`DELETE FROM queue`);
    });
    this.sender.abortAll();
    this.throttleTimer?.cancel();
    this.throttleTimer = null;
    void this.ctx.storage.deleteAlarm();
    this.alarmAt = null;
    this.settle();
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
   * Resend: `eventId` due now (an already queued delivery of it becomes due now).
   *
   * @returns `{ eventId }`, or `WEBHOOK_NOT_FOUND` (closed) / `WEBHOOK_DISABLED` /
   *   `EVENT_NOT_FOUND` (not retained, or never addressed to this registration).
   */
  resend(config: CourierConfig, eventId: string): CourierStep<{ eventId: string }> {
    return this.queueing(config, () => {
      const event = retainedEvent(this.sql, eventId);
      if (!event) return { ok: false, error: "EVENT_NOT_FOUND" };
      enqueue(this.sql, event.id, event.type, "resend", this.platform.now());
      return { ok: true, value: { eventId } };
    });
  }

  /**
   * Recover: queues again, in acceptance order, each retained event accepted in
   * [since, until) (ms) whose delivery ended failed or skipped, RECOVER_CHUNK per step.
   * A close or a disable meanwhile stops it.
   *
   * @returns `{ queued }`, or `WEBHOOK_NOT_FOUND` (closed) / `WEBHOOK_DISABLED`.
   */
  async recover(config: CourierConfig, since: number, until: number): Promise<CourierStep<{ queued: number }>> {
    let from: RecoverPosition | null = [Number.MIN_SAFE_INTEGER, 0];
    let queued = 0;
    while (from !== null) {
      const position: RecoverPosition = from;
      const step = this.queueing(config, () => {
        const chunk = toRecover(this.sql, since, until, position, RECOVER_CHUNK);
        const now = this.platform.now();
        for (const event of chunk.events) enqueue(this.sql, event.id, event.type, "recover", now);
        return { ok: true, value: chunk };
      });
      if (!step.ok) return queued === 0 ? step : { ok: true, value: { queued } };
      queued += step.value.events.length;
      from = step.value.next;
      if (from !== null) await new Promise((resolve) => this.platform.setTimer(() => resolve(undefined), 0));
    }
    return { ok: true, value: { queued } };
  }

  // -------------------------------------------------------------------------------------
  // Reads (the Worker calls them after the hub found the registration)

  /**
   * One page of the registration's log (GET /v3/webhooks/{id}/deliveries): the last 7 days,
   * newest first, filtered (`LogFilter`); `offset` entries skipped, at most `limit`.
   */
  listDeliveries(filter: LogFilter, offset: number, limit: number): DeliveryRecord[] {
    return readLog(this.sql, filter, this.platform.now(), offset, limit);
  }

  /** The log counted per bucket over [since, until) (ms; GET /v3/webhooks/{id}/stats). */
  deliveryStats(since: number, until: number, bucket: StatsBucketSize): StatsBucket[] {
    return readStats(this.sql, since, until, bucket, this.platform.now());
  }

  /** The size of this object's SQLite database, in bytes (operators, the benchmark's storage figures). */
  storageBytes(): number {
    return this.ctx.storage.sql.databaseSize;
  }

  /** Resolves when no request is in flight and nothing due could start (tests, benchmark). */
  whenIdle(): Promise<void> {
    if (this.isIdle()) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  // -------------------------------------------------------------------------------------
  // Sending

  /**
   * Prunes one chunk of the log, sends a report still owed, starts what is due, re-arms.
   * Runs at least once per arming: every step is idempotent.
   */
  override async alarm(): Promise<void> {
    this.alarmAt = null;
    if (this.closed) return;
    const more = pruneLog(this.sql, this.platform.now());
    this.sendReport();
    this.pump();
    if (more) await this.armAlarm(this.platform.now() + 1_000);
  }

  /**
   * Starts due attempts while slots (and the throttle) allow. Synchronous: each attempt is
   * started in the same step that found the courier open and enabled.
   */
  private pump(): void {
    const config = this.config;
    if (this.closed || config === null || !config.enabled) {
      this.rearm();
      return;
    }
    const now = this.platform.now();
    const free = COURIER_SLOTS - this.sender.size;
    const allowed = this.throttle.allowance(now, config.maxPerSecond);
    const rows = readDue(this.sql, now, this.sender.busy(), Math.min(free, allowed));
    for (const row of rows) {
      const verdict = checkWebhookUrl(config.url, this.allowInsecure);
      if (!verdict.ok) {
        // The policy in force refuses the URL: nothing is sent, the delivery ends failed.
        this.finished(
          { row, url: config.url, sentAt: now, finishedAt: now, durationMs: null, status: null, error: verdict.reason, retryAfter: null, responseBody: null },
          true,
        );
        continue;
      }
      if (config.maxPerSecond !== null) this.throttle.record(now);
      this.sender.start(row, config.url, { ...config.headers, ...this.keys.sign(config, row.event_id, row.body, now) });
    }
    if (allowed < free && this.throttleTimer === null && readDue(this.sql, now, this.sender.busy(), 1).length > 0) {
      this.throttleTimer = this.platform.setTimer(
        () => {
          this.throttleTimer = null;
          this.pump();
        },
        Math.max(1, this.throttle.nextAt() - now),
      );
    }
    this.rearm();
  }

  /** An attempt ended: its outcome recorded in one step (log, queue, failure streak), then the next ones. */
  private finished(outcome: Outcome, refused = false): void {
    if (this.closed || this.config === null) return;
    const config = this.config;
    const status = this.ctx.storage.transactionSync(() => {
      const recorded = recordAttempt(this.sql, outcome, this.schedule, Math.random(), refused);
      if (recorded !== null) this.streak(outcome);
      if (!config.enabled) skipQueued(this.sql, this.sender.busy(), this.platform.now());
      return recorded;
    });
    if (status !== null) {
      console.log(
        JSON.stringify({
          message: "delivery attempt",
          webhookId: config.webhookId,
          eventId: outcome.row.event_id,
          attempt: outcome.row.attempts + 1,
          trigger: outcome.row.trigger,
          status,
          responseStatus: outcome.status,
          durationMs: outcome.durationMs,
        }),
      );
    }
    if (outcome.status === 410 && config.enabled) this.owe({ webhookId: config.webhookId, version: config.version, reason: "gone", failingSince: null });
    if (!refused) this.pump();
  }

  /** The failure streak (API.md § "Auto-disable"): a success ends it; a long one is reported. */
  private streak(outcome: Outcome): void {
    const kv = this.ctx.storage.kv;
    if (isSuccess(outcome.status)) {
      if (this.failingSince !== null) kv.delete("failingSince");
      this.failingSince = null;
      return;
    }
    if (this.failingSince === null) {
      this.failingSince = outcome.sentAt;
      kv.put("failingSince", outcome.sentAt);
    }
    const config = this.config!;
    if (config.enabled && outcome.finishedAt - this.failingSince >= this.disableAfterMs) {
      this.owe({ webhookId: config.webhookId, version: config.version, reason: "failing", failingSince: this.failingSince });
    }
  }

  /** Records a report the hub must hear (durably: a restart sends it still), and sends it. */
  private owe(report: FailingReport): void {
    const owed = this.ctx.storage.kv.get("report") as FailingReport | undefined;
    if (owed?.version === report.version && owed.reason === report.reason) return;
    this.ctx.storage.kv.put("report", report);
    this.sendReport();
  }

  /** Sends the report owed, one call at a time; on failure the alarm tries again. */
  private sendReport(): void {
    const report = this.ctx.storage.kv.get("report") as FailingReport | undefined;
    const hubId = this.config?.hubId;
    if (this.reporting || report === undefined || hubId === undefined) return;
    this.reporting = true;
    this.hub
      .call(hubId, (hub) => hub.reportFailing(report))
      .then(
        () => {
          const now = this.ctx.storage.kv.get("report") as FailingReport | undefined;
          if (now?.version === report.version && now.reason === report.reason) this.ctx.storage.kv.delete("report");
        },
        (err: unknown) => {
          console.warn(`WebhookCourier: reporting to the hub failed; retrying in ${REPORT_RETRY_MS} ms`, err instanceof Error ? err.message : err);
          void this.armAlarm(this.platform.now() + REPORT_RETRY_MS);
        },
      )
      .finally(() => {
        this.reporting = false;
      });
  }

  // -------------------------------------------------------------------------------------

  /** Applies `config` if newer than the one held (inside a step): a disable skips the queue, an enable clears the streak. */
  private apply(config: CourierConfig, now: number): void {
    const held = this.config;
    if (held !== null && held.version >= config.version) return;
    this.config = config;
    this.ctx.storage.kv.put("config", config);
    if (!config.enabled || config.disables > (held?.disables ?? 0)) {
      skipQueued(this.sql, this.sender.busy(), now);
      this.ctx.storage.kv.delete("report");
    }
    if (config.enabled && held !== null && (!held.enabled || config.disables > held.disables)) {
      this.failingSince = null;
      this.ctx.storage.kv.delete("failingSince");
    }
  }

  /** Runs a queueing step for test, resend or recover after the courier's own checks. */
  private queueing<T>(config: CourierConfig, step: () => CourierStep<T>): CourierStep<T> {
    if (this.closed) return { ok: false, error: "WEBHOOK_NOT_FOUND" };
    const result = this.ctx.storage.transactionSync((): CourierStep<T> => {
      this.apply(config, this.platform.now());
      if (!this.config!.enabled) return { ok: false, error: "WEBHOOK_DISABLED" };
      return step();
    });
    this.pump();
    return result;
  }

  /**
   * Arms the alarm for what comes next: while every slot is taken, only a watchdog (the
   * outcomes start what is due); else the next due retry, or the next pruning. Wakes
   * `whenIdle()` callers when nothing can start.
   */
  private rearm(): void {
    if (this.closed) return;
    const now = this.platform.now();
    const armed = this.alarmAt !== undefined && this.alarmAt !== null && this.alarmAt >= now;
    if (this.sender.size >= COURIER_SLOTS) {
      if (!armed) void this.armAlarm(now + WATCHDOG_MS);
      return;
    }
    const next = nextDueAt(this.sql, this.sender.busy());
    let at: number | null;
    if (next === null) at = hasRetained(this.sql) ? now + PRUNE_INTERVAL_MS : null;
    else if (next > now) at = next;
    // Due but not startable now (throttled, disabled): the throttle timer or a config starts it.
    else at = now + WATCHDOG_MS;
    if (at !== null && (!armed || at < this.alarmAt!)) void this.armAlarm(at);
    this.settle();
  }

  private settle(): void {
    if (this.idleWaiters.length === 0 || !this.isIdle()) return;
    const waiters = this.idleWaiters;
    this.idleWaiters = [];
    for (const wake of waiters) wake();
  }

  private isIdle(): boolean {
    if (this.sender.size > 0) return false;
    if (this.closed || this.config === null || !this.config.enabled) return true;
    return this.throttleTimer === null && readDue(this.sql, this.platform.now(), [], 1).length === 0;
  }

  private async armAlarm(at: number): Promise<void> {
    if (this.alarmAt === undefined) this.alarmAt = await this.ctx.storage.getAlarm();
    if (this.alarmAt !== null && this.alarmAt <= at && this.alarmAt >= this.platform.now()) return;
    this.alarmAt = at;
    await this.ctx.storage.setAlarm(at);
  }
}
