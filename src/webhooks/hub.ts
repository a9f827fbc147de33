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
 *   the signed attempt to the courier in the same step, so nothing starts after a delete.
 */
import { DurableObject } from "cloudflare:workers";
import type { SchoolEvent } from "../events/types";
import { mintId } from "../lib/ids";
import { formatInstant } from "../lib/time";
import { newSecret } from "./delivery";
import { Dispatcher } from "./dispatcher";
import { type Platform, platformFor } from "./platform";
import { COURIER_OPEN, LOG_RETENTION_MS, migrate } from "./schema";
import {
  type AttemptReport,
  type CreateWebhookResult,
  type DeliveryRecord,
  MAX_WEBHOOKS,
  type NewWebhook,
  type PublishResult,
  type Subscription,
  type WebhookRecord,
} from "./types";

type WebhookRow = {
  id: string;
  url: string;
  events: string;
  description: string | null;
  created_at: number;
};

const toWebhookRecord = (row: WebhookRow): WebhookRecord => ({
  id: row.id,
  url: row.url,
  events: JSON.parse(row.events) as Subscription,
  description: row.description,
  createdAt: formatInstant(row.created_at),
});

/**
 * The school's event hub. RPC methods: `createWebhook`, `listWebhooks`, `deleteWebhook`,
 * `listDeliveries`, `sendTest`, `publish`; `report` (from couriers); `alarm()` dispatches.
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
    this.dispatcher = new Dispatcher(ctx, env, this.platform);
    // Safety net: queued deliveries always have an alarm to serve them.
    void ctx.blockConcurrencyWhile(async () => {
      const next = this.dispatcher.nextDueAt();
      if (next !== null && (await ctx.storage.getAlarm()) === null) await ctx.storage.setAlarm(next);
    });
  }

  // -------------------------------------------------------------------------------------
  // Registrations

  /**
   * Creates a registration (POST /v3/webhooks). The input is already validated.
   *
   * @returns the registration with its new secret, or `WEBHOOK_LIMIT_REACHED` when the
   *   school already has 50 registrations.
   */
  createWebhook(input: NewWebhook): CreateWebhookResult {
    return this.ctx.storage.transactionSync((): CreateWebhookResult => {
      const { n } = this.sql.exec<{ n: number }>(`SELECT COUNT(*) AS n FROM webhooks WHERE deleted_at IS NULL`).one();
      if (n >= MAX_WEBHOOKS) return { ok: false, error: "WEBHOOK_LIMIT_REACHED" };
      const now = this.platform.now();
      let id = mintId("wh", now);
      // Never reuse an id, deleted ones included (a collision is astronomically unlikely).
      while (this.sql.exec(`SELECT 1 FROM webhooks WHERE id = ?`, id).toArray().length > 0) id = mintId("wh", now);
      const secret = newSecret();
      this.sql.exec(
        `INSERT INTO webhooks (id, url, events, description, secret, created_at) VALUES (?, ?, ?, ?, ?, ?)`,
        id,
        input.url,
        JSON.stringify(input.events),
        input.description,
        secret,
        now,
      );
      this.dispatcher.invalidate();
      return {
        ok: true,
        webhook: { id, url: input.url, events: input.events, description: input.description, createdAt: formatInstant(now), secret },
      };
    });
  }

  /** The school's registrations, oldest first, without secrets (GET /v3/webhooks). */
  listWebhooks(): WebhookRecord[] {
    return this.sql
      .exec<WebhookRow>(`SELECT id, url, events, description, created_at FROM webhooks WHERE deleted_at IS NULL ORDER BY created_at, id`)
      .toArray()
      .map(toWebhookRecord);
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
   * newest first (see `DeliveryRecord`).
   *
   * @param offset entries to skip; @param limit entries to return (the caller asks one more
   *   to learn whether another page exists).
   * @returns the entries, or `null` when the registration does not exist (or was deleted).
   */
  listDeliveries(id: string, offset = 0, limit = 100): DeliveryRecord[] | null {
    if (!this.isActive(id)) return null;
    this.dispatcher.flush();
    const since = this.platform.now() - LOG_RETENTION_MS;
    type Row = {
      event_id: string;
      event_type: string;
      attempt: number;
      status: DeliveryRecord["status"];
      response_status: number | null;
      error: string | null;
      attempted_at: number | null;
      next_attempt_at: number | null;
    };
    return this.sql
      .exec<Row>(
        `SELECT event_id, event_type, attempt, status, response_status, error, attempted_at, next_attempt_at
         FROM (
           SELECT event_id, event_type, attempt, status, response_status, error, attempted_at, next_attempt_at,
                  attempted_at AS sort_at, id AS tiebreak
           FROM attempts WHERE webhook_id = ?1 AND attempted_at >= ?2
           UNION ALL
           SELECT d.event_id, e.type, 1, 'pending', NULL, NULL, NULL, d.next_attempt_at, d.created_at, d.id
           FROM deliveries d JOIN events e ON e.id = d.event_id
           WHERE d.webhook_id = ?1 AND d.attempts = 0
         )
         ORDER BY sort_at DESC, tiebreak DESC
         LIMIT ?3 OFFSET ?4`,
        id,
        since,
        limit,
        offset,
      )
      .toArray()
      .map((r) => ({
        eventId: r.event_id,
        eventType: r.event_type,
        attempt: r.attempt,
        status: r.status,
        responseStatus: r.response_status,
        error: r.error,
        attemptedAt: r.attempted_at === null ? null : formatInstant(r.attempted_at),
        nextAttemptAt: r.next_attempt_at === null ? null : formatInstant(r.next_attempt_at),
      }));
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
      const hooks = this.sql
        .exec<{ id: string; events: string }>(`SELECT id, events FROM webhooks WHERE deleted_at IS NULL`)
        .toArray()
        .map((h) => {
          const types = JSON.parse(h.events) as string[];
          return { id: h.id, all: types.includes("*"), types };
        });
      // One statement stores the new events (a duplicate id, even within this call, is ignored)…
      const stored = this.sql
        .exec<{ id: string }>(
          `INSERT OR IGNORE INTO events (id, type, body, created_at)
           SELECT value ->> 0, value ->> 1, value ->> 2, ?2 FROM json_each(?1) RETURNING id`,
          JSON.stringify(events.map((e) => [e.id, e.type, JSON.stringify(e)])),
          now,
        )
        .toArray();
      // … and one more queues their deliveries, in the order published (`webhook.test`
      // events reach nobody this way).
      const fresh = new Set(stored.map((r) => r.id));
      const pairs: [string, string][] = [];
      for (const event of events) {
        if (!fresh.delete(event.id) || event.type === "webhook.test") continue;
        for (const hook of hooks) if (hook.all || hook.types.includes(event.type)) pairs.push([event.id, hook.id]);
      }
      this.dispatcher.queue(pairs, now);
      const out: PublishResult = { accepted: stored.length, duplicates: events.length - stored.length, deliveries: pairs.length };
      return out;
    });
    if (result.deliveries > 0) await this.dispatcher.wake();
    return result;
  }

  /**
   * Sends a `webhook.test` event to this registration only (POST /v3/webhooks/{id}/test):
   * `{ id: "evt_…", type: "webhook.test", createdAt, schoolId, data: { webhookId } }`,
   * queued like any delivery (signed, retried on the schedule).
   *
   * @returns the event id, or `null` when the registration does not exist (or was deleted).
   */
  async sendTest(id: string, schoolId: string): Promise<{ eventId: string } | null> {
    const eventId = this.ctx.storage.transactionSync(() => {
      if (!this.isActive(id)) return null;
      const now = this.platform.now();
      const event: SchoolEvent = { id: mintId("evt", now), type: "webhook.test", createdAt: formatInstant(now), schoolId, data: { webhookId: id } };
      this.sql.exec(`INSERT INTO events (id, type, body, created_at) VALUES (?, ?, ?, ?)`, event.id, event.type, JSON.stringify(event), now);
      this.dispatcher.queue([[event.id, id]], now);
      return event.id;
    });
    if (eventId === null) return null;
    await this.dispatcher.wake();
    return { eventId };
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
