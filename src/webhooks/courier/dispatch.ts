/**
 * A courier's sending: starting due attempts while its slots and throttle allow — each in the
 * synchronous step that found the courier open and enabled — recording each outcome in one
 * step (log, queue, failure streak), and keeping the alarm armed for what comes next.
 */

import { logDeliveryAttempt } from "../../lib/log";
import { parseRetrySchedule, parseTimeoutMs } from "../delivery/schedule";
import { SigningKeys } from "../delivery/signing";
import { sendRefusal } from "../delivery/url-policy";
import { IdleWaiters } from "../platform/idle-waiters";
import type { Platform } from "../platform/platform";
import { COURIER_SLOTS, type CourierConfig } from "../rpc";
import type { FailureReport } from "./failure-report";
import { nextDueAt, type Outcome, readDue, recordAttempt, skipQueued } from "./queue";
import { Sender, Throttle } from "./sender";
import { hasRetained } from "./storage";

/** When idle with a log to prune, the alarm comes back after this long (ms). */
const PRUNE_INTERVAL_MS = 60 * 60 * 1000;
/** While deliveries wait for a slot, the alarm stays armed this far ahead: a new instance picks them up (ms). */
const WATCHDOG_MS = 60_000;

/** What the sending needs of its courier: its state, read at each step, and its alarm. */
export interface CourierState {
  config(): CourierConfig | null;
  closed(): boolean;
  armAlarm(at: number): Promise<void>;
  /** Whether an alarm is set for `now` (ms) or later, and whether `at` is sooner than it. */
  armedAfter(now: number): boolean;
  sooner(at: number): boolean;
}

/** One courier instance's requests in flight, throttle and sending loop. */
export class Dispatch {
  private readonly sql: SqlStorage;
  private readonly schedule: number[];
  private readonly allowInsecure: boolean;
  private readonly keys = new SigningKeys();
  readonly sender: Sender;
  readonly throttle = new Throttle();
  readonly idle = new IdleWaiters();

  constructor(
    private readonly storage: DurableObjectStorage,
    env: Env,
    private readonly platform: Platform,
    private readonly failures: FailureReport,
    private readonly state: CourierState,
  ) {
    this.sql = storage.sql;
    this.schedule = parseRetrySchedule(env.WEBHOOK_RETRY_SCHEDULE);
    this.allowInsecure = env.WEBHOOK_ALLOW_INSECURE_URLS === "true";
    this.sender = new Sender(platform, parseTimeoutMs(env.WEBHOOK_TIMEOUT_MS), (outcome) => this.finished(outcome));
  }

  /** Aborts everything in flight and drops the throttle's wake-up (the courier closed). */
  stop(): void {
    this.sender.abortAll();
    this.throttle.cancel();
    this.idle.settle(() => this.isIdle());
  }

  /**
   * Starts due attempts while slots (and the throttle) allow. Synchronous: each attempt is
   * started in the same step that found the courier open and enabled.
   */
  pump(): void {
    const config = this.state.config();
    if (this.state.closed() || config === null || !config.enabled) {
      this.rearm();
      return;
    }
    const now = this.platform.now();
    const free = COURIER_SLOTS - this.sender.size;
    const allowed = this.throttle.allowance(now, config.maxPerSecond);
    const rows = readDue(this.sql, now, this.sender.busy(), Math.min(free, allowed));
    for (const row of rows) {
      const refusal = sendRefusal(config.url, this.allowInsecure);
      if (refusal !== null) {
        // The policy in force refuses the URL: nothing is sent, the delivery ends failed.
        this.finished(
          { row, url: config.url, sentAt: now, finishedAt: now, durationMs: null, status: null, error: refusal, retryAfter: null, responseBody: null },
          true,
        );
        continue;
      }
      if (config.maxPerSecond !== null) this.throttle.record(now);
      this.sender.start(row, config.url, { ...config.headers, ...this.keys.sign(config, row.event_id, row.body, now) });
    }
    if (allowed < free && readDue(this.sql, now, this.sender.busy(), 1).length > 0) this.throttle.wakeLater(this.platform, now, () => this.pump());
    this.rearm();
  }

  /** An attempt ended: its outcome recorded in one step (log, queue, failure streak), then the next ones. */
  private finished(outcome: Outcome, refused = false): void {
    const config = this.state.config();
    if (this.state.closed() || config === null) return;
    const status = this.storage.transactionSync(() => {
      const recorded = recordAttempt(this.sql, outcome, this.schedule, Math.random(), refused);
      if (recorded !== null) this.failures.recorded(outcome, config);
      if (!config.enabled) skipQueued(this.sql, this.sender.busy(), this.platform.now());
      return recorded;
    });
    if (status !== null) {
      logDeliveryAttempt({
        webhookId: config.webhookId,
        eventId: outcome.row.event_id,
        attempt: outcome.row.attempts + 1,
        trigger: outcome.row.trigger,
        status,
        responseStatus: outcome.status,
        durationMs: outcome.durationMs,
        ...(outcome.error === null ? {} : { error: outcome.error }),
      });
    }
    if (this.failures.pending) {
      this.failures.pending = false;
      this.failures.send(config.hubId);
    }
    if (!refused) this.pump();
  }

  /**
   * Arms the alarm for what comes next: while every slot is taken, only a watchdog (the
   * outcomes start what is due); else the next due retry, or the next pruning. Wakes
   * `whenIdle()` callers when nothing can start.
   */
  private rearm(): void {
    if (this.state.closed()) return;
    const now = this.platform.now();
    const armed = this.state.armedAfter(now);
    if (this.sender.size >= COURIER_SLOTS) {
      if (!armed) void this.state.armAlarm(now + WATCHDOG_MS);
      return;
    }
    const next = nextDueAt(this.sql, this.sender.busy());
    // Due but not startable now (throttled, disabled): the throttle timer or a config starts it.
    const at = next === null ? (hasRetained(this.sql) ? now + PRUNE_INTERVAL_MS : null) : Math.max(next, now + (next > now ? 0 : WATCHDOG_MS));
    if (at !== null && (!armed || this.state.sooner(at))) void this.state.armAlarm(at);
    this.idle.settle(() => this.isIdle());
  }

  isIdle(): boolean {
    if (this.sender.size > 0) return false;
    const config = this.state.config();
    if (this.state.closed() || config === null || !config.enabled) return true;
    return !this.throttle.waiting && readDue(this.sql, this.platform.now(), [], 1).length === 0;
  }
}
