/**
 * The lifecycle steps of a registration (API.md § "PATCH", § "Secret rotation", § "Resend",
 * § "Recover", § "Auto-disable"): the synchronous parts the SchoolHub runs inside its own
 * steps (hub.ts wraps each in `transactionSync` and does the awaits). Nothing here awaits,
 * so each step reads the registration and changes the queue with nothing in between.
 */
import type { SchoolEvent } from "../events/types";
import { mintId } from "../lib/ids";
import { formatInstant } from "../lib/time";
import { newSecret } from "./delivery";
import type { Dispatcher } from "./dispatcher";
import { toRecover, wasAddressed } from "./log";
import type { Failing } from "./outcomes";
import { accept, disable, readWebhook, toWebhookRecord } from "./registry";
import type { LifecycleError, RotatedSecret, WebhookRecord, WebhookUpdate } from "./types";

/** Result of a step: the value, or the contract's error code. */
export type Step<T> = { ok: true; value: T } | { ok: false; error: LifecycleError };

const fail = (error: LifecycleError): { ok: false; error: LifecycleError } => ({ ok: false, error });

/**
 * PATCH: applies `update` to `id` at `now` (ms). `enabled: false` disables (`disable`: queued
 * deliveries and pending retries end skipped); a URL change, like a disable, bumps the epoch so
 * the courier drops orders signed for the old URL (they are sent again to the new one).
 *
 * @returns the record and the epoch at which to hold the courier (`null`: no hold needed), or
 *   `null` for an unknown or deleted id.
 */
export function update(sql: SqlStorage, id: string, change: WebhookUpdate, now: number): { record: WebhookRecord; hold: number | null } | null {
  const before = readWebhook(sql, id);
  if (!before) return null;
  let hold: number | null = null;
  if (change.url !== undefined && change.url !== before.url) {
    hold = sql.exec<{ epoch: number }>(`UPDATE webhooks SET url = ?, epoch = epoch + 1 WHERE id = ? RETURNING epoch`, change.url, id).one().epoch;
  }
  if (change.events !== undefined) sql.exec(`UPDATE webhooks SET events = ? WHERE id = ?`, JSON.stringify(change.events), id);
  if (change.description !== undefined) sql.exec(`UPDATE webhooks SET description = ? WHERE id = ?`, change.description, id);
  if (change.enabled === false) hold = disable(sql, id, "manual", now) ?? hold;
  if (change.enabled === true && before.enabled === 0) {
    // Re-enabled: new events only (skipped ones come back by resend or recover); the streak restarts.
    sql.exec(`UPDATE webhooks SET enabled = 1, disabled_reason = NULL, disabled_at = NULL, failing_since = NULL WHERE id = ?`, id);
  }
  if (Object.values(change).some((v) => v !== undefined)) sql.exec(`UPDATE webhooks SET updated_at = ? WHERE id = ?`, now, id);
  return { record: toWebhookRecord(readWebhook(sql, id)!), hold };
}

/**
 * Rotation: a new secret; the current one becomes the previous, valid `graceSeconds` more
 * (0: dropped now). A previous secret from an earlier rotation is forgotten.
 *
 * @returns the new secret and when the previous one expires, or `null` for an unknown id.
 */
export function rotate(sql: SqlStorage, id: string, graceSeconds: number, now: number): RotatedSecret | null {
  if (!readWebhook(sql, id)) return null;
  const secret = newSecret();
  const expiresAt = graceSeconds > 0 ? now + graceSeconds * 1000 : null;
  sql.exec(
    `UPDATE webhooks SET previous_secret = CASE WHEN ?3 IS NULL THEN NULL ELSE secret END, previous_expires_at = ?3, secret = ?2, updated_at = ?4 WHERE id = ?1`,
    id,
    secret,
    expiresAt,
    now,
  );
  return { id, secret, previousSecretExpiresAt: expiresAt === null ? null : formatInstant(expiresAt) };
}

/** The checks shared by test, resend and recover: found and enabled. */
export function usable(sql: SqlStorage, id: string): LifecycleError | null {
  const row = readWebhook(sql, id);
  if (!row) return "WEBHOOK_NOT_FOUND";
  return row.enabled === 1 ? null : "WEBHOOK_DISABLED";
}

/**
 * Resend: `eventId` due now for `id`; an already queued delivery of it becomes due now
 * instead of a second copy.
 */
export function resend(sql: SqlStorage, dispatcher: Dispatcher, id: string, eventId: string, now: number): Step<{ eventId: string }> {
  const error = usable(sql, id);
  if (error) return fail(error);
  if (!wasAddressed(sql, id, eventId)) return fail("EVENT_NOT_FOUND");
  const queued = sql.exec(
    `UPDATE deliveries SET next_attempt_at = MIN(next_attempt_at, ?3) WHERE webhook_id = ?1 AND event_id = ?2 RETURNING id`,
    id,
    eventId,
    now,
  );
  if (queued.toArray().length === 0) dispatcher.queue([[eventId, id]], now);
  return { ok: true, value: { eventId } };
}

/** Recover: queues, in acceptance order, the events of [since, until) (ms) that ended failed or skipped. */
export function recover(sql: SqlStorage, dispatcher: Dispatcher, id: string, since: number, until: number, now: number): Step<{ queued: number }> {
  const error = usable(sql, id);
  if (error) return fail(error);
  const ids = toRecover(sql, id, since, until);
  dispatcher.queue(
    ids.map((eventId): [string, string] => [eventId, id]),
    now,
  );
  return { ok: true, value: { queued: ids.length } };
}

/**
 * Auto-disable (from the outcomes' step): disables each failing registration with reason
 * `"failing"` and publishes `webhook.disabled` to the school's other subscribed
 * registrations (the school id is read from the event whose attempt crossed the line).
 *
 * @returns the registrations disabled, with the epoch to hold their couriers at.
 */
export function autoDisable(sql: SqlStorage, dispatcher: Dispatcher, failing: Failing[], now: number): { webhookId: string; epoch: number }[] {
  const done: { webhookId: string; epoch: number }[] = [];
  for (const f of failing) {
    const epoch = disable(sql, f.webhookId, "failing", now);
    if (epoch === null) continue;
    done.push({ webhookId: f.webhookId, epoch });
    const school = sql.exec<{ s: string | null }>(`SELECT body ->> '$.schoolId' AS s FROM events WHERE id = ?`, f.eventId).toArray()[0]?.s ?? "";
    const event: SchoolEvent = {
      id: mintId("evt", now),
      type: "webhook.disabled",
      createdAt: formatInstant(now),
      schoolId: school,
      data: { webhookId: f.webhookId, reason: "failing", failingSince: formatInstant(f.failingSince) },
    };
    dispatcher.queue(accept(sql, [event], now, f.webhookId).pairs, now);
  }
  return done;
}
