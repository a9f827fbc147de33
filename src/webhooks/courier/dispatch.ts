/**
 * A courier's sending: starting due attempts while its slots and throttle allow — each in the
 * synchronous step that found the courier open and enabled (a `v1a` attempt: the step after
 * its signature is made, which checks again) — recording each outcome in one step (log,
 * queue, failure streak), and keeping the alarm armed for what comes next.
 */

import { describeError, logDeliveryAttempt } from "../../lib/log";
import { deliveredBody } from "../delivery/payload";
import { parseRetrySchedule, parseTimeoutMs } from "../delivery/schedule";
import { SigningKeys } from "../delivery/signing";
import { sendRefusal } from "../delivery/url-policy";
import { IdleWaiters } from "../platform/idle-waiters";
import type { Platform, Timer } from "../platform/platform";
import { COURIER_SLOTS, type CourierConfig, ordersByCourse } from "../rpc";
import { awaited, heldBack } from "./course-hold";
import type { FailureReport } from "./failure-report";
import { type DueRow, nextDueAt, type Outcome, readDue, recordAttempt } from "./queue";
import { Sender, Throttle } from "./sender";
import { hasRetained, PRUNE_INTERVAL_MS } from "./storage";

/** Outcomes are recorded at most this long after their attempt ends (ms), or … */
const OUTCOME_BATCH_MS = 5;
/** … as soon as this many wait: one storage commit for many attempts. */
const OUTCOME_BATCH = 32;
/**
 * Work in flight or waiting keeps the alarm armed at most this long after it should have
 * ended (ms): an attempt's timeout plus this, so that a new instance sends it again.
 */
const WATCHDOG_MS = 60_000;

/** What no stored answer of `config`'s attempts may show: its custom header values and signing secrets. */
const secretsOf = (config: CourierConfig): string[] => [
  ...Object.values(config.headers),
  config.secret,
  ...(config.previousSecret ? [config.previousSecret] : []),
];

