/**
 * SchoolHub: the school's event hub (DESIGN.md; API.md § "Webhook registrations",
 * § "Event delivery"). One SQLite-backed Durable Object per school
 * (`idFromName(schoolId)`, see `hubFor`), the only owner of that school's registrations,
 * accepted events, delivery queue and delivery log.
 *
 * Serial history. Every state change is one synchronous step (no `await` inside), so the
 * only places where other calls interleave are the `fetch()` of an attempt (it opens the
 * input gate) and the few awaits listed in the methods:
 * - `publish` stores each new event and queues one delivery per registration subscribed at
 *   that instant, in one step;
 * - `deleteWebhook` marks the registration deleted (a tombstone: the id is never reused and
 *   a second delete finds nothing), drops its queued deliveries and aborts its in-flight
 *   attempts, in one step;
 * - before an attempt the dispatcher re-reads the delivery and its registration and starts
 *   the fetch in the same step (signing is synchronous), so nothing starts after a delete.
 *
 * Dispatch. Deliveries are rows with a due time. `alarm()` starts every due delivery it can
 * (at most 32 attempts in flight, 8 per registration, served round-robin so a slow endpoint
 * does not hold the others back) and waits until the hub is idle; each finished attempt
 * starts the next due ones. The hub remembers in memory which deliveries are in flight, so
 * a second alarm run never starts one twice, and a new instance (after a restart
 * mid-attempt) sends them again: nothing is lost, delivery is at least once. Outcomes are
 * written in batches (one storage commit for up to 64 attempts, at most 10 ms late). When
 * idle the alarm is re-armed for the next due row.
 */
import { DurableObject } from "cloudflare:workers";
import type { SchoolEvent } from "../events/types";
import { mintId } from "../lib/ids";
import { formatInstant } from "../lib/time";
import { judgeAttempt, newSecret, parseRetrySchedule, parseTimeoutMs, secretKey, signedHeaders } from "./delivery";
import {
  MAX_WEBHOOKS,
  type CreateWebhookResult,
  type DeliveryRecord,
  type NewWebhook,
  type PublishResult,
  type Subscription,
  type WebhookRecord,
} from "./types";

/** Most attempts in flight per hub. */
export const MAX_IN_FLIGHT = 32;
/** Most attempts in flight per registration. */
export const MAX_IN_FLIGHT_PER_WEBHOOK = 8;
/** How long the delivery log and accepted events are kept, in ms (7 days). */
export const LOG_RETENTION_MS = 7 * 24 * 60 * 60 * 1000;
/** Outcomes are written at most this long after the attempt ends (ms), or … */
const FLUSH_AFTER_MS = 10;
/** … as soon as this many are waiting: one storage commit for many attempts. */
const FLUSH_BATCH = 64;
/** When idle with a log to prune, the alarm comes back after this long (ms). */
const PRUNE_INTERVAL_MS = 24 * 60 * 60 * 1000;

/**
 * Schema migrations, applied in order in the constructor; `meta.schema_version` records how
 * many ran. Append, never edit.
 */
