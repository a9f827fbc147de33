/**
 * Webhook lifecycle endpoints (API.md § "PATCH /v3/webhooks/{id}", § "Secret rotation",
 * § "Resend", § "Recover", § "GET /v3/event-types"): thin handlers that authenticate,
 * validate and call the school's SchoolHub (lifecycle.ts holds the rules).
 *
 * Order of answers, as in routes.ts: 401, then 400 for a bad query or body, then the hub's
 * answer. Ids that are malformed, unknown, deleted or another school's: 404 WEBHOOK_NOT_FOUND.
 */
import type { IRequest } from "itty-router";
import { z } from "zod";
import { collectQuery, instantFrom, parseBodyWith } from "../courses/filters";
import type { Env } from "../env";
import { authenticate } from "../http/auth";
import { readJson } from "../http/body";
import type { RequestContext } from "../http/context";
import { ApiError, errors } from "../http/errors";
import { pathId, success } from "../http/respond";
import { DELIVERED_EVENT_TYPES, eventSchemas } from "../http/schemas";
import { ID_RE } from "../lib/ids";
import { hubFor } from "./client";
import { DEFAULT_GRACE_SECONDS, MAX_GRACE_SECONDS } from "./lifecycle";
import { createWebhookSchema, subscriptionOf } from "./routes";
import { LOG_RETENTION_MS } from "./schema";
import type { LifecycleError } from "./types";
import { requireWebhookUrl } from "./url-policy";

/** The PATCH /v3/webhooks/{id} body (exported for the OpenAPI document): any of the four fields (none: nothing changes). */
export const updateWebhookSchema = createWebhookSchema.partial().extend({ enabled: z.boolean({ error: "must be true or false" }).optional() });
const UPDATE_FIELDS = ["url", "events", "description", "enabled"] as const;

/** The rotate body (exported for the OpenAPI document). */
export const rotateSchema = z.strictObject({
  graceSeconds: z
    .int({ error: `must be an integer from 0 to ${MAX_GRACE_SECONDS}` })
    .min(0, `must be an integer from 0 to ${MAX_GRACE_SECONDS}`)
    .max(MAX_GRACE_SECONDS, `must be an integer from 0 to ${MAX_GRACE_SECONDS}`)
    .optional()
    .meta({ description: `Seconds during which attempts are also signed with the previous secret (default ${DEFAULT_GRACE_SECONDS}; 0 drops it at once).` }),
});

/** The recover body (exported for the OpenAPI document). */
export const recoverSchema = z.strictObject({ since: instantFrom(false), until: instantFrom(false).optional() });

/** The hub's refusals as contract errors. */
function lifecycleError(error: LifecycleError, id: string, eventId = ""): ApiError {
  if (error === "WEBHOOK_DISABLED") return errors.webhookDisabled(id);
  return error === "EVENT_NOT_FOUND" ? errors.eventNotFound(id, eventId) : errors.webhookNotFound(id);
}

/** Reads an optional JSON object body: `{}` when absent or empty. */
async function optionalBody(req: IRequest): Promise<unknown> {
  const length = req.headers.get("content-length");
  const hasBody = length !== null ? Number(length) > 0 : req.body !== null;
  if (!hasBody) return {};
  const raw = await readJson(req);
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) {
    throw new ApiError(400, "VALIDATION_ERROR", "The body must be a JSON object.", [{ path: "$", message: "must be an object" }]);
  }
  return raw;
}

/** The `{id}` of the path, already known to be well-formed (else 404). */
function webhookId(req: IRequest): string {
  const id = pathId(req);
  if (!ID_RE.test(id)) throw errors.webhookNotFound(id);
  return id;
}

/**
 * PATCH /v3/webhooks/{id} — any of `url`, `events`, `description` (`null` clears), `enabled`
 * → 200 with the record. The URL policy applies to `url`. A disable holds the registration
 * before answering: from the 200 on, no attempt to it starts.
 *
 * @throws ApiError 400 VALIDATION_ERROR / UNKNOWN_PARAMETER / INVALID_WEBHOOK_URL / INVALID_JSON,
 *   404 WEBHOOK_NOT_FOUND, 413, 415, 401.
 */
export async function updateWebhook(req: IRequest, env: Env, _exec: ExecutionContext, rc: RequestContext): Promise<Response> {
  const schoolId = await authenticate(req, env, rc);
  collectQuery(new URL(req.url).searchParams, []);
  const body = parseBodyWith(updateWebhookSchema, await optionalBody(req), UPDATE_FIELDS);
  const url = body.url === undefined ? undefined : requireWebhookUrl(body.url, env.WEBHOOK_ALLOW_INSECURE_URLS === "true");
  const id = webhookId(req);
  const record = await hubFor(env, schoolId).updateWebhook(id, {
    url,
    events: body.events === undefined ? undefined : subscriptionOf(body.events),
    description: body.description,
    enabled: body.enabled,
  });
  if (record === null) throw errors.webhookNotFound(id);
  return success(record);
}

