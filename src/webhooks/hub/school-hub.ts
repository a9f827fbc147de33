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
import { mintId } from "../../lib/ids";
import { DEFAULT_GRACE_SECONDS, RETENTION_MS } from "../../lib/limits";
import { formatInstant } from "../../lib/time";
import { type Platform, platformFor } from "../platform/platform";
import {
  type CourierStep,
  type CreateWebhookResult,
  type FailingReport,
  type LifecycleError,
  MAX_WEBHOOKS,
  type NewWebhook,
  type PublishResult,
  type RotatedSecret,
  type WebhookRecord,
  type WebhookUpdate,
} from "../rpc";
import { Couriers } from "./couriers";
import { type Audience, accept, audiencesOf, behind } from "./event-log";
import { type FeedPage, type FeedPosition, positionAt, readFeed, tail } from "./feed";
import { type IdempotencyInput, lookupKey, storeKey } from "./idempotency";
import * as registrations from "./registrations";
import { COURIER_CLOSED, COURIER_NONE, COURIER_OPEN, migrate, pruneLog } from "./storage";

/** When idle with a log to prune, the alarm comes back after this long (ms). */
const PRUNE_INTERVAL_MS = 60 * 60 * 1000;
/** A close or push that failed is tried again by the alarm this much later (ms). */
const RETRY_MS = 10_000;

/**
 * The school's event hub. RPC methods: `createWebhook`, `listWebhooks`, `getWebhook`,
 * `updateWebhook`, `rotateSecret`, `deleteWebhook`, `publish`, `sendTest`, `resend`,
 * `recover`; `reportFailing` (from couriers); `alarm()` hands over what is behind, retries
 * closes and prunes.
 */
