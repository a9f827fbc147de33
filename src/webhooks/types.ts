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