/** What the sending needs of its courier: its state, read at each step, and its alarm. */
export interface CourierState {
  config(): CourierConfig | null;
  closed(): boolean;
  armAlarm(at: number): Promise<void>;
  /** Whether an alarm is set for `now` (ms) or later, and whether `at` is sooner than it. */
  armedAfter(now: number): boolean;
  sooner(at: number): boolean;
  /** The last queue id a disable's skip has still to end (0: none): those rows are never started. */
  skipped(): number;
  /** One step of a disable's skip at `now` (ms), inside the caller's step; whether rows are left. */
  skipOn(now: number): boolean;
  /** Outcomes were recorded (the queue may have drained: the courier may ask for more). */
  recorded(): void;
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
  /** Outcomes waiting to be recorded together (`record`), and the timer that records them. */
  private outcomes: Outcome[] = [];
  private recordTimer: Timer | null = null;
  /** The URL policy's verdict on the last URL judged (`refusal`). */
  private judged: { url: string; refusal: string | null } | null = null;
  /** A `pump` is under way (one it starts, through a refused attempt's record, runs after it: `pumpAgain`). */
  private pumping = false;
  private pumpAgain = false;
  /** Queue ids of `v1a` attempts whose signature is being made: each holds a slot. */
  private readonly signing = new Set<number>();

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
    this.recordTimer?.cancel();
    this.recordTimer = null;
    this.outcomes = [];
    this.signing.clear();
    this.sender.abortAll();
    this.throttle.cancel();
    this.idle.settle(() => this.isIdle());
  }

  /**
   * Starts due attempts while slots (and the throttle) allow — with `ordering: course`, only
   * deliveries no earlier one of their course holds (`readDue`). Synchronous: each attempt is
   * started in the same step that found the courier open and enabled. A pump called while
   * one runs (a refused attempt recorded on the way) runs once it ends.
   */
  pump(): void {
    if (this.pumping) {
      this.pumpAgain = true;
      return;
    }
    this.pumping = true;
    try {
      do {
        this.pumpAgain = false;
        this.pumpOnce();
      } while (this.pumpAgain);
    } finally {
      this.pumping = false;
    }
  }

  private pumpOnce(): void {
    const config = this.state.config();
    if (this.state.closed() || config === null || !config.enabled) {
      this.rearm();
      return;
    }
    const now = this.platform.now();
    const free = COURIER_SLOTS - this.sender.size - this.signing.size;
    const allowed = this.throttle.allowance(now, config.maxPerSecond);
    const skipped = this.state.skipped();
    const ordered = ordersByCourse(config);
    const rows = readDue(this.sql, now, this.busy(), Math.min(free, allowed), skipped, ordered, this.sent());
    const refusal = rows.length === 0 ? null : this.refusal(config.url);
    for (const row of rows) {
      if (refusal !== null) {
        // The policy in force refuses the URL: nothing is sent, the delivery ends failed.
        this.finished({
          row,
          url: config.url,
          sentAt: now,
          finishedAt: now,
          durationMs: null,
          status: null,
          error: refusal,
          retryAfter: null,
          responseBody: null,
          refused: true,
        });
        continue;
      }
      if (config.maxPerSecond !== null) this.throttle.record(now);
      this.send(row, config, now);
    }
    if (allowed < free && readDue(this.sql, now, this.busy(), 1, skipped, ordered, this.sent()).length > 0)
      this.throttle.wakeLater(this.platform, now, () => this.pump());
    this.rearm();
  }

  /**
   * Signs and starts one attempt of `row` with `config` at `now` (ms), its body as the
   * registration's `payload` makes it (`deliveredBody`). A `v1` signature is made at once, in
   * the caller's step; a `v1a` one by WebCrypto, and the attempt starts in the step after it
   * only if the courier is still open, `config` still in force and (ordering by course) no
   * earlier event of its course was put ahead meanwhile — else it stays queued, and the next
   * pump signs it again (docs/architecture.md § "The deregistration promise").
   */
  private send(row: DueRow, config: CourierConfig, now: number): void {
    const sending = { ...row, body: deliveredBody(row.body, row.event_type, config.payload) };
    const headers = this.keys.sign(config, row.event_id, sending.body, now);
    if (!(headers instanceof Promise)) {
      this.sender.start(sending, config.url, { ...config.headers, ...headers }, secretsOf(config));
      return;
    }
    this.signing.add(row.id);
    headers.then(
      (signed) => {
        if (!this.signing.delete(row.id)) return;
        const inForce = !this.state.closed() && this.state.config() === config;
        if (inForce && !(ordersByCourse(config) && heldBack(this.sql, row.id)))
          this.sender.start(sending, config.url, { ...config.headers, ...signed }, secretsOf(config));
        // A disable's skip passed over this row while it was being signed: end it now.
        else if (!this.state.closed() && this.state.skipped() > 0) void this.state.armAlarm(this.platform.now());
        this.pump();
      },
      (err: unknown) => {
        if (!this.signing.delete(row.id)) return;
        // Nothing was sent: a failed attempt, retried on the schedule.
        const at = this.platform.now();
        const error = `signing failed: ${describeError(err).error}`;
        this.finished({ row, url: config.url, sentAt: at, finishedAt: at, durationMs: null, status: null, error, retryAfter: null, responseBody: null });
      },
    );
  }

  /** Why the URL policy in force refuses `url` (`null`: it does not), judged once per URL. */
  private refusal(url: string): string | null {
    if (this.judged?.url !== url) this.judged = { url, refusal: sendRefusal(url, this.allowInsecure) };
    return this.judged.refusal;
  }

  /** The deliveries not to start now: being signed, in flight, or ended with their outcome not yet recorded. */
  busy(): number[] {
    const busy = this.sent();
    if (this.signing.size > 0) busy.push(...this.signing);
    return busy;
  }

  /** The deliveries sent whose outcome is not recorded yet (in flight, or ended): their courses wait (`readDue`). */
  private sent(): number[] {
    const sent = this.sender.busy();
    return this.outcomes.length === 0 ? sent : [...sent, ...this.outcomes.map((o) => o.row.id)];
  }

  /**
   * An attempt ended: its slot is free at once (the next attempt may start), and its outcome is
   * recorded with the others that end within OUTCOME_BATCH_MS — one storage commit for many
   * attempts. A refused attempt (never sent) is recorded at once, and so is one that a later
   * delivery of its course waits for (`ordering: course`) when a slot is left free once what
   * can start has started: recording it lets that one start in the same step (docs/reference.md
   * § "Event delivery", ordering: "the moment it ends"). When every slot is taken, that one
   * could not start before a slot frees anyway: the outcome waits for the batch.
   */
  private finished(outcome: Outcome): void {
    const config = this.state.config();
    if (this.state.closed() || config === null) return;
    this.outcomes.push(outcome);
    // `record` starts what became due.
    if (outcome.refused || this.outcomes.length >= OUTCOME_BATCH) {
      this.record();
      return;
    }
    this.pump();
    if ((this.pumping || this.slotLeft()) && ordersByCourse(config) && awaited(this.sql, outcome.row.course ?? null)) this.record();
    else this.recordTimer ??= this.platform.setTimer(() => this.record(), OUTCOME_BATCH_MS);
  }

  /**
   * A hand-over queued rows (`WebhookCourier.deliver`): an outcome still buffered whose course
   * a new row now waits for (`ordering: course`) is recorded at once while a slot is left, so
   * that row starts now, not when the batch's timer fires — the same rule as `finished`.
   */
  handedOver(): void {
    const config = this.state.config();
    if (this.outcomes.length === 0 || config === null || !ordersByCourse(config) || !this.slotLeft()) return;
    if (this.outcomes.some((o) => awaited(this.sql, o.row.course ?? null))) this.record();
  }

  /** Whether a slot is free for one more attempt (requests in flight and signatures being made hold one each). */
  private slotLeft(): boolean {
    return this.sender.size + this.signing.size < COURIER_SLOTS;
  }

  /**
   * Records the buffered outcomes in one step (log, queue, failure streak), then writes their
   * log lines and starts what became due. Outcomes not recorded when the object stops are
   * lost, and their deliveries sent again (at least once; never counted as failures).
   */
  private record(): void {
    this.recordTimer?.cancel();
    this.recordTimer = null;
    const config = this.state.config();
    const batch = this.outcomes;
    this.outcomes = [];
    if (this.state.closed() || config === null || batch.length === 0) return;
    const { statuses, skipping } = this.storage.transactionSync(() => {
      const statuses = batch.map((outcome) => {
        const recorded = recordAttempt(this.sql, outcome, this.schedule, Math.random());
        if (recorded !== null) this.failures.recorded(outcome, config);
        return recorded;
      });
      // A disable's skip goes on: these rows were in flight when it began.
      return { statuses, skipping: this.state.skipOn(this.platform.now()) };
    });
    batch.forEach((outcome, i) => {
      const recorded = statuses[i];
      if (!recorded) return;
      logDeliveryAttempt({
        schoolId: config.schoolId,
        webhookId: config.webhookId,
        eventId: outcome.row.event_id,
        attempt: recorded.attempt,
        trigger: outcome.row.trigger,
        status: recorded.status,
        responseStatus: outcome.status,
        durationMs: outcome.durationMs,
        ...(outcome.error === null ? {} : { error: outcome.error }),
      });
    });
    this.failures.sendNew(config.hubId);
    if (skipping) void this.state.armAlarm(this.platform.now());
    this.state.recorded();
    // What these outcomes made startable starts here: a delivery asked for again while in
    // flight, the next of a course whose delivery ended, an earlier event of a course resent
    // while its later one was in flight (a recorded retry is due later).
    this.pump();
  }

  /**
   * Arms the alarm for what comes next (docs/architecture.md § Invariants, wake-ups): an
   * attempt in flight by its timeout plus WATCHDOG_MS (if the instance dies, a new one sends
   * it again), the next due delivery not in flight, else the next pruning. Wakes `whenIdle()`
   * callers when nothing can start.
   */
  private rearm(): void {
    if (this.state.closed()) return;
    const now = this.platform.now();
    const deadline = this.sender.firstDeadline();
    let at = deadline === null ? (this.outcomes.length === 0 && this.signing.size === 0 ? null : now + WATCHDOG_MS) : deadline + WATCHDOG_MS;
    if (this.slotLeft()) {
      const next = nextDueAt(this.sql, this.busy(), this.state.skipped(), ordersByCourse(this.state.config()), this.sent());
      // Due but not startable now (throttled, disabled): the throttle timer or a config starts it.
      if (next !== null) at = Math.min(at ?? Infinity, Math.max(next, now + (next > now ? 0 : WATCHDOG_MS)));
    }
    if (at === null && hasRetained(this.sql)) at = now + PRUNE_INTERVAL_MS;
    if (at !== null && (!this.state.armedAfter(now) || this.state.sooner(at))) void this.state.armAlarm(at);
    this.idle.settle(() => this.isIdle());
  }

  isIdle(): boolean {
    if (this.sender.size > 0 || this.outcomes.length > 0 || this.signing.size > 0) return false;
    const config = this.state.config();
    if (this.state.closed() || config === null || !config.enabled) return true;
    return !this.throttle.waiting && readDue(this.sql, this.platform.now(), [], 1, this.state.skipped(), ordersByCourse(config)).length === 0;
  }
}