const MIGRATIONS: string[][] = [
  [
    `CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)`,
    // Registrations. A deleted one keeps its row (deleted_at set, secret erased) as a tombstone.
    `CREATE TABLE webhooks (
       id TEXT PRIMARY KEY,
       url TEXT NOT NULL,
       events TEXT NOT NULL,
       description TEXT,
       secret TEXT NOT NULL,
       created_at INTEGER NOT NULL,
       deleted_at INTEGER
     )`,
    // Accepted events, by id (publish is idempotent by event id); body = the exact bytes POSTed.
    `CREATE TABLE events (
       id TEXT PRIMARY KEY,
       type TEXT NOT NULL,
       body TEXT NOT NULL,
       created_at INTEGER NOT NULL
     )`,
    `CREATE INDEX events_created ON events (created_at)`,
    // The queue: one row per (event, registration) not yet succeeded or failed.
    `CREATE TABLE deliveries (
       id INTEGER PRIMARY KEY AUTOINCREMENT,
       event_id TEXT NOT NULL,
       webhook_id TEXT NOT NULL,
       attempts INTEGER NOT NULL DEFAULT 0,
       next_attempt_at INTEGER NOT NULL,
       created_at INTEGER NOT NULL,
       UNIQUE (event_id, webhook_id)
     )`,
    `CREATE INDEX deliveries_due ON deliveries (webhook_id, next_attempt_at, id)`,
    `CREATE INDEX deliveries_next ON deliveries (next_attempt_at)`,
    // The log: one row per attempt made.
    `CREATE TABLE attempts (
       id INTEGER PRIMARY KEY AUTOINCREMENT,
       webhook_id TEXT NOT NULL,
       event_id TEXT NOT NULL,
       event_type TEXT NOT NULL,
       attempt INTEGER NOT NULL,
       status TEXT NOT NULL,
       response_status INTEGER,
       error TEXT,
       attempted_at INTEGER NOT NULL,
       next_attempt_at INTEGER
     )`,
    `CREATE INDEX attempts_by_webhook ON attempts (webhook_id, attempted_at)`,
    `CREATE INDEX attempts_by_time ON attempts (attempted_at)`,
  ],
];

/** Applies pending MIGRATIONS (synchronous; runs before any call reaches the object). */
function migrate(sql: SqlStorage): void {
  sql.exec(`CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)`);
  const row = sql.exec<{ value: string }>(`SELECT value FROM meta WHERE key = 'schema_version'`).toArray()[0];
  let version = row ? Number(row.value) : 0;
  while (version < MIGRATIONS.length) {
    for (const statement of MIGRATIONS[version]!) sql.exec(statement);
    version += 1;
    sql.exec(`INSERT OR REPLACE INTO meta (key, value) VALUES ('schema_version', ?)`, String(version));
  }
}

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

/** A finished attempt, waiting to be written. */
interface Outcome {
  started: StartedAttempt;
  /** HTTP status; `undefined` for network errors and timeouts. */
  status: number | undefined;
  error: string | null;
  finishedAt: number;
}

/** Why an attempt was aborted (the abort reason). */
const TIMEOUT = Symbol("timeout");
const DELETED = Symbol("deleted");

/** One attempt as started: what is needed to record its outcome. */
interface StartedAttempt {
  deliveryId: number;
  webhookId: string;
  eventId: string;
  eventType: string;
  /** 1-based number of this attempt. */
  attempt: number;
  startedAt: number;
  controller: AbortController;
}

/**
 * The school's event hub. RPC methods: `createWebhook`, `listWebhooks`, `deleteWebhook`,
 * `listDeliveries`, `sendTest`, `publish`; `alarm()` dispatches.
 */