export class SchoolHub extends DurableObject<Env> {
  private readonly sql: SqlStorage;
  private readonly platform: Platform;
  private readonly couriers: Couriers;
  /** The active registrations as the accept step reads them (`null`: reload). */
  private audiences: Audience[] | null = null;
  private school: string | null;
  /** Feed readers waiting for the next accepted event (long poll): woken by `publish`. */
  private readonly feedWaiters = new Set<() => void>();
  /** The alarm as this instance last set it (`undefined`: unknown). */
  private alarmAt: number | null | undefined = undefined;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.sql = ctx.storage.sql;
    migrate(this.sql);
    this.platform = platformFor(ctx.id.toString(), "hub");
    this.school = (ctx.storage.kv.get("schoolId") as string | undefined) ?? null;
    this.couriers = new Couriers(env, {
      sql: this.sql,
      platform: this.platform,
      schoolId: () => this.school ?? "",
      hubId: ctx.id.toString(),
      retryAt: (at) => void this.armAlarm(at),
    });
    // A new instance: whatever a lost hand-over, close or push left behind is caught up.
    const unfinished = behind(this.sql).length > 0 || this.unclosed().length > 0;
    if (unfinished) void ctx.blockConcurrencyWhile(() => this.armAlarm(this.platform.now()));
  }

  // -------------------------------------------------------------------------------------
  // Registrations

  /**
   * Creates a registration (POST /v3/webhooks) of school `schoolId`; the input is validated.
   * With an `Idempotency-Key` (`idem`) the key is looked up, the registration created and the
   * answer stored in this one synchronous step, so racing requests with one key create one.
   *
   * @returns the answer (201, the record with its new secret, `location`) and whether it
   *   replays an earlier one; or `WEBHOOK_LIMIT_REACHED` (50 registrations already),
   *   `IDEMPOTENCY_KEY_MISMATCH` (the key was used with another body).
   */
  createWebhook(schoolId: string, input: NewWebhook, idem?: IdempotencyInput): CreateWebhookResult {
    this.knowSchool(schoolId);
    return this.ctx.storage.transactionSync((): CreateWebhookResult => {
      const now = this.platform.now();
      const found = idem ? lookupKey(this.sql, idem, now) : { kind: "new" as const };
      if (found.kind === "replay") return { ok: true, answer: found.answer, replayed: true };
      if (found.kind === "mismatch") return { ok: false, error: "IDEMPOTENCY_KEY_MISMATCH" };
      const { n } = this.sql.exec<{ n: number }>(`SELECT COUNT(*) AS n FROM webhooks WHERE deleted_at IS NULL`).one();
      if (n >= MAX_WEBHOOKS) return { ok: false, error: "WEBHOOK_LIMIT_REACHED" };
      let id = mintId("wh", now);
      // Never reuse an id, deleted ones included (a collision is astronomically unlikely).
      while (registrations.idTaken(this.sql, id)) id = mintId("wh", now);
      const secret = registrations.insertWebhook(this.sql, id, input, now);
      this.audiences = null;
      const webhook = { ...registrations.toWebhookRecord(registrations.readWebhook(this.sql, id)!), secret };
      const answer = { status: 201, body: JSON.stringify({ status: "success", result: webhook }), location: `/v3/webhooks/${id}` };
      if (idem) storeKey(this.sql, idem, answer, now);
      void this.armAlarm(now + IDEMPOTENCY_TTL_MS);
      return { ok: true, answer, replayed: false };
    });
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
   * Changes a registration (PATCH /v3/webhooks/{id}) in one step, then gives its courier the
   * new config before answering: from the answer on, attempts start with it (a disable: none
   * starts; its queue ends `skipped`). `events` and `filter` apply to events accepted after it.
   *
   * @returns the record, or `null` for an unknown or deleted id (also one deleted meanwhile).
   * @throws if the courier cannot be reached: the change is made, the alarm pushes it again,
   *   and a repeated PATCH pushes it before answering.
   */
  async updateWebhook(id: string, change: WebhookUpdate): Promise<WebhookRecord | null> {
    const row = this.ctx.storage.transactionSync(() => registrations.updateWebhook(this.sql, id, change, this.platform.now()));
    if (row === null) return null;
    this.audiences = null;
    await this.couriers.configure(id);
    return this.getWebhook(id);
  }

  /**
   * Rotates the secret (POST /v3/webhooks/{id}/secret/rotate): attempts from now on are signed
   * with the new secret and, for `graceSeconds` (0–604800), the previous one too. The courier
   * is given the new secret before the answer when it can be reached (else by the alarm).
   *
   * @returns the new secret, or `null` for an unknown or deleted id.
   */
  async rotateSecret(id: string, graceSeconds: number = DEFAULT_GRACE_SECONDS): Promise<RotatedSecret | null> {
    const rotated = this.ctx.storage.transactionSync(() => registrations.rotateSecret(this.sql, id, graceSeconds, this.platform.now()));
    if (rotated) await this.couriers.configure(id).catch(() => {});
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
    const found = this.ctx.storage.transactionSync(() => registrations.tombstone(this.sql, id, this.platform.now()));
    if (found === null) return false;
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

  // -------------------------------------------------------------------------------------
  // Events

  /**
   * Accepts events (the outbox calls it through `hubFor(env, schoolId).publish(events)`).
   * Idempotent by event id for 7 days (the log's retention), so the outbox sweep may publish
   * again safely. In one step each new event is appended to the log and addressed to every
   * registration it concerns at that instant (subscription; filter, on the course as carried
   * or as it was before the change, `previous`). Resolves once that is durable; hand-overs to
   * the couriers follow.
   */
  publish(events: SchoolEvent[]): PublishResult {
    if (events[0]) this.knowSchool(events[0].schoolId);
    const done = this.ctx.storage.transactionSync(() => accept(this.sql, this.readAudiences(), events, this.platform.now()));
    this.couriers.mark(done.audiences);
    if (done.seqs.length > 0) this.wakeReaders();
    const loggable = events.filter((e) => e.type !== "webhook.test").length;
    return { accepted: done.seqs.length, duplicates: loggable - done.seqs.length, deliveries: done.targets };
  }

  /**
   * Sends a `webhook.test` event to this registration only (POST /v3/webhooks/{id}/test),
   * queued at its courier like any delivery; not in the school's log or feed.
   *
   * @returns the event id, or `WEBHOOK_NOT_FOUND` (also when deleted meanwhile) /
   *   `WEBHOOK_DISABLED`.
   * @throws if the courier cannot be reached.
   */
  async sendTest(id: string): Promise<CourierStep<{ eventId: string }>> {
    const config = this.usable(id);
    if (!config.ok) return config;
    const now = this.platform.now();
    const event: SchoolEvent = {
      id: mintId("evt", now),
      type: "webhook.test",
      createdAt: formatInstant(now),
      schoolId: this.school ?? "",
      data: { webhookId: id },
    };
    return this.couriers.forward(id, (courier) =>
      courier.enqueue(config.value, { id: event.id, type: event.type, body: JSON.stringify(event), acceptedAt: now }),
    );
  }

  /**
   * Resend (POST /v3/webhooks/{id}/deliveries/{eventId}/resend): the event due now at the
   * registration's courier (an already queued delivery of it becomes due now).
   *
   * @returns `{ eventId }`, or `WEBHOOK_NOT_FOUND` / `WEBHOOK_DISABLED` / `EVENT_NOT_FOUND`.
   * @throws if the courier cannot be reached.
   */
  async resend(id: string, eventId: string): Promise<CourierStep<{ eventId: string }>> {
    const config = this.usable(id);
    if (!config.ok) return config;
    await this.couriers.flush(id);
    return this.couriers.forward(id, (courier) => courier.resend(config.value, eventId));
  }

  /**
   * Recover (POST /v3/webhooks/{id}/recover): the courier queues again, in acceptance order,
   * each retained event accepted in [since, until) (ms) whose delivery ended failed or
   * skipped. The caller checked the range against the retention.
   *
   * @returns `{ queued }`, or `WEBHOOK_NOT_FOUND` / `WEBHOOK_DISABLED`.
   * @throws if the courier cannot be reached.
   */
  async recover(id: string, since: number, until: number | null = null): Promise<CourierStep<{ queued: number }>> {
    const config = this.usable(id);
    if (!config.ok) return config;
    await this.couriers.flush(id);
    return this.couriers.forward(id, (courier) => courier.recover(config.value, since, until ?? Number.MAX_SAFE_INTEGER));
  }

  /**
   * A courier's report (API.md § "Auto-disable"): its registration failed for
   * WEBHOOK_DISABLE_AFTER_HOURS, or a receiver answered 410. In one step the registration is
   * disabled (unless it already is, or was re-enabled since) and `webhook.disabled` is
   * appended to the log for the school's other registrations and the feed; then the courier
   * is given the config that stops it.
   */
  async reportFailing(report: FailingReport): Promise<void> {
    const disabled = this.ctx.storage.transactionSync(() => {
      const now = this.platform.now();
      if (!registrations.disableWebhook(this.sql, report.webhookId, report.reason, report.version, now)) return false;
      this.audiences = null;
      const event: SchoolEvent = {
        id: mintId("evt", now),
        type: "webhook.disabled",
        createdAt: formatInstant(now),
        schoolId: this.school ?? "",
        data: {
          webhookId: report.webhookId,
          reason: report.reason,
          failingSince: report.failingSince === null ? null : formatInstant(report.failingSince),
        },
      };
      this.couriers.mark(accept(this.sql, this.readAudiences(), [event], now, report.webhookId).audiences);
      this.wakeReaders();
      return true;
    });
    if (disabled) await this.couriers.configure(report.webhookId).catch(() => {});
  }

  /**
   * A page of the events feed (GET /v3/events): events after `after` (a position a previous
   * page returned), or accepted at or after `since` (ms), or from the oldest retained; of
   * `types` (`null`: all); at most `limit`. With `waitMs` > 0 and nothing to return, waits
   * until an event is accepted (woken by `publish`, no polling) or the time is up.
   *
   * @returns the page, or `CURSOR_EXPIRED` for a position older than the 7-day retention.
   */
  async readFeed(query: { after?: FeedPosition; since?: number; types: string[] | null; limit: number; waitMs: number }): Promise<FeedPage | "CURSOR_EXPIRED"> {
    const now = this.platform.now();
    let from: FeedPosition;
    if (query.after !== undefined) {
      if (query.after.at < now - RETENTION_MS) return "CURSOR_EXPIRED";
      from = query.after;
    } else from = query.since !== undefined ? positionAt(this.sql, query.since, now) : tail(this.sql, now);
    const deadline = now + query.waitMs;
    for (;;) {
      const page = readFeed(this.sql, from, query.types, query.limit);
      const left = deadline - this.platform.now();
      if (page.bodies.length > 0 || left <= 0) {
        // An empty page leaves the reader at the head as of now: nothing before it is missed.
        if (page.bodies.length === 0) page.next = { seq: page.next.seq, at: Math.max(page.next.at, this.platform.now()) };
        return page;
      }
      from = page.next;
      await new Promise<void>((resolve) => {
        const wake = () => {
          timer.cancel();
          this.feedWaiters.delete(wake);
          resolve();
        };
        const timer = this.platform.setTimer(wake, left);
        this.feedWaiters.add(wake);
      });
    }
  }

  // -------------------------------------------------------------------------------------
  // Upkeep

  /**
   * Hands over to every courier that is behind (a lost hand-over, a restart), pushes configs
   * not acknowledged, retries unfinished closes, prunes one chunk of the log, then re-arms.
   * Runs at least once per arming: every step is idempotent.
   */
  override async alarm(): Promise<void> {
    this.alarmAt = null;
    const now = this.platform.now();
    const more = pruneLog(this.sql, now, IDEMPOTENCY_TTL_MS);
    this.couriers.mark(behind(this.sql));
    const unclosed = this.unclosed();
    await Promise.all(
      unclosed.map((id) =>
        this.couriers.close(id).then(
          () => this.sql.exec(`UPDATE webhooks SET courier = ? WHERE id = ?`, COURIER_CLOSED, id),
          () => this.armAlarm(now + RETRY_MS),
        ),
      ),
    );
    const hasLog =
      this.sql.exec(`SELECT 1 FROM events LIMIT 1`).toArray().length > 0 || this.sql.exec(`SELECT 1 FROM idempotency_keys LIMIT 1`).toArray().length > 0;
    if (more) await this.armAlarm(now + 1_000);
    else if (hasLog) await this.armAlarm(now + PRUNE_INTERVAL_MS);
  }

  /** Resolves when no hand-over is under way or could start now (tests, benchmark). */
  whenIdle(): Promise<void> {
    return this.couriers.whenIdle();
  }

  /** The size of this object's SQLite database, in bytes (operators, the benchmark's storage figures). */
  storageBytes(): number {
    return this.ctx.storage.sql.databaseSize;
  }

  /** Hand-over calls this instance made (the benchmark counts calls between objects). */
  handoverCount(): number {
    return this.couriers.handovers;
  }

  // -------------------------------------------------------------------------------------

  /** The config of active, enabled registration `id`, or why it cannot be used. */
  private usable(id: string): CourierStep<ReturnType<typeof registrations.courierConfig>> {
    const row = registrations.readWebhook(this.sql, id);
    if (!row) return { ok: false, error: "WEBHOOK_NOT_FOUND" as LifecycleError };
    if (row.enabled !== 1) return { ok: false, error: "WEBHOOK_DISABLED" };
    if (row.courier !== COURIER_OPEN) this.sql.exec(`UPDATE webhooks SET courier = ? WHERE id = ?`, COURIER_OPEN, id);
    return { ok: true, value: registrations.courierConfig(row, this.school ?? "", this.ctx.id.toString()) };
  }

  private readAudiences(): Audience[] {
    this.audiences ??= audiencesOf(registrations.readWebhooks(this.sql));
    return this.audiences;
  }

  /** Tombstones whose courier is not confirmed closed. */
  private unclosed(): string[] {
    return this.sql
      .exec<{ id: string }>(`SELECT id FROM webhooks WHERE deleted_at IS NOT NULL AND courier = ?`, COURIER_OPEN)
      .toArray()
      .map((r) => r.id);
  }

  /** Wakes every waiting feed reader (events were accepted). */
  private wakeReaders(): void {
    for (const wake of [...this.feedWaiters]) wake();
  }

  private knowSchool(schoolId: string): void {
    if (this.school === schoolId) return;
    this.school = schoolId;
    this.ctx.storage.kv.put("schoolId", schoolId);
  }

  /** Arms the alarm for `at` (ms) unless it is already due sooner. */
  private async armAlarm(at: number): Promise<void> {
    if (this.alarmAt === undefined) this.alarmAt = await this.ctx.storage.getAlarm();
    if (this.alarmAt !== null && this.alarmAt <= at) return;
    this.alarmAt = at;
    await this.ctx.storage.setAlarm(at);
  }
}
