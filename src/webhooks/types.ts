/**
 * Shapes exchanged with the SchoolHub over RPC and written by the webhook endpoints
 * (API.md § "Webhook registrations"). Instants are ISO 8601 UTC with milliseconds.
 */
import type { EventType } from "../events/types";

/** Most registrations a school may have (API.md: 409 WEBHOOK_LIMIT_REACHED beyond). */
export const MAX_WEBHOOKS = 50;

/** Subscription of a registration: `["*"]` (every event type) or a list of event types. */
export type Subscription = ["*"] | EventType[];

/** A registration as GET /v3/webhooks lists it (no secret). */
export interface WebhookRecord {
  /** `wh_…`, never reused. */
  id: string;
  /** The normalized target URL (WHATWG serialization). */
  url: string;
  events: Subscription;
  description: string | null;
  /** `false` while disabled: nothing is attempted, events it subscribes to are logged `skipped`. */
  enabled: boolean;
  /** `"manual"` (PATCH `enabled: false`) or `"failing"` (auto-disable); `null` while enabled. */
  disabledReason: "manual" | "failing" | null;
  disabledAt: string | null;
  createdAt: string;
  /** The last change by PATCH, rotation, or auto-disable (= `createdAt` before any). */
  updatedAt: string;
}

/**
 * Input of `SchoolHub.updateWebhook` (PATCH /v3/webhooks/{id}), already validated (URL policy
 * included); an absent field is left as it is, `description: null` clears it.
 */
export interface WebhookUpdate {
  url?: string;
  events?: Subscription;
  description?: string | null;
  enabled?: boolean;
}

/** Result of `SchoolHub.rotateSecret` (POST /v3/webhooks/{id}/secret/rotate). */
export interface RotatedSecret {
  id: string;
  /** The new secret, `whsec_…`, shown only here. */
  secret: string;
  /** Until when attempts also carry the previous secret's signature; `null` for a grace of 0. */
  previousSecretExpiresAt: string | null;
}

/** Why a lifecycle call (resend, recover, test) did nothing: the contract's error codes. */
export type LifecycleError = "WEBHOOK_NOT_FOUND" | "WEBHOOK_DISABLED" | "EVENT_NOT_FOUND";

/** A registration as POST /v3/webhooks answers it: the only place the secret is shown. */
export interface CreatedWebhook extends WebhookRecord {
  /** `whsec_` + base64 of 32 random bytes; the HMAC key is the base64-decoded part. */
  secret: string;
}

/** Input of `SchoolHub.createWebhook`, already validated by the endpoint (URL policy included). */
export interface NewWebhook {
  url: string;
  events: Subscription;
  description: string | null;
}

/** Result of `SchoolHub.createWebhook`. */
export type CreateWebhookResult = { ok: true; webhook: CreatedWebhook } | { ok: false; error: "WEBHOOK_LIMIT_REACHED" };

/**
 * One entry of GET /v3/webhooks/{id}/deliveries.
 *
 * An entry is one attempt (`attemptedAt` set) whose `status` is the delivery's state right
 * after it: `succeeded`, `pending` (a retry is due at `nextAttemptAt`) or `failed` (410 or
 * schedule exhausted). A delivery still waiting for its first attempt is listed once with
 * `attempt: 1`, `status: "pending"`, `attemptedAt: null` and its due time in `nextAttemptAt`.
 */
export interface DeliveryRecord {
  eventId: string;
  eventType: string;
  /** 1 for the immediate attempt, 2 for the first retry, … */
  attempt: number;
  /** `skipped`: never attempted because the registration was disabled (`error: "registration disabled"`). */
  status: "pending" | "succeeded" | "failed" | "skipped";
  /** HTTP status of the answer; `null` for network errors, timeouts and unmade attempts. */
  responseStatus: number | null;
  /** Why the attempt did not succeed (`HTTP 500`, `timed out after 15000 ms`, …); `null` on success. */
  error: string | null;
  attemptedAt: string | null;
  nextAttemptAt: string | null;
}

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
  /** The registration's disable count when signed: a courier held at a later epoch refuses it. */
  epoch: number;
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
