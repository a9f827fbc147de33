/**
 * The hub's registrations and its accepting of events, as synchronous SQL steps on the hub's
 * own storage (API.md § "Webhook registrations", § "PATCH", § "Auto-disable"). Only the
 * SchoolHub calls these, inside its synchronous steps (no `await` here).
 */
import type { SchoolEvent } from "../events/types";
import { formatInstant } from "../lib/time";
import type { Subscription, WebhookRecord } from "./types";

/** The log's `error` of a skipped entry (API.md § "Delivery log"). */
const SKIPPED_ERROR = "registration disabled";

/** A `webhooks` row as the record needs it. */
export type WebhookRow = {
  id: string;
  url: string;
  events: string;
  description: string | null;
  enabled: number;
  disabled_reason: "manual" | "failing" | null;
  disabled_at: number | null;
  created_at: number;
  updated_at: number | null;
};

/** Columns of `WebhookRow`, for SELECTs. */
export const WEBHOOK_COLUMNS = `id, url, events, description, enabled, disabled_reason, disabled_at, created_at, updated_at`;

/** A row as the API shows it (no secret). */
export const toWebhookRecord = (row: WebhookRow): WebhookRecord => ({
  id: row.id,
  url: row.url,
  events: JSON.parse(row.events) as Subscription,
  description: row.description,
  enabled: row.enabled === 1,
  disabledReason: row.enabled === 1 ? null : row.disabled_reason,
  disabledAt: row.disabled_at === null || row.enabled === 1 ? null : formatInstant(row.disabled_at),
  createdAt: formatInstant(row.created_at),
  updatedAt: formatInstant(row.updated_at ?? row.created_at),
});

/** The active (not deleted) registration `id`, or `null`. */
export function readWebhook(sql: SqlStorage, id: string): WebhookRow | null {
  return sql.exec<WebhookRow>(`SELECT ${WEBHOOK_COLUMNS} FROM webhooks WHERE id = ? AND deleted_at IS NULL`, id).toArray()[0] ?? null;
}

/**
 * Logs `skipped` entries (one per `[eventId, webhookId]` pair) at `now` (ms): events a
 * disabled registration subscribes to, or its deliveries ended by a disable. One statement.
 */
function logSkipped(sql: SqlStorage, pairs: [string, string][], now: number): void {
  if (pairs.length === 0) return;
  sql.exec(
    `INSERT INTO attempts (webhook_id, event_id, event_type, attempt, status, response_status, error, attempted_at, next_attempt_at)
     SELECT j.value ->> 1, e.id, e.type, 1, 'skipped', NULL, ?2, ?3, NULL
     FROM json_each(?1) j JOIN events e ON e.id = j.value ->> 0`,
    JSON.stringify(pairs),
    SKIPPED_ERROR,
    now,
  );
}

/**
 * Disables registration `id` at `now` (ms) for `reason` in one synchronous step: marks it,
 * bumps its epoch (so its courier refuses orders signed before), and ends its queued
 * deliveries and pending retries as `skipped` (API.md § "PATCH": `enabled: false`).
 *
 * @returns the new epoch, or `null` if it was not enabled (nothing changed).
 */
export function disable(sql: SqlStorage, id: string, reason: "manual" | "failing", now: number): number | null {
  const row = sql
    .exec<{ epoch: number }>(
      `UPDATE webhooks SET enabled = 0, disabled_reason = ?2, disabled_at = ?3, updated_at = ?3, failing_since = NULL, epoch = epoch + 1
       WHERE id = ?1 AND deleted_at IS NULL AND enabled = 1 RETURNING epoch`,
      id,
      reason,
      now,
    )
    .toArray()[0];
  if (!row) return null;
  const queued = sql
    .exec<{ event_id: string }>(`DELETE FROM deliveries WHERE webhook_id = ? RETURNING event_id`, id)
    .toArray()
    .map((d): [string, string] => [d.event_id, id]);
  logSkipped(sql, queued, now);
  return row.epoch;
}

/** What `accept` did: events stored, deliveries to queue, entries logged skipped. */
export interface Accepted {
  stored: number;
  pairs: [string, string][];
  skipped: number;
}

/**
 * Stores the new events of `events` (a known id is ignored) and, for each, decides per
 * registration subscribed at `now` (ms): enabled → a delivery to queue (returned, the caller
 * queues them), disabled → a `skipped` log entry (written here). `webhook.test` events reach
 * nobody this way. `except` (a registration id) receives nothing (its own `webhook.disabled`).
 * Synchronous: the caller's step reads the registrations and queues with no `await` between.
 */
export function accept(sql: SqlStorage, events: SchoolEvent[], now: number, except?: string): Accepted {
  const hooks = sql
    .exec<{ id: string; events: string; enabled: number }>(`SELECT id, events, enabled FROM webhooks WHERE deleted_at IS NULL`)
    .toArray()
    .filter((h) => h.id !== except)
    .map((h) => {
      const types = JSON.parse(h.events) as string[];
      return { id: h.id, enabled: h.enabled === 1, all: types.includes("*"), types };
    });
  // One statement stores the new events (a duplicate id, even within this call, is ignored).
  const stored = sql
    .exec<{ id: string }>(
      `INSERT OR IGNORE INTO events (id, type, body, created_at)
       SELECT value ->> 0, value ->> 1, value ->> 2, ?2 FROM json_each(?1) RETURNING id`,
      JSON.stringify(events.map((e) => [e.id, e.type, JSON.stringify(e)])),
      now,
    )
    .toArray();
  const fresh = new Set(stored.map((r) => r.id));
  const pairs: [string, string][] = [];
  const skipped: [string, string][] = [];
  for (const event of events) {
    if (!fresh.delete(event.id) || event.type === "webhook.test") continue;
    for (const hook of hooks) {
      if (hook.all || hook.types.includes(event.type)) (hook.enabled ? pairs : skipped).push([event.id, hook.id]);
    }
  }
  logSkipped(sql, skipped, now);
  return { stored: stored.length, pairs, skipped: skipped.length };
}

/** A due delivery as the dispatcher's `fill` reads it, with its event and registration. */
export type DueRow = {
  id: number;
  event_id: string;
  attempts: number;
  type: string;
  body: string;
  url: string;
  secret: string;
  previous_secret: string | null;
  previous_expires_at: number | null;
  epoch: number;
};

/**
 * The check before attempts (DESIGN.md § "Invariants"): the deliveries of `webhookId` due at
 * `now` (ms), each re-read with its registration — a deleted or disabled registration or a
 * dropped delivery yields no row — oldest due first, at most `limit`, leaving out `busy` ones
 * (in flight, or outcome not yet written). Synchronous: the caller hands the attempts over in
 * the same step.
 */
export function readDue(sql: SqlStorage, webhookId: string, now: number, busy: number[], limit: number): DueRow[] {
  return sql
    .exec<DueRow>(
      `SELECT d.id, d.event_id, d.attempts, e.type, e.body, w.url, w.secret, w.previous_secret, w.previous_expires_at, w.epoch
       FROM deliveries d
       JOIN webhooks w ON w.id = d.webhook_id AND w.deleted_at IS NULL AND w.enabled = 1
       JOIN events e ON e.id = d.event_id
       WHERE d.webhook_id = ? AND d.next_attempt_at <= ? AND d.id NOT IN (SELECT value FROM json_each(?))
       ORDER BY d.next_attempt_at, d.id LIMIT ?`,
      webhookId,
      now,
      JSON.stringify(busy),
      limit,
    )
    .toArray();
}