/**
 * POST /v3/webhooks/{id}/secret/rotate — `{ graceSeconds? }` (0–604800, default 86400) →
 * 200 `{ id, secret, previousSecretExpiresAt }`.
 *
 * @throws ApiError 400 VALIDATION_ERROR / UNKNOWN_PARAMETER, 404 WEBHOOK_NOT_FOUND, 401.
 */
export async function rotateSecret(req: IRequest, env: Env, _exec: ExecutionContext, rc: RequestContext): Promise<Response> {
  const schoolId = await authenticate(req, env, rc);
  collectQuery(new URL(req.url).searchParams, []);
  const body = parseBodyWith(rotateSchema, await optionalBody(req), ["graceSeconds"]);
  const id = webhookId(req);
  const rotated = await hubFor(env, schoolId).rotateSecret(id, body.graceSeconds ?? DEFAULT_GRACE_SECONDS);
  if (rotated === null) throw errors.webhookNotFound(id);
  return success(rotated);
}

/**
 * POST /v3/webhooks/{id}/deliveries/{eventId}/resend — 202 `{ eventId }`: the event due now.
 *
 * @throws ApiError 404 WEBHOOK_NOT_FOUND / EVENT_NOT_FOUND, 409 WEBHOOK_DISABLED, 400, 401.
 */
export async function resendDelivery(req: IRequest, env: Env, _exec: ExecutionContext, rc: RequestContext): Promise<Response> {
  const schoolId = await authenticate(req, env, rc);
  collectQuery(new URL(req.url).searchParams, []);
  parseBodyWith(z.strictObject({}), await optionalBody(req), []);
  const id = webhookId(req);
  let eventId = req.params.eventId ?? "";
  try {
    eventId = decodeURIComponent(eventId);
  } catch {
    // Kept as it is: it matches no event.
  }
  if (!ID_RE.test(eventId)) throw lifecycleError("EVENT_NOT_FOUND", id, eventId);
  const result = await hubFor(env, schoolId).resend(id, eventId);
  if (!result.ok) throw lifecycleError(result.error, id, eventId);
  return success(result.value, { status: 202 });
}

/**
 * POST /v3/webhooks/{id}/recover — `{ since, until? }` → 202 `{ queued }`.
 *
 * @throws ApiError 400 INVALID_PARAMETER (`since` older than the 7-day retention or after
 *   `until`), VALIDATION_ERROR, 404 WEBHOOK_NOT_FOUND, 409 WEBHOOK_DISABLED, 401.
 */
export async function recoverDeliveries(req: IRequest, env: Env, _exec: ExecutionContext, rc: RequestContext): Promise<Response> {
  const schoolId = await authenticate(req, env, rc);
  collectQuery(new URL(req.url).searchParams, []);
  const body = parseBodyWith(recoverSchema, await optionalBody(req), ["since", "until"]);
  if (body.since < Date.now() - LOG_RETENTION_MS) {
    throw new ApiError(400, "INVALID_PARAMETER", "`since` is older than the 7-day retention of events.", [{ path: "$.since", message: "must be within the last 7 days" }]);
  }
  if (body.until !== undefined && body.since > body.until) {
    throw new ApiError(400, "INVALID_PARAMETER", "`since` is after `until`.", [{ path: "$.since", message: "must not be after until" }]);
  }
  const id = webhookId(req);
  const result = await hubFor(env, schoolId).recover(id, body.since, body.until ?? null);
  if (!result.ok) throw lifecycleError(result.error, id);
  return success(result.value, { status: 202 });
}

/** The catalog, built once: `{ type, description, schema }` per event type (the OpenAPI `webhooks` schemas). */
let catalog: { type: string; description: string; schema: unknown }[] | null = null;

/** GET /v3/event-types — the event catalog, without authentication. @throws 400 UNKNOWN_PARAMETER. */
export async function listEventTypes(req: IRequest): Promise<Response> {
  collectQuery(new URL(req.url).searchParams, []);
  catalog ??= DELIVERED_EVENT_TYPES.map((type) => {
    const schema = eventSchemas[type];
    return { type, description: schema.description ?? "", schema: z.toJSONSchema(schema, { io: "output", unrepresentable: "any" }) };
  });
  return success(catalog);
}
