/**
 * Shapes exchanged with the SchoolHub over RPC and written by the webhook operations
 * (API.md § "Webhook registrations"). Instants are ISO 8601 UTC with milliseconds. The
 * records are the `z.infer`s of their schemas (src/webhooks/schemas.ts).
 */
import type { z } from "zod";
import type { createdWebhookSchema, deliveryRecordSchema, subscriptionSchema, webhookRecordSchema } from "./schemas";

export { MAX_WEBHOOKS } from "../lib/limits";

/** Subscription of a registration: `["*"]` (every event type) or a list of event types. */
export type Subscription = z.infer<typeof subscriptionSchema>;

/** A registration as GET /v3/webhooks lists it (no secret). */
export type WebhookRecord = z.infer<typeof webhookRecordSchema>;

/** A registration as POST /v3/webhooks answers it: the only place the secret is shown. */
export type CreatedWebhook = z.infer<typeof createdWebhookSchema>;

/** Input of `SchoolHub.createWebhook`, already validated by the operation (URL policy included). */
export interface NewWebhook {
  url: string;
  events: Subscription;
  description: string | null;
}

/** Result of `SchoolHub.createWebhook`. */
export type CreateWebhookResult = { ok: true; webhook: CreatedWebhook } | { ok: false; error: "WEBHOOK_LIMIT_REACHED" };

/**
 * One entry of GET /v3/webhooks/{id}/deliveries (see `deliveryRecordSchema`). The schema
 * narrows `eventType` to the delivered event types; rows read from the hub's storage carry it
 * as text.
 */
export type DeliveryRecord = Omit<z.infer<typeof deliveryRecordSchema>, "eventType"> & { eventType: string };

/** Result of `SchoolHub.publish`: counts of this call. */
export interface PublishResult {
  /** Events stored by this call. */
  accepted: number;
  /** Events ignored because their id was already accepted (publish is idempotent by event id). */
  duplicates: number;
  /** Deliveries queued (one per accepted event and subscribed registration). */
  deliveries: number;
}

/**
 * Requests a registration's courier may have waiting for response headers: 5 of its I/O
 * context's 6, the sixth being its report call (courier.ts).
 */
export const COURIER_SLOTS = 5;

/**
 * Attempts a courier may hold, checked and signed, to send the moment one of its slots
 * frees (so a slot does not idle while the next attempt travels from the hub). The hub
 * never has more than COURIER_SLOTS + COURIER_QUEUE attempts of one registration in flight.
 */
export const COURIER_QUEUE = 2;

/**
 * One attempt the hub hands to a registration's courier (`WebhookCourier.send`), already
 * checked against the registration and signed: the courier only sends it.
 */
export interface SendOrder {
  deliveryId: number;
  /** Names this attempt in the courier's report (random; a stale report matches nothing). */
  token: string;
  url: string;
  headers: Record<string, string>;
  body: string;
}

/**
 * The courier's answer to `send`: the orders it accepted — sent (`sentAt`, ms) or queued
 * for the next free slot (`sentAt: null`) — and those it refused.
 */
export interface SendReceipt {
  accepted: { token: string; sentAt: number | null }[];
  /** `closed`: the registration was deleted; `busy`: its slots and its queue are full. */
  refused: { token: string; reason: "closed" | "busy" }[];
}

/** What became of one sent attempt (courier → hub, `SchoolHub.report`). Instants in ms. */
export interface AttemptReport {
  deliveryId: number;
  token: string;
  /** When the request was sent (the timeout counts from here). */
  sentAt: number;
  finishedAt: number;
  /** HTTP status; `null` for network errors and timeouts. */
  status: number | null;
  /** The delivery log's `error` (`null` on a 2xx). */
  error: string | null;
  /** The raw `Retry-After` of a 429 or 503 answer, if any. */
  retryAfter: string | null;
}
