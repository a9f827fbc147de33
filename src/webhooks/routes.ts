/**
 * Webhook endpoints (API.md § "Webhook registrations"): thin handlers that authenticate,
 * validate, and call the school's SchoolHub over RPC. Only the hub touches webhook state.
 *
 * Every handler answers 401 UNAUTHORIZED first (one D1 query), then 400 for a bad query or
 * body, then the hub's answer. Ids that are not well-formed, unknown, deleted or belong to
 * another school all answer 404 WEBHOOK_NOT_FOUND.
 */
import type { IRequest } from "itty-router";
import { z } from "zod";
import { collectQuery, instantFrom, parseBodyWith, parseQueryWith } from "../courses/filters";
import type { Env } from "../env";
import { EVENT_TYPES, type EventType } from "../events/types";
import { authenticate } from "../http/auth";
import { readJson } from "../http/body";
import type { RequestContext } from "../http/context";
import { ApiError, errors } from "../http/errors";
import { pathId, success } from "../http/respond";
import { ID_RE } from "../lib/ids";
import { hubFor } from "./client";
import type { Subscription } from "./types";
import { MAX_WEBHOOKS } from "./types";
import { requireWebhookUrl } from "./url-policy";

/** Longest accepted `description`, in characters. */
export const MAX_DESCRIPTION_LENGTH = 500;

/** Fields of the POST /v3/webhooks body. */
export const CREATE_FIELDS = ["url", "events", "description"] as const;

const eventItem = z.enum(["*", ...EVENT_TYPES], {
  error: `must be "*" or one of ${EVENT_TYPES.join(", ")}`,
});

/** The POST /v3/webhooks body (exported for the OpenAPI document). */
export const createWebhookSchema = z.strictObject({
  url: z.string({ error: "must be a string" }).min(1, "must not be empty"),
  events: z
    .array(eventItem, { error: "must be an array of event types" })
    .min(1, `must list at least one event type, or be ["*"]`)
    .refine((list) => !list.includes("*") || list.length === 1, `"*" must be alone: ["*"] means every event type`)
    .optional(),
  description: z
    .string({ error: "must be a string or null" })
    .max(MAX_DESCRIPTION_LENGTH, `must be at most ${MAX_DESCRIPTION_LENGTH} characters`)
    .nullable()
    .optional(),
});

/** `events` of a body as stored: omitted or with `"*"` → `["*"]`; duplicates dropped. */
export function subscriptionOf(events: readonly ("*" | EventType)[] | undefined): Subscription {
  return events === undefined || events.includes("*") ? ["*"] : ([...new Set(events)] as Exclude<Subscription, ["*"]>);
}

/** Parameter names of GET /v3/webhooks/{id}/deliveries. */
const DELIVERIES_PARAMS = ["status", "eventType", "eventId", "since", "until", "page", "limit"] as const;
const queryInt = (max: number, fallback: number) =>
  z
    .string()
    .regex(/^\d{1,9}$/, `must be an integer from 1 to ${max}`)
    .transform(Number)
    .refine((n) => n >= 1 && n <= max, `must be an integer from 1 to ${max}`)
    .default(fallback);
/** Query of GET /v3/webhooks/{id}/deliveries (exported for the OpenAPI document). */
export const deliveriesQuerySchema = z.strictObject({
  status: z.enum(["pending", "succeeded", "failed", "skipped"], { error: "must be one of pending, succeeded, failed, skipped" }).optional(),
  eventType: z.enum([...EVENT_TYPES, "webhook.test"], { error: `must be one of ${[...EVENT_TYPES, "webhook.test"].join(", ")}` }).optional(),
  eventId: z.string().regex(ID_RE, "must be an id of 1–64 characters [A-Za-z0-9_-]").optional(),
  since: instantFrom(true).optional(),
  until: instantFrom(true).optional(),
  page: queryInt(1_000_000, 1),
  limit: queryInt(100, 100),
});

/** Rejects any query parameter (the operation defines none): 400 UNKNOWN_PARAMETER. */
const noQuery = (req: IRequest) => collectQuery(new URL(req.url).searchParams, []);

/**
 * POST /v3/webhooks — `{ url, events?, description? }` → 201
 * `{ id, url, events, description, createdAt, secret }` with `location: /v3/webhooks/{id}`.
 *
 * `events` omitted or `["*"]` → `["*"]` (every event type); duplicates are dropped.
 * `url` is stored in its normalized form (see `checkWebhookUrl`, applied by `requireWebhookUrl`).
 *
 * @throws ApiError 400 VALIDATION_ERROR / UNKNOWN_PARAMETER / INVALID_WEBHOOK_URL /
 *   INVALID_JSON, 409 WEBHOOK_LIMIT_REACHED, 413, 415, 401.
 */