export class SchoolHub extends DurableObject<Env> {
  private readonly sql: SqlStorage;
  /** Seconds to wait after failed attempt n (`schedule[n - 1]`); WEBHOOK_RETRY_SCHEDULE. */
  private readonly schedule: number[];
  /** One attempt's timeout in ms; WEBHOOK_TIMEOUT_MS. */
  private readonly timeoutMs: number;
  /** In-flight attempts by registration id, then delivery id. */
  private readonly inFlight = new Map<string, Map<number, StartedAttempt>>();
  private inFlightCount = 0;
  /** HMAC keys by registration id (decoded once). */
  private readonly keys = new Map<string, Uint8Array>();
  /** Active registration ids, oldest first (cache; `null` = reload). */
  private hookIds: string[] | null = null;
  /** Round-robin start of the next fill. */
  private nextFillStart = 0;
  /** Callers of `whenIdle()` waiting for the in-flight count to reach zero. */
  private idleWaiters: (() => void)[] = [];
  /** Deliveries that must not start: in flight, or finished with the outcome not yet written. */
  private readonly busy = new Set<number>();
  /** Size of `busy` per registration id. */
  private readonly busyByHook = new Map<string, number>();
  /** Finished attempts whose outcome is not yet written (see `flush`). */
  private outcomes: Outcome[] = [];
  private flushTimer: ReturnType<typeof setTimeout> | null = null;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.sql = ctx.storage.sql;
    migrate(this.sql);
    this.schedule = parseRetrySchedule(env.WEBHOOK_RETRY_SCHEDULE);
    this.timeoutMs = parseTimeoutMs(env.WEBHOOK_TIMEOUT_MS);
    // Safety net: queued deliveries always have an alarm to serve them.
    void ctx.blockConcurrencyWhile(async () => {
      const next = this.nextDueAt();
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
      const now = Date.now();
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
      this.hookIds = null;
      return {
        ok: true,
        webhook: { id, url: input.url, events: input.events, description: input.description, createdAt: formatInstant(now), secret },
      };
    });
  }

  /** The school's registrations, oldest first, without secrets (GET /v3/webhooks). */
  listWebhooks(): WebhookRecord[] {
    return this.sql
      .exec<WebhookRow>(
        `SELECT id, url, events, description, created_at FROM webhooks WHERE deleted_at IS NULL ORDER BY created_at, id`,
      )
      .toArray()
      .map(toWebhookRecord);
  }

  /**
   * Deletes a registration (DELETE /v3/webhooks/{id}), keeping the deregistration promise
   * of API.md: in one synchronous step the registration becomes a tombstone, its queued
   * deliveries (pending retries included) are dropped and its in-flight attempts aborted.
   * No attempt to it can start afterwards, and the deletion is durable before the caller
   * gets the answer (output gate).
   *
   * @returns `true` if it was deleted now; `false` for an unknown or already deleted id.
   */
  deleteWebhook(id: string): boolean {
    const deleted = this.ctx.storage.transactionSync(() => {
      const found = this.sql.exec(`SELECT 1 FROM webhooks WHERE id = ? AND deleted_at IS NULL`, id).toArray().length > 0;
      if (!found) return false;
      this.sql.exec(`UPDATE webhooks SET deleted_at = ?, secret = '' WHERE id = ?`, Date.now(), id);
      this.sql.exec(`DELETE FROM deliveries WHERE webhook_id = ?`, id);
      return true;
    });
    if (deleted) {
      this.hookIds = null;
      this.keys.delete(id);
      for (const started of this.inFlight.get(id)?.values() ?? []) started.controller.abort(DELETED);
    }
    return deleted;
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
    this.flush();
    const since = Date.now() - LOG_RETENTION_MS;
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
   * Returns once that is durable and the alarm is set; dispatch happens in `alarm()`.
   */
  async publish(events: SchoolEvent[]): Promise<PublishResult> {
    const result = this.ctx.storage.transactionSync((): PublishResult => {
      const now = Date.now();
      const hooks = this.sql
        .exec<{ id: string; events: string }>(`SELECT id, events FROM webhooks WHERE deleted_at IS NULL`)
        .toArray()
        .map((h) => {
          const types = JSON.parse(h.events) as string[];
          return { id: h.id, all: types.includes("*"), types };
        });
      const out: PublishResult = { accepted: 0, duplicates: 0, deliveries: 0 };
      for (const event of events) {
        if (this.sql.exec(`SELECT 1 FROM events WHERE id = ?`, event.id).toArray().length > 0) {
          out.duplicates += 1;
          continue;
        }
        this.sql.exec(`INSERT INTO events (id, type, body, created_at) VALUES (?, ?, ?, ?)`, event.id, event.type, JSON.stringify(event), now);
        out.accepted += 1;
        if (event.type === "webhook.test") continue;
        for (const hook of hooks) {
          if (!hook.all && !hook.types.includes(event.type)) continue;
          this.queue(event.id, hook.id, now);
          out.deliveries += 1;
        }
      }
      return out;
    });
    if (result.deliveries > 0) await this.wake();
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
      const now = Date.now();
      const event: SchoolEvent = { id: mintId("evt", now), type: "webhook.test", createdAt: formatInstant(now), schoolId, data: { webhookId: id } };
      this.sql.exec(`INSERT INTO events (id, type, body, created_at) VALUES (?, ?, ?, ?)`, event.id, event.type, JSON.stringify(event), now);
      this.queue(event.id, id, now);
      return event.id;
    });
    if (eventId === null) return null;
    await this.wake();
    return { eventId };
  }

  // -------------------------------------------------------------------------------------
  // Dispatch

  /**
   * Serves due deliveries until the hub is idle, then re-arms itself for the next due row
   * (or, with nothing queued, for the next log pruning). Safe to run more than once, even
   * concurrently: a delivery in flight (or whose outcome is not yet written) is not started
   * again, and an outcome is recorded only if the delivery is still where it was.
   */
  override async alarm(): Promise<void> {
    this.prune();
    this.fill();
    await this.whenIdle();
  }

  /**
   * Resolves when no attempt is in flight and every outcome is written (for tests and the
   * benchmark; `alarm()` uses it too).
   */
  whenIdle(): Promise<void> {
    if (this.inFlightCount === 0) this.settle();
    if (this.inFlightCount === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  /** Queues one delivery, due now (part of a synchronous step). */
  private queue(eventId: string, webhookId: string, now: number): void {
    this.sql.exec(
      `INSERT OR IGNORE INTO deliveries (event_id, webhook_id, attempts, next_attempt_at, created_at) VALUES (?, ?, 0, ?, ?)`,
      eventId,
      webhookId,
      now,
      now,
    );
  }

  /** After queuing: join the running dispatch, or set the alarm to start one now. */
  private async wake(): Promise<void> {
    if (this.inFlightCount > 0) this.fill();
    else await this.ctx.storage.setAlarm(Date.now());
  }

  private isActive(id: string): boolean {
    return this.sql.exec(`SELECT 1 FROM webhooks WHERE id = ? AND deleted_at IS NULL`, id).toArray().length > 0;
  }

  private activeHookIds(): string[] {
    this.hookIds ??= this.sql
      .exec<{ id: string }>(`SELECT id FROM webhooks WHERE deleted_at IS NULL ORDER BY created_at, id`)
      .toArray()
      .map((r) => r.id);
    return this.hookIds;
  }

  /** Earliest due time of the queue (ms), or `null` when empty. */
  private nextDueAt(): number | null {
    return this.sql.exec<{ t: number | null }>(`SELECT MIN(next_attempt_at) AS t FROM deliveries`).one().t;
  }

  /**
   * Starts due deliveries while slots are free, visiting registrations round-robin from a
   * rotating start so that every registration gets its share. Synchronous and read-only
   * (no storage write, so the fetches it starts are not held by the output gate).
   */
  private fill(): void {
    const hooks = this.activeHookIds();
    if (hooks.length === 0) return;
    const start = this.nextFillStart++ % hooks.length;
    for (let i = 0; i < hooks.length && this.inFlightCount < MAX_IN_FLIGHT; i++) {
      const webhookId = hooks[(start + i) % hooks.length]!;
      let free = Math.min(MAX_IN_FLIGHT_PER_WEBHOOK - (this.inFlight.get(webhookId)?.size ?? 0), MAX_IN_FLIGHT - this.inFlightCount);
      if (free <= 0) continue;
      // Busy rows (in flight, or outcome not yet written) are still due in SQLite: skip them.
      const due = this.sql
        .exec<{ id: number }>(
          `SELECT id FROM deliveries WHERE webhook_id = ? AND next_attempt_at <= ? ORDER BY next_attempt_at, id LIMIT ?`,
          webhookId,
          Date.now(),
          free + (this.busyByHook.get(webhookId) ?? 0),
        )
        .toArray();
      for (const row of due) {
        if (free === 0) break;
        if (this.busy.has(row.id)) continue;
        if (this.startAttempt(row.id)) free -= 1;
      }
    }
  }

  /**
   * Starts one attempt. Synchronous from the check to the fetch: the delivery is re-read with
   * its registration (a deleted registration or a dropped delivery yields no row), signed,
   * and the fetch is started, with no `await` in between.
   *
   * @returns whether an attempt started.
   */
  private startAttempt(deliveryId: number): boolean {
    if (this.busy.has(deliveryId)) return false;
    const now = Date.now();
    type Row = { event_id: string; webhook_id: string; attempts: number; type: string; body: string; url: string; secret: string };
    const row = this.sql
      .exec<Row>(
        `SELECT d.event_id, d.webhook_id, d.attempts, e.type, e.body, w.url, w.secret
         FROM deliveries d
         JOIN webhooks w ON w.id = d.webhook_id AND w.deleted_at IS NULL
         JOIN events e ON e.id = d.event_id
         WHERE d.id = ? AND d.next_attempt_at <= ?`,
        deliveryId,
        now,
      )
      .toArray()[0];
    if (!row) return false;

    let key = this.keys.get(row.webhook_id);
    if (!key) this.keys.set(row.webhook_id, (key = secretKey(row.secret)));
    const started: StartedAttempt = {
      deliveryId,
      webhookId: row.webhook_id,
      eventId: row.event_id,
      eventType: row.type,
      attempt: row.attempts + 1,
      startedAt: now,
      controller: new AbortController(),
    };
    let perHook = this.inFlight.get(row.webhook_id);
    if (!perHook) this.inFlight.set(row.webhook_id, (perHook = new Map()));
    perHook.set(deliveryId, started);
    this.inFlightCount += 1;
    this.markBusy(deliveryId, row.webhook_id, true);

    const timer = setTimeout(() => started.controller.abort(TIMEOUT), this.timeoutMs);
    const response = fetch(row.url, {
      method: "POST",
      headers: signedHeaders(key, row.event_id, Math.floor(now / 1000), row.body),
      body: row.body,
      signal: started.controller.signal,
      redirect: "manual",
    });
    void this.finishAttempt(started, response, timer);
    return true;
  }

  /** Awaits an attempt's answer, buffers its outcome, then starts what is due next. */
  private async finishAttempt(started: StartedAttempt, response: Promise<Response>, timer: ReturnType<typeof setTimeout>): Promise<void> {
    let status: number | undefined;
    let error: string | null = null;
    try {
      const res = await response;
      status = res.status;
      res.body?.cancel().catch(() => {});
      if (status === 410) error = "HTTP 410 Gone: retries stopped";
      else if (status >= 300 && status <= 399) error = `HTTP ${status} (redirects are not followed)`;
      else if (status < 200 || status > 299) error = `HTTP ${status}`;
    } catch (err) {
      const reason: unknown = started.controller.signal.reason;
      error =
        reason === TIMEOUT
          ? `timed out after ${this.timeoutMs} ms`
          : `network error: ${err instanceof Error ? err.message : String(err)}`;
    } finally {
      clearTimeout(timer);
    }
    const perHook = this.inFlight.get(started.webhookId);
    perHook?.delete(started.deliveryId);
    if (perHook?.size === 0) this.inFlight.delete(started.webhookId);
    this.inFlightCount -= 1;
    if (started.controller.signal.reason === DELETED) {
      // Its delivery is gone with the registration: nothing to record.
      this.markBusy(started.deliveryId, started.webhookId, false);
    } else {
      this.outcomes.push({ started, status, error, finishedAt: Date.now() });
      if (this.outcomes.length >= FLUSH_BATCH) this.flush();
      else this.flushTimer ??= setTimeout(() => this.flushSoon(), FLUSH_AFTER_MS);
    }
    try {
      this.fill();
    } catch (err) {
      console.error("SchoolHub: starting the next attempts failed", err);
    }
    if (this.inFlightCount === 0) this.settle();
  }

  private flushSoon(): void {
    this.flushTimer = null;
    this.flush();
    this.fill();
  }

  /**
   * Writes the buffered outcomes in one synchronous step (one storage commit for many
   * attempts): per attempt a log row, then the delivery is removed (succeeded / failed) or
   * rescheduled (pending). An outcome whose delivery is gone (registration deleted) or was
   * already advanced by another run is dropped. Outcomes not yet written when the object
   * stops are lost, and their deliveries are sent again (delivery is at least once).
   */
  private flush(): void {
    if (this.flushTimer !== null) {
      clearTimeout(this.flushTimer);
      this.flushTimer = null;
    }
    if (this.outcomes.length === 0) return;
    const batch = this.outcomes;
    this.outcomes = [];
    try {
      this.ctx.storage.transactionSync(() => {
        for (const outcome of batch) this.recordOutcome(outcome);
      });
    } finally {
      for (const { started } of batch) this.markBusy(started.deliveryId, started.webhookId, false);
    }
  }

  private markBusy(deliveryId: number, webhookId: string, busy: boolean): void {
    if (busy === this.busy.has(deliveryId)) return;
    const n = (this.busyByHook.get(webhookId) ?? 0) + (busy ? 1 : -1);
    if (busy) this.busy.add(deliveryId);
    else this.busy.delete(deliveryId);
    if (n === 0) this.busyByHook.delete(webhookId);
    else this.busyByHook.set(webhookId, n);
  }

  private recordOutcome({ started, status, error, finishedAt }: Outcome): void {
    const verdict = judgeAttempt(status, started.attempt, this.schedule);
    const nextAttemptAt = verdict.status === "pending" ? finishedAt + verdict.retryInMs : null;
    // Only if the delivery is still at this attempt (not deleted, not advanced by another run).
    const changed =
      nextAttemptAt === null
        ? this.sql.exec(`DELETE FROM deliveries WHERE id = ? AND attempts = ?`, started.deliveryId, started.attempt - 1)
        : this.sql.exec(
            `UPDATE deliveries SET attempts = ?, next_attempt_at = ? WHERE id = ? AND attempts = ?`,
            started.attempt,
            nextAttemptAt,
            started.deliveryId,
            started.attempt - 1,
          );
    if (changed.rowsWritten === 0) return;
    this.sql.exec(
      `INSERT INTO attempts (webhook_id, event_id, event_type, attempt, status, response_status, error, attempted_at, next_attempt_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      started.webhookId,
      started.eventId,
      started.eventType,
      started.attempt,
      verdict.status,
      status ?? null,
      error,
      started.startedAt,
      nextAttemptAt,
    );
  }

  /**
   * Called when nothing is in flight: writes the buffered outcomes, starts anything that
   * became due meanwhile; if nothing started, re-arms the alarm and wakes `whenIdle()`
   * callers. Synchronous, so a `publish` cannot slip between the last check and the re-arm.
   */
  private settle(): void {
    this.flush();
    this.fill();
    if (this.inFlightCount > 0) return;
    const next = this.nextDueAt();
    if (next !== null) {
      // Anything due now was just started; a row still due could not start (an anomaly):
      // come back in a second rather than spin.
      void this.ctx.storage.setAlarm(Math.max(next, Date.now() + 1000));
    } else {
      const hasLog = this.sql.exec(`SELECT 1 FROM events LIMIT 1`).toArray().length > 0;
      if (hasLog) void this.ctx.storage.setAlarm(Date.now() + PRUNE_INTERVAL_MS);
      else void this.ctx.storage.deleteAlarm();
    }
    const waiters = this.idleWaiters;
    this.idleWaiters = [];
    for (const wake of waiters) wake();
  }

  /**
   * Drops log rows and finished events older than 7 days, and (defensively) queued
   * deliveries whose event or active registration is missing.
   */
  private prune(): void {
    this.sql.exec(
      `DELETE FROM deliveries
       WHERE NOT EXISTS (SELECT 1 FROM events e WHERE e.id = deliveries.event_id)
          OR NOT EXISTS (SELECT 1 FROM webhooks w WHERE w.id = deliveries.webhook_id AND w.deleted_at IS NULL)`,
    );
    const cutoff = Date.now() - LOG_RETENTION_MS;
    this.sql.exec(`DELETE FROM attempts WHERE attempted_at < ?`, cutoff);
    this.sql.exec(
      `DELETE FROM events WHERE created_at < ? AND NOT EXISTS (SELECT 1 FROM deliveries d WHERE d.event_id = events.id)`,
      cutoff,
    );
  }
}
