/**
 * SchoolHub: the school's event hub (DESIGN.md; API.md § "Webhook registrations",
 * § "Event delivery"). One SQLite-backed Durable Object per school
 * (`idFromName(schoolId)`, see `hubFor`), the only owner of that school's registrations,
 * accepted events, delivery queue and delivery log. This file is its RPC surface; the schema
 * is in schema.ts, dispatch in dispatcher.ts, and each registration's requests are sent by
 * its courier (courier.ts), which holds no webhook state.
 *
 * Serial history. Every state change is one synchronous step (no `await` inside), so the
 * only places where other calls interleave are the calls the hub makes to couriers and the
 * few awaits listed in the methods:
 * - `publish` stores each new event and queues one delivery per registration subscribed at
 *   that instant, in one step;
 * - `deleteWebhook` marks the registration deleted (a tombstone: the id is never reused and
 *   a second delete finds nothing) and drops its queued deliveries in one step, then closes
 *   its courier (which aborts the requests under way) before answering;
 * - before an attempt the dispatcher re-reads the delivery and its registration and hands
 *   the signed attempt to the courier in the same step, so nothing starts after a delete;
 * - a disable (PATCH `enabled: false`, or auto-disable) marks the registration, bumps its
 *   epoch and ends its queued deliveries as `skipped` in one step, then holds its courier
 *   (orders signed before the epoch refused, queued ones dropped) before answering, so no
 *   attempt starts after the 200; events accepted meanwhile are logged `skipped`;
 * - test, resend and recover queue in one step and, if a delete came in while they woke the
 *   dispatch, answer WEBHOOK_NOT_FOUND (the delete dropped what they queued).
 */
import { DurableObject } from "cloudflare:workers";
import type { SchoolEvent } from "../events/types";
import { mintId } from "../lib/ids";
import { DEFAULT_GRACE_SECONDS } from "../lib/limits";
import { formatInstant } from "../lib/time";
import { newSecret } from "./delivery";
import { Dispatcher } from "./dispatcher";
import { type IdempotencyInput, lookupKey, storeKey } from "./idempotency";
import * as lifecycle from "./lifecycle";
import { type LogFilter, readLog } from "./log";
import type { Failing } from "./outcomes";
import { type Platform, platformFor } from "./platform";
import { accept, readWebhook, toWebhookRecord, WEBHOOK_COLUMNS, type WebhookRow } from "./registry";
import { COURIER_OPEN, migrate } from "./schema";
import { readStats, type StatsBucketSize } from "./stats";
import type { StatsBucket } from "./stats-schemas";
import {
  type AttemptReport,
  type CreateWebhookResult,
  type DeliveryRecord,
  type LifecycleError,
  MAX_WEBHOOKS,
  type NewWebhook,
  type PublishResult,
  type RotatedSecret,
  type WebhookRecord,
  type WebhookUpdate,
} from "./types";

/**
 * The school's event hub. RPC methods: `createWebhook`, `listWebhooks`, `updateWebhook`,
 * `rotateSecret`, `deleteWebhook`, `listDeliveries`, `sendTest`, `resend`, `recover`,
 * `publish`; `report` (from couriers); `alarm()` dispatches. The lifecycle's synchronous
 * steps are in lifecycle.ts, the log's reads in log.ts, registrations in registry.ts.
 */
