/**
 * How the Worker reaches a school's event hub (DESIGN.md: one SchoolHub per school), and how
 * the hub reaches a registration's courier (one WebhookCourier per registration).
 */
import type { Env } from "../env";
import type { WebhookCourier } from "./courier";
import type { SchoolHub } from "./hub";

/**
 * The RPC stub of `schoolId`'s SchoolHub (`idFromName(schoolId)`): the same object for every
 * caller, everywhere. Course writes publish with `await hubFor(env, schoolId).publish(events)`
 * (idempotent by event id; resolves once the events are durably queued).
 */
export function hubFor(env: Env, schoolId: string): DurableObjectStub<SchoolHub> {
  return env.SCHOOL_HUB.get(env.SCHOOL_HUB.idFromName(schoolId));
}

/**
 * The RPC stub of registration `webhookId`'s courier (`idFromName(webhookId)`; registration
 * ids are never reused). Only the registration's hub calls it.
 */
export function courierFor(env: Env, webhookId: string): DurableObjectStub<WebhookCourier> {
  return env.WEBHOOK_COURIER.get(env.WEBHOOK_COURIER.idFromName(webhookId));
}
