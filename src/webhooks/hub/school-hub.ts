/**
 * SchoolHub: the school's event hub, one SQLite-backed Durable Object per school
 * (`hubFor(env, schoolId)`). It alone owns the school's registrations (and tombstones) and
 * its ordered event log; each registration's queue, retries and attempt log belong to its
 * courier (courier/webhook-courier.ts), to which the hub hands events by cursor
 * (couriers.ts). Every state change is one synchronous step. The deregistration argument
 * across the two objects is in docs/architecture.md § "The deregistration promise".
 */
import { DurableObject } from "cloudflare:workers";
import { IDEMPOTENCY_TTL_MS } from "../../db/idempotency";
import type { SchoolEvent } from "../../events/types";
import { DEFAULT_GRACE_SECONDS } from "../../lib/limits";
import { newCredential } from "../delivery/signing";
import { AlarmClock } from "../platform/alarm-clock";
import { type Platform, platformFor, storageOf } from "../platform/platform";
import {
  type CourierConfig,
  type CourierStep,
  type CreateWebhookResult,
  type FailingReport,
  HEADERS_REQUIRED,
  type NewWebhook,
  type PublishResult,
  type RotatedSecret,
  type StreakNotice,
  type WebhookRecord,
  type WebhookUpdate,
} from "../rpc";
import { Couriers } from "./couriers";
import { type Audience, accept, audiencesOf, behind, testEvent } from "./event-log";
import type { FeedExpired } from "./feed";
import { type FeedPage, type FeedQuery, FeedReaders } from "./feed";
import type { IdempotencyInput } from "./idempotency";
import { takeDisable, takeNotices } from "./notices";
import * as registrations from "./registrations";
import { COURIER_CLOSED, COURIER_NONE, COURIER_OPEN, migrate, nextPruneAt, pruneLog } from "./storage";

/** Prunings are at least this far apart (ms): the alarm comes when the oldest row is due, but not sooner. */
const PRUNE_INTERVAL_MS = 60 * 60 * 1000;
/** A close or push that failed is tried again by the alarm this much later (ms). */
const RETRY_MS = 10_000;
/**
 * While hand-overs are owed, the alarm is armed at most this far ahead (ms): if this instance
 * dies before they are acknowledged, a new one hands them over (derived from storage: the
 * registrations whose acknowledged cursor is behind the log).
 */
const HANDOVER_WATCHDOG_MS = 30_000;