export class SchoolHub extends DurableObject<Env> {
  private readonly sql: SqlStorage;
  private readonly platform: Platform;
  private readonly dispatcher: Dispatcher;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.sql = ctx.storage.sql;
    migrate(this.sql);
    this.platform = platformFor(ctx.id.toString(), "hub");
    this.dispatcher = new Dispatcher(ctx, env, this.platform, (failing) => this.autoDisable(failing));
    // Safety net: queued deliveries always have an alarm to serve them.
    void ctx.blockConcurrencyWhile(async () => {
      const next = this.dispatcher.nextDueAt();
      if (next !== null && (await ctx.storage.getAlarm()) === null) await ctx.storage.setAlarm(next);
    });
  }

  // -------------------------------------------------------------------------------------
  // Registrations

  /**
   * Creates a registration (POST /v3/webhooks). The input is already validated. With an
   * `Idempotency-Key` (`idem`), the key is looked up, the registration created and the answer
   * stored in this one synchronous step, so racing requests with one key create one.
   *
   * @returns the answer (201, the registration with its new secret, `location`) and whether
   *   it replays an earlier one; or `WEBHOOK_LIMIT_REACHED` when the school already has 50
   *   registrations, `IDEMPOTENCY_KEY_MISMATCH` when the key was used with another body.
   */
  createWebhook(input: NewWebhook, idem?: IdempotencyInput): CreateWebhookResult {
    return this.ctx.storage.transactionSync((): CreateWebhookResult => {
      const found = idem ? lookupKey(this.sql, idem, this.platform.now()) : { kind: "new" as const };
      if (found.kind === "replay") return { ok: true, answer: found.answer, replayed: true };
      if (found.kind === "mismatch") return { ok: false, error: "IDEMPOTENCY_KEY_MISMATCH" };
      const { n } = this.sql.exec<{ n: number }>(`SELECT COUNT(*) AS n FROM webhooks WHERE deleted_at IS NULL`).one();
      if (n >= MAX_WEBHOOKS) return { ok: false, error: "WEBHOOK_LIMIT_REACHED" };
      const now = this.platform.now();
      let id = mintId("wh", now);
      // Never reuse an id, deleted ones included (a collision is astronomically unlikely).
      while (this.sql.exec(`SELECT 1 FROM webhooks WHERE id = ?`, id).toArray().length > 0) id = mintId("wh", now);
      const secret = newSecret();
      this.sql.exec(
        `INSERT INTO webhooks (id, url, events, description, secret, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?6)`,
        id,
        input.url,
        JSON.stringify(input.events),
        input.description,
        secret,
        now,
      );
      this.dispatcher.invalidate();
      const webhook = { ...toWebhookRecord(readWebhook(this.sql, id)!), secret };
      const answer = { status: 201, body: JSON.stringify({ status: "success", result: webhook }), location: `/v3/webhooks/${id}` };
      if (idem) storeKey(this.sql, idem, answer, now);
      return { ok: true, answer, replayed: false };
    });
  }

  /** The school's registrations, oldest first, without secrets (GET /v3/webhooks). */
  listWebhooks(): WebhookRecord[] {
    return this.sql.exec<WebhookRow>(`SELECT ${WEBHOOK_COLUMNS} FROM webhooks WHERE deleted_at IS NULL ORDER BY created_at, id`).toArray().map(toWebhookRecord);
  }

  /**
   * Changes a registration (PATCH /v3/webhooks/{id}; see `lifecycle.update`). A disable (or a
   * URL change) holds the registration's courier before this returns, so from the answer on
   * no attempt signed before starts; attempts already sent finish.
   *
   * @returns the record, or `null` for an unknown or deleted id (also one deleted meanwhile).
   * @throws if the courier cannot be reached (the change is made; a repeated PATCH holds it).
   */
  async updateWebhook(id: string, change: WebhookUpdate): Promise<WebhookRecord | null> {
    const done = this.ctx.storage.transactionSync(() => lifecycle.update(this.sql, id, change, this.platform.now()));
    if (done === null) return null;
    if (done.hold !== null) await this.dispatcher.hold(id, done.hold);
    if (change.enabled === true) await this.dispatcher.wake();
    return this.isActive(id) ? done.record : null;
  }

  /**
   * Rotates the secret (POST /v3/webhooks/{id}/secret/rotate): attempts from now on are signed
   * with the new secret and, for `graceSeconds` (0–604800), the previous one too.
   *
   * @returns the new secret, or `null` for an unknown or deleted id.
   */
  rotateSecret(id: string, graceSeconds: number = DEFAULT_GRACE_SECONDS): RotatedSecret | null {
    return this.ctx.storage.transactionSync(() => lifecycle.rotate(this.sql, id, graceSeconds, this.platform.now()));
  }

  /**
   * Deletes a registration (DELETE /v3/webhooks/{id}), keeping the deregistration promise
   * of API.md: in one synchronous step the registration becomes a tombstone and its queued
   * deliveries (pending retries included) are dropped; then, if it was ever given an attempt,
   * its courier is closed (requests under way aborted, anything still on its way refused)
   * before this returns. No attempt to it can start afterwards, and the deletion is durable
   * before the caller gets the answer (output gate). See courier.ts for the argument.
   *
   * @returns `true` if it was deleted now; `false` for an unknown or already deleted id
   *   (a concurrent second delete returns `false` once the first one's close is done).
   * @throws if the courier cannot be reached: nothing is promised then; the alarm retries the
   *   close, and a repeated DELETE completes it and returns `true`.
   */
  async deleteWebhook(id: string): Promise<boolean> {
    const found = this.ctx.storage.transactionSync(() => {
      const row = this.sql.exec<{ deleted_at: number | null; courier: number }>(`SELECT deleted_at, courier FROM webhooks WHERE id = ?`, id).toArray()[0];
      if (!row) return null;
      if (row.deleted_at !== null) return row.courier === COURIER_OPEN ? { now: false, courier: row.courier } : null;
      this.sql.exec(`UPDATE webhooks SET deleted_at = ?, secret = '' WHERE id = ?`, this.platform.now(), id);
      this.sql.exec(`DELETE FROM deliveries WHERE webhook_id = ?`, id);
      return { now: true, courier: row.courier };
    });
    if (found === null) return false;
    if (found.now) this.dispatcher.forget(id);
    else {
      // Deleted before, its close not confirmed: a close under way means a racing DELETE
      // that will answer 200; otherwise a previous one failed, and this one completes it.
      const underWay = this.dispatcher.closing(id);
      if (underWay) return underWay.then(() => false);
    }
    if (found.courier === COURIER_OPEN) await this.dispatcher.closeCourier(id);
    return true;
  }

  /**
   * Recent deliveries of a registration (GET /v3/webhooks/{id}/deliveries): the last 7 days,
   * newest first (see `DeliveryRecord`), filtered (`LogFilter`, combined with AND; log.ts).
   *
   * @param offset entries to skip; @param limit entries to return (the caller asks one more
   *   to learn whether another page exists).
   * @returns the entries, or `null` when the registration does not exist (or was deleted).
   */
  listDeliveries(id: string, filter: LogFilter = {}, offset = 0, limit = 100): DeliveryRecord[] | null {
    if (!this.isActive(id)) return null;
    this.dispatcher.flush();
    return readLog(this.sql, id, filter, this.platform.now(), offset, limit);
  }

  /**
   * The log of a registration counted per bucket over [since, until) (ms; GET
   * /v3/webhooks/{id}/stats, see stats.ts): every bucket of the window, oldest first.
   *
   * @returns the buckets, or `null` when the registration does not exist (or was deleted).
   */
  deliveryStats(id: string, since: number, until: number, bucket: StatsBucketSize): StatsBucket[] | null {
    if (!this.isActive(id)) return null;
    this.dispatcher.flush();
    return readStats(this.sql, id, since, until, bucket, this.platform.now());
  }

  // -------------------------------------------------------------------------------------
  // Events

  /**
   * Accepts events (course writes call it through `hubFor(env, schoolId).publish(events)`).
   *
   * Idempotent by event id (for 7 days, the retention of accepted events): an id already
   * accepted is ignored, so the outbox sweep may publish again safely. In one synchronous
   * step each new event is stored and one delivery is queued for every registration
   * subscribed to its type at that instant (`webhook.test` events reach nobody this way).
   * Returns once that is durable and dispatch is under way or the alarm set.
   */
  async publish(events: SchoolEvent[]): Promise<PublishResult> {
    const result = this.ctx.storage.transactionSync((): PublishResult => {
      const now = this.platform.now();
      // Registrations read, events stored, deliveries queued (or skipped entries logged for
      // disabled registrations): one step.
      const { stored, pairs } = accept(this.sql, events, now);
      this.dispatcher.queue(pairs, now);
      return { accepted: stored, duplicates: events.length - stored, deliveries: pairs.length };
    });
    if (result.deliveries > 0) await this.dispatcher.wake();
    return result;
  }

  /**
   * Sends a `webhook.test` event to this registration only (POST /v3/webhooks/{id}/test):
   * `{ id: "evt_…", type: "webhook.test", createdAt, schoolId, data: { webhookId } }`,
   * queued like any delivery (signed, retried on the schedule).
   *
   * @returns the event id, or `WEBHOOK_NOT_FOUND` (also when deleted before this answers: the
   *   delete dropped it, nothing is sent) / `WEBHOOK_DISABLED`.
   */
  async sendTest(id: string, schoolId: string): Promise<lifecycle.Step<{ eventId: string }>> {
    return this.queueing(id, () => {
      const error = lifecycle.usable(this.sql, id);
      if (error) return { ok: false, error };
      const now = this.platform.now();
      const event: SchoolEvent = { id: mintId("evt", now), type: "webhook.test", createdAt: formatInstant(now), schoolId, data: { webhookId: id } };
      this.sql.exec(`INSERT INTO events (id, type, body, created_at) VALUES (?, ?, ?, ?)`, event.id, event.type, JSON.stringify(event), now);
      this.dispatcher.queue([[event.id, id]], now);
      return { ok: true, value: { eventId: event.id } };
    });
  }

  /**
   * Resend (POST /v3/webhooks/{id}/deliveries/{eventId}/resend): the event due now for this
   * registration (an already queued delivery of it becomes due now).
   *
   * @returns `{ eventId }`, or `WEBHOOK_NOT_FOUND` / `WEBHOOK_DISABLED` / `EVENT_NOT_FOUND`.
   */
  resend(id: string, eventId: string): Promise<lifecycle.Step<{ eventId: string }>> {
    return this.queueing(id, () => lifecycle.resend(this.sql, this.dispatcher, id, eventId, this.platform.now()));
  }

  /**
   * Recover (POST /v3/webhooks/{id}/recover): queues again, in acceptance order, each retained
   * event accepted in [since, until) (ms) whose delivery ended failed or skipped. The caller
   * checked the range against the retention.
   *
   * @returns `{ queued }`, or `WEBHOOK_NOT_FOUND` / `WEBHOOK_DISABLED`.
   */
  recover(id: string, since: number, until: number | null = null): Promise<lifecycle.Step<{ queued: number }>> {
    return this.queueing(id, () => lifecycle.recover(this.sql, this.dispatcher, id, since, until ?? Number.MAX_SAFE_INTEGER, this.platform.now()));
  }

  /**
   * Runs a step that queues deliveries for `id`, then wakes the dispatch. If the registration
   * was deleted meanwhile (its delete dropped what was queued), answers WEBHOOK_NOT_FOUND: the
   * promise of API.md § "DELETE" holds for every answer given after the delete's.
   */
  private async queueing<T>(id: string, step: () => lifecycle.Step<T>): Promise<lifecycle.Step<T>> {
    const result = this.ctx.storage.transactionSync(step);
    if (!result.ok) return result;
    await this.dispatcher.wake();
    return this.isActive(id) ? result : { ok: false, error: "WEBHOOK_NOT_FOUND" as LifecycleError };
  }

  /** Auto-disable, inside the outcomes' step (lifecycle.ts); the couriers are held just after. */
  private autoDisable(failing: Failing[]): void {
    const done = lifecycle.autoDisable(this.sql, this.dispatcher, failing, this.platform.now());
    for (const { webhookId, epoch } of done) {
      void Promise.resolve()
        .then(() => this.dispatcher.hold(webhookId, epoch))
        .then(() => this.dispatcher.wake())
        .catch((err) => console.error("SchoolHub: holding a disabled registration's courier failed", err));
    }
  }

  // -------------------------------------------------------------------------------------
  // Dispatch

  /**
   * Outcomes of attempts, from the registrations' couriers (courier.ts). An outcome that
   * matches no attempt of this instance (stale, or its registration deleted) is ignored.
   */
  report(reports: AttemptReport[]): void {
    this.dispatcher.report(reports);
  }

  /**
   * Prunes the log, starts whatever is due and, once idle, re-arms itself for the next due
   * row (or the next pruning). Safe to run more than once, even concurrently: a delivery in
   * flight (or whose outcome is not yet written) is not started again, and an outcome is
   * recorded only if the delivery is still where it was.
   */
  override alarm(): void {
    this.dispatcher.alarm();
  }

  /** Resolves when no attempt is in flight and every outcome is written (tests, benchmark). */
  whenIdle(): Promise<void> {
    return this.dispatcher.whenIdle();
  }

  private isActive(id: string): boolean {
    return this.sql.exec(`SELECT 1 FROM webhooks WHERE id = ? AND deleted_at IS NULL`, id).toArray().length > 0;
  }
}