export async function createWebhook(req: IRequest, env: Env, _exec: ExecutionContext, rc: RequestContext): Promise<Response> {
  const schoolId = await authenticate(req, env, rc);
  noQuery(req);
  const raw = await readJson(req);
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) {
    throw new ApiError(400, "VALIDATION_ERROR", "The body must be a JSON object: { url, events?, description? }.", [
      { path: "$", message: "must be an object" },
    ]);
  }
  const body = parseBodyWith(createWebhookSchema, raw, CREATE_FIELDS);
  const url = requireWebhookUrl(body.url, env.WEBHOOK_ALLOW_INSECURE_URLS === "true");
  const events = subscriptionOf(body.events);
  const result = await hubFor(env, schoolId).createWebhook({ url, events, description: body.description ?? null });
  if (!result.ok) {
    throw new ApiError(
      409,
      "WEBHOOK_LIMIT_REACHED",
      `This school already has ${MAX_WEBHOOKS} webhook registrations; delete one (DELETE /v3/webhooks/{id}) before creating another.`,
    );
  }
  return success(result.webhook, { status: 201, headers: { location: `/v3/webhooks/${result.webhook.id}` } });
}

/**
 * GET /v3/webhooks — the school's registrations, oldest first, without secrets. One page
 * always holds them all (at most 50): `pagination` is `{ page: 1, limit: 50, hasMore: false }`.
 *
 * @throws ApiError 400 UNKNOWN_PARAMETER (no query parameter is defined), 401.
 */
export async function listWebhooks(req: IRequest, env: Env, _exec: ExecutionContext, rc: RequestContext): Promise<Response> {
  const schoolId = await authenticate(req, env, rc);
  noQuery(req);
  const list = await hubFor(env, schoolId).listWebhooks();
  return success(list, { pagination: { page: 1, limit: MAX_WEBHOOKS, hasMore: false } });
}

/**
 * DELETE /v3/webhooks/{id} — `{ id, deleted: true }`. Once answered, nothing more is ever
 * sent to the registration (API.md: the deregistration promise; see `SchoolHub.deleteWebhook`).
 *
 * @throws ApiError 404 WEBHOOK_NOT_FOUND (unknown, already deleted, other school's id),
 *   400 UNKNOWN_PARAMETER, 401.
 */
export async function deleteWebhook(req: IRequest, env: Env, _exec: ExecutionContext, rc: RequestContext): Promise<Response> {
  const schoolId = await authenticate(req, env, rc);
  noQuery(req);
  const id = pathId(req);
  if (!ID_RE.test(id) || !(await hubFor(env, schoolId).deleteWebhook(id))) throw errors.webhookNotFound(id);
  return success({ id, deleted: true });
}

/**
 * GET /v3/webhooks/{id}/deliveries — delivery attempts of the last 7 days, newest first
 * (`DeliveryRecord`: `eventId`, `eventType`, `attempt`, `status`, `responseStatus`, `error`,
 * `attemptedAt`, `nextAttemptAt`), filtered by `status` (skipped included), `eventType`,
 * `eventId`, `since`, `until` (instants, on `attemptedAt` or the queued time), combined with
 * AND, and paginated like the course list: `page` (default 1), `limit` (1–100, default 100).
 *
 * @throws ApiError 404 WEBHOOK_NOT_FOUND, 400 UNKNOWN_PARAMETER / INVALID_PARAMETER, 401.
 */
export async function listDeliveries(req: IRequest, env: Env, _exec: ExecutionContext, rc: RequestContext): Promise<Response> {
  const schoolId = await authenticate(req, env, rc);
  const { page, limit, ...filter } = parseQueryWith(deliveriesQuerySchema, collectQuery(new URL(req.url).searchParams, DELIVERIES_PARAMS));
  const id = pathId(req);
  if (!ID_RE.test(id)) throw errors.webhookNotFound(id);
  const rows = await hubFor(env, schoolId).listDeliveries(id, filter, (page - 1) * limit, limit + 1);
  if (rows === null) throw errors.webhookNotFound(id);
  return success(rows.slice(0, limit), { pagination: { page, limit, hasMore: rows.length > limit } });
}

/**
 * POST /v3/webhooks/{id}/test — queues a `webhook.test` event for this registration only
 * and answers `202 Accepted` with `{ eventId, webhookId, type: "webhook.test" }` at once;
 * the signed POST follows asynchronously (and is retried like any delivery); its outcome
 * appears in GET /v3/webhooks/{id}/deliveries under `eventId`.
 *
 * The body may be absent (or empty) or an empty JSON object.
 *
 * @throws ApiError 404 WEBHOOK_NOT_FOUND, 400 UNKNOWN_PARAMETER, 415 (a body that is not
 *   JSON), 401.
 */
export async function testWebhook(req: IRequest, env: Env, _exec: ExecutionContext, rc: RequestContext): Promise<Response> {
  const schoolId = await authenticate(req, env, rc);
  noQuery(req);
  const length = req.headers.get("content-length");
  const hasBody = length !== null ? Number(length) > 0 : req.body !== null;
  if (hasBody) {
    const raw = await readJson(req);
    if (typeof raw !== "object" || raw === null || Array.isArray(raw)) {
      throw new ApiError(400, "VALIDATION_ERROR", "The body, if any, must be an empty JSON object.", [{ path: "$", message: "must be an object" }]);
    }
    parseBodyWith(z.strictObject({}), raw, []);
  }
  const id = pathId(req);
  if (!ID_RE.test(id)) throw errors.webhookNotFound(id);
  const sent = await hubFor(env, schoolId).sendTest(id, schoolId);
  if (!sent.ok) throw sent.error === "WEBHOOK_DISABLED" ? errors.webhookDisabled(id) : errors.webhookNotFound(id);
  return success({ eventId: sent.value.eventId, webhookId: id, type: "webhook.test" }, { status: 202 });
}