/** The school's event hub (see the module comment); its public methods are its RPC surface. */
export class SchoolHub extends DurableObject<Env> {
  private readonly sql: SqlStorage;
  /** The object's storage, through the platform's seam (`storageOf`): every read and write goes through it. */
  private readonly storage: DurableObjectStorage;
  private readonly platform: Platform;
  private readonly couriers: Couriers;
  /** The active registrations as the accept step reads them (`null`: reload). */
  private audiences: Audience[] | null = null;
  private school: string | null;
  /** Feed readers, some waiting for the next accepted event (long poll): woken by `publish`. */
  private readonly readers: FeedReaders;
  private readonly alarms: AlarmClock;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    const storage = storageOf(ctx.storage);
    this.storage = storage;
    this.sql = storage.sql;
    migrate(this.sql);
    this.platform = platformFor(ctx.id.toString(), "hub");
    this.alarms = new AlarmClock(storage);
    this.school = (storage.kv.get("schoolId") as string | undefined) ?? null;
    this.readers = new FeedReaders(this.sql, this.platform);
    this.couriers = new Couriers(env, {
      sql: this.sql,
      platform: this.platform,
      schoolId: () => this.school ?? "",
      hubId: ctx.id.toString(),
      retryAt: (at) => void this.armAlarm(at),
    });
    // A new instance: whatever a lost hand-over, close or push left behind is caught up, each
    // live courier is woken once (its alarm may have been lost: under `wrangler dev` none
    // survives a restart), and what it retains has an alarm to prune it (a chain lost resumes).
    const unfinished = behind(this.sql).length > 0 || registrations.unclosed(this.sql).length > 0;
    void ctx.blockConcurrencyWhile(async () => {
      if (unfinished) await this.armAlarm(this.platform.now());
      await this.armPrune();
    });
    this.couriers.wake(registrations.liveCouriers(this.sql));
  }

  /**
   * Creates a registration (POST /v3/webhooks) of school `schoolId`; the input is validated.
   * With an `Idempotency-Key` (`idem`) the key is looked up, the registration created and the
   * answer stored in this one synchronous step, so racing requests with one key create one.
   * Its signing credential (a secret, or a `v1a` key pair: WebCrypto's, asynchronous) is made
   * before that step.
   *
   * @returns the answer (201, the record with its new secret — `v1a`: its public key only —
   *   and `location`) and whether it replays an earlier one; or `WEBHOOK_LIMIT_REACHED` (50
   *   registrations already), `IDEMPOTENCY_KEY_MISMATCH` (the key was used with another body).
   */
  async createWebhook(schoolId: string, input: NewWebhook, idem?: IdempotencyInput): Promise<CreateWebhookResult> {
    this.knowSchool(schoolId);
    const credential = await newCredential(input.signatureScheme);
    const now = this.platform.now();
    const result = this.storage.transactionSync(() => registrations.create(this.sql, input, credential, idem, now));
    if (result.ok && !result.replayed) {
      this.audiences = null;
      void this.armAlarm(now + IDEMPOTENCY_TTL_MS);
    }
    return result;
  }

  /** The school's registrations, oldest first, without secrets (GET /v3/webhooks). */
  listWebhooks(): WebhookRecord[] {
    return registrations.readWebhooks(this.sql).map(registrations.toWebhookRecord);
  }

  /** One registration (GET /v3/webhooks/{id}), or `null` for an unknown or deleted id. */
  getWebhook(id: string): WebhookRecord | null {
    const row = registrations.readWebhook(this.sql, id);
    return row ? registrations.toWebhookRecord(row) : null;
  }

  /**
   * Whether registration `id`'s courier may hold anything (a hand-over or a call was made):
   * `false` means its log is empty, so reads need not start it; `null` for an unknown or
   * deleted id.
   */
  courierInUse(id: string): boolean | null {
    const row = registrations.readWebhook(this.sql, id);
    return row ? row.courier === COURIER_OPEN : null;
  }

  /**
   * Changes a registration (PATCH /v3/webhooks/{id}) in one step, then gives its courier the
   * new config before answering: from the answer on, attempts start with it (a disable: none
   * starts; its queue ends `skipped`). `events` and `filter` apply to events accepted after it.
   *
   * @returns the record, `null` for an unknown or deleted id (also one deleted meanwhile), or
   *   `HEADERS_REQUIRED` (nothing changed: a `url` without `headers` on a registration with custom headers).
   * @throws if the courier cannot be reached: the change is made, the alarm pushes it again,
   *   and a repeated PATCH pushes it before answering.
   */
  async updateWebhook(id: string, change: WebhookUpdate): Promise<WebhookRecord | null | typeof HEADERS_REQUIRED> {
    const row = this.storage.transactionSync(() => registrations.updateWebhook(this.sql, id, change, this.platform.now()));
    if (row === null || row === HEADERS_REQUIRED) return row;
    this.audiences = null;
    await this.couriers.configure(id);
    return this.getWebhook(id);
  }

  /**
   * POST /v3/webhooks/{id}/secret/rotate: a new secret (`v1a`: a key pair, made before the
   * step), the previous one valid `graceSeconds` (0–604800) more; the courier holds the new
   * secrets before the answer.
   * @returns the new secret (`v1a`: the new public key), or `null` for an unknown or deleted id.
   * @throws if the courier cannot be reached: the rotation is made, the alarm pushes it, and a
   *   repeated rotation pushes its own before answering (as PATCH).
   */
  async rotateSecret(id: string, graceSeconds: number = DEFAULT_GRACE_SECONDS, updatedBy: string | null = null): Promise<RotatedSecret | null> {
    const row = registrations.readWebhook(this.sql, id);
    if (!row) return null;
    // The scheme is set at creation only: the credential made here is of the scheme the step finds.
    const credential = await newCredential(row.signature_scheme);
    const rotated = this.storage.transactionSync(() => registrations.rotateSecret(this.sql, id, credential, graceSeconds, updatedBy, this.platform.now()));
    if (rotated) await this.couriers.configure(id);
    return rotated;
  }

  /**
   * Deletes a registration (DELETE /v3/webhooks/{id}) and keeps the deregistration promise:
   * in one step it becomes a tombstone (no later step addresses or hands it anything), then
   * its courier is closed — closed durably, its queue dropped, its requests aborted — before
   * this returns (docs/architecture.md § "The deregistration promise").
   *
   * @returns `true` if deleted now; `false` for an unknown or already deleted id (a racing
   *   second delete returns `false` once the first one's close is done).
   * @throws if the courier cannot be reached: nothing is promised then; the alarm retries the
   *   close, and a repeated DELETE completes it and returns `true`.
   */
  async deleteWebhook(id: string): Promise<boolean> {
    const found = this.storage.transactionSync(() => registrations.tombstone(this.sql, id, this.platform.now()));
    if (found === null) return false;
    // Its addressed events are forgotten later, in bounded steps (`pruneDeleted`).
    if (found.found === "deleted") void this.armAlarm(this.platform.now() + 1_000);
    if (found.found === "tombstone") {
      if (found.courier !== COURIER_OPEN) return false;
      // Deleted before, its close not confirmed: a close under way means a racing DELETE
      // that will answer 200; otherwise a previous one failed, and this one completes it.
      const underWay = this.couriers.closing(id);
      if (underWay) return underWay.then(() => false);
    }
    this.audiences = null;
    if (found.courier === COURIER_NONE) {
      this.sql.exec(`UPDATE webhooks SET courier = ? WHERE id = ?`, COURIER_CLOSED, id);
      return true;
    }
    try {
      await this.couriers.close(id);
    } catch (err) {
      void this.armAlarm(this.platform.now() + RETRY_MS);
      throw err;
    }
    this.sql.exec(`UPDATE webhooks SET courier = ? WHERE id = ?`, COURIER_CLOSED, id);
    return true;
  }

  /**
   * Accepts events (the outbox's `hubFor(env, schoolId).publish(events)`), idempotent by id for
   * the 7-day retention: in one step each new event is appended to the log and addressed to the
   * registrations it concerns now (subscription, filter). Durable when it answers; hand-overs follow.
   */
  publish(events: SchoolEvent[]): PublishResult {
    if (events[0]) this.knowSchool(events[0].schoolId);
    const done = this.storage.transactionSync(() => accept(this.sql, this.readAudiences(), events, this.platform.now()));
    this.handOver(done.audiences);
    // Also for a school no registration hears (feed or course API only): its log is pruned.
    // An alarm already set ends by arming the next pruning itself.
    if (!this.alarms.armedAfter(this.platform.now())) void this.armPrune();
    if (done.seqs.length > 0) this.readers.wake();
    const loggable = events.filter((e) => e.type !== "webhook.test").length;
    return { accepted: done.seqs.length, duplicates: loggable - done.seqs.length, deliveries: done.targets };
  }

  // Test, resend and recover: the hub checks the registration, then its courier queues
  // (after a hand-over of anything it has not taken yet). Each returns the value, or
  // WEBHOOK_NOT_FOUND / WEBHOOK_DISABLED (/ EVENT_NOT_FOUND), and throws if the courier cannot
  // be reached.

  /** POST /v3/webhooks/{id}/test: a `webhook.test` event to this registration only (not in the log or feed). */
  async sendTest(id: string): Promise<CourierStep<{ eventId: string }>> {
    const config = this.usable(id);
    if (!config.ok) return config;
    const now = this.platform.now();
    const event = testEvent(this.school ?? "", id, now);
    return this.couriers.forward(id, (courier) =>
      courier.enqueue(config.value, { id: event.id, type: event.type, body: JSON.stringify(event), acceptedAt: now }),
    );
  }

  /**
   * POST …/deliveries/{eventId}/resend: the event due now (an already queued delivery of it
   * becomes due now). An event the hub still holds for the courier (its queue at its bound)
   * is queued already: it is delivered when handed over. Deleted meanwhile: WEBHOOK_NOT_FOUND.
   */
  async resend(id: string, eventId: string): Promise<CourierStep<{ eventId: string }>> {
    const config = await this.flushed(id);
    if (!config.ok) return config;
    const done = await this.couriers.forward<CourierStep<{ eventId: string }>>(id, (courier) => courier.resend(config.value, eventId));
    return !done.ok && done.error === "EVENT_NOT_FOUND" && this.couriers.heldFor(id, eventId) ? { ok: true, value: { eventId } } : done;
  }

  /** POST …/recover: every retained event accepted in [since, until) (ms) whose delivery ended failed or skipped, or waits for a retry, again (counted: courier/recover.ts). */
  async recover(id: string, since: number, until: number | null = null): Promise<CourierStep<{ queued: number; exact: boolean }>> {
    const config = await this.flushed(id);
    if (!config.ok) return config;
    return this.couriers.forward(id, (courier) => courier.recover(config.value, since, until ?? Number.MAX_SAFE_INTEGER));
  }

  /**
   * A courier's queue drained to half after its bound left events in the log
   * (`HandoverReceipt.full`): hand it what is owed now, the alarm armed as for any hand-over.
   * Idempotent (docs/architecture.md § Bounded work and storage).
   */
  drained(webhookId: string): void {
    this.couriers.drained(webhookId);
    this.handOver([webhookId]);
  }

  /**
   * A courier's notices, in order (docs/reference.md § "Failing and recovered notices"), taken
   * in one step (`takeNotices`): each new one appended to the log for the school's other
   * registrations that are enabled and not failing, and the feed; its `failing_since` set or cleared.
   */
  reportStreak(notices: StreakNotice[]): void {
    const step = this.storage.transactionSync(() => takeNotices(this.sql, this.school ?? "", this.readAudiences(), notices, this.platform.now()));
    if (step.accepted === 0) return;
    // A `failing_since` changed: who may be given notices changed with it.
    this.audiences = null;
    this.handOver(step.addressed);
    this.readers.wake();
  }

  /**
   * A courier's report (docs/reference.md § "Auto-disable"): its registration failed for
   * WEBHOOK_DISABLE_AFTER_HOURS, a receiver answered 410 or asked to be disabled
   * (`webhook-delivery: disable`). In one step (`takeDisable`) the registration is disabled
   * and `webhook.disabled` appended to the log; then the courier is given the config that stops it.
   */
  async reportFailing(report: FailingReport): Promise<void> {
    const step = this.storage.transactionSync(() => takeDisable(this.sql, this.school ?? "", report, this.platform.now()));
    if (step === null) return;
    this.audiences = step.audiences;
    this.handOver(step.addressed);
    this.readers.wake();
    await this.couriers.configure(report.webhookId).catch(() => {});
  }

  /**
   * A page of the events feed (GET /v3/events; see `FeedReaders.read`).
   *
   * @returns the page, or `FeedExpired` (with the change cursor to resume from) for a position older than the 7-day retention.
   */
  readFeed(query: FeedQuery): Promise<FeedPage | FeedExpired> {
    return this.readers.read(query);
  }

  // -------------------------------------------------------------------------------------
  // Upkeep

  /**
   * Hands over to every courier that is behind (a lost hand-over, a restart), pushes configs
   * not acknowledged, retries a few unfinished closes (`Couriers.retryCloses`),
   * prunes one chunk of the log, then re-arms. Runs at least once per arming: every step is idempotent.
   */
  override async alarm(): Promise<void> {
    this.alarms.fired();
    const now = this.platform.now();
    const log = pruneLog(this.sql, now, IDEMPOTENCY_TTL_MS);
    const more = registrations.pruneDeleted(this.sql, now) || log;
    this.handOver(behind(this.sql));
    const closes = await this.couriers.retryCloses(() => void this.armAlarm(now + RETRY_MS));
    if (more || closes) await this.armAlarm(now + 1_000);
    else await this.armPrune();
  }

  /**
   * Arms the alarm for the next pruning (`nextPruneAt`, at least PRUNE_INTERVAL_MS from now)
   * unless one runs by then: whenever the hub retains anything, an alarm will prune it
   * (docs/architecture.md § Bounded work and storage).
   */
  private armPrune(): Promise<void> {
    const due = nextPruneAt(this.sql, IDEMPOTENCY_TTL_MS);
    if (due === null) return Promise.resolve();
    return this.alarms.armBy(Math.max(due, this.platform.now() + PRUNE_INTERVAL_MS));
  }

  /**
   * Hands over to `ids` as soon as their turn comes, the alarm armed within
   * HANDOVER_WATCHDOG_MS: what is owed is read from storage again by then if this instance dies.
   */
  private handOver(ids: ReadonlySet<string> | readonly string[]): void {
    if ((ids instanceof Set ? ids.size : (ids as readonly string[]).length) === 0) return;
    this.couriers.mark(ids);
    void this.armAlarm(this.platform.now() + HANDOVER_WATCHDOG_MS);
  }

  /** Resolves when no hand-over is under way or could start now (tests, benchmark). */
  whenIdle(): Promise<void> {
    return this.couriers.whenIdle();
  }

  /** The size of this object's SQLite database, in bytes (operators, the benchmark's storage figures). */
  storageBytes(): number {
    return this.storage.sql.databaseSize;
  }

  // -------------------------------------------------------------------------------------

  /**
   * Before a resend or recover: the registration checked, what was addressed to it handed
   * over (`Couriers.flush`), then checked again (deleted or disabled while the flush waited).
   *
   * @throws if the flush's own hand-over fails.
   */
  private async flushed(id: string): Promise<CourierStep<CourierConfig>> {
    const before = this.usable(id);
    if (!before.ok) return before;
    await this.couriers.flush(id);
    return this.usable(id);
  }

  /** The config of active, enabled registration `id` (its courier now in use), or why it cannot be used. */
  private usable(id: string): CourierStep<CourierConfig> {
    return registrations.usable(this.sql, id, this.school ?? "", this.ctx.id.toString());
  }

  private readAudiences(): Audience[] {
    this.audiences ??= audiencesOf(registrations.readWebhooks(this.sql));
    return this.audiences;
  }

  private knowSchool(schoolId: string): void {
    if (this.school === schoolId) return;
    this.storage.kv.put("schoolId", schoolId);
    this.school = schoolId;
  }

  /** Arms the alarm for `at` (ms) unless it is already due sooner. */
  private armAlarm(at: number): Promise<void> {
    return this.alarms.arm(at, this.platform.now());
  }
}
