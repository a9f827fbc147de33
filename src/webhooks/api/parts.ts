/**
 * What the webhook operations (operations.ts, lifecycle-operations.ts) share: the domain's
 * tag, the `{id}` check, the hub's refusals as contract errors and the stored form of a
 * subscription.
 */

import type { EventType } from "../../events/types";
import { ApiError } from "../../http/errors";
import { pathParam } from "../../http/request";
import { ID_RE } from "../../lib/ids";
import type { LifecycleError, Subscription } from "../rpc";

/** The document's tag of every webhook operation. */
export const TAG = { name: "Webhooks", description: "Webhook registrations, owned by the school's event hub." };

/** 404 WEBHOOK_NOT_FOUND for `id`. */
export const webhookNotFound = (id: string) => new ApiError("WEBHOOK_NOT_FOUND", `No webhook registration with id "${id}" exists in this school.`);

/** The `{id}` of a request, when it can name a registration at all (else 404 WEBHOOK_NOT_FOUND). */
export function webhookId(req: { params: Record<string, string | undefined> }): string {
  const id = pathParam(req);
  if (!ID_RE.test(id)) throw webhookNotFound(id);
  return id;
}

/**
 * The hub's refusal of a lifecycle call (test, resend, recover) as the contract's error: 404
 * WEBHOOK_NOT_FOUND, 409 WEBHOOK_DISABLED or 404 EVENT_NOT_FOUND (docs/reference.md § "Resend").
 */
export function lifecycleError(error: LifecycleError, id: string, eventId = ""): ApiError {
  if (error === "WEBHOOK_DISABLED") {
    return new ApiError("WEBHOOK_DISABLED", `Webhook registration "${id}" is disabled; enable it first (PATCH /v3/webhooks/${id} with { "enabled": true }).`);
  }
  if (error === "EVENT_NOT_FOUND") {
    return new ApiError("EVENT_NOT_FOUND", `Event "${eventId}" is not retained (7 days) or was never addressed to webhook registration "${id}".`);
  }
  return webhookNotFound(id);
}

/** `events` of a body as stored: omitted or with `"*"` → `["*"]`; duplicates dropped. */
export function subscriptionOf(events: readonly ("*" | EventType)[] | undefined): Subscription {
  return events === undefined || events.includes("*") ? ["*"] : ([...new Set(events)] as Exclude<Subscription, ["*"]>);
}
