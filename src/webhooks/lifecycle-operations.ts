/**
 * The webhook lifecycle operations (API.md § "PATCH /v3/webhooks/{id}", § "Secret rotation",
 * § "Resend", § "Recover", § "Delivery statistics", § "GET /v3/event-types"), each declared once: thin handlers that
 * authenticate, validate and call the school's SchoolHub (lifecycle.ts holds the rules).
 *
 * Order of answers, as in operations.ts: 401, then 400 for a bad query or body, then the
 * hub's answer. Ids that are malformed, unknown, deleted or another school's: 404
 * WEBHOOK_NOT_FOUND.
 */

import { hubFor } from "../events/hub-client";
import { eventCatalog, eventTypesResponseSchema } from "../events/schemas";
import { authenticate } from "../http/auth";
import { ApiError } from "../http/errors";
import type { Operation } from "../http/operation";
import { parseBodyWith, parseQuery, pathParam, rejectQuery } from "../http/request";
import { success } from "../http/respond";
import { ID_RE } from "../lib/ids";
import { DEFAULT_GRACE_SECONDS } from "../lib/limits";
import { FIRST_INSTANT_MS, formatInstant } from "../lib/time";
import { lifecycleError, optionalBody, subscriptionOf, TAG, webhookId, webhookNotFound } from "./operation-parts";
import { LOG_RETENTION_MS } from "./schema";
import {
  EVENT_ID_EXAMPLE,
  emptyBodySchema,
  recoverResponseSchema,
  recoverSchema,
  resendParams,
  resendResponseSchema,
  rotatedSecretResponseSchema,
  rotatedSecretSchema,
  rotateSchema,
  updateWebhookSchema,
  webhookIdParams,
  webhookRecordSchema,
  webhookResponseSchema,
} from "./schemas";
import { STATS_DEFAULT_WINDOW_MS, STATS_MAX_WINDOW_MS } from "./stats";
import { statsQuerySchema, statsResponseSchema, statsSchema } from "./stats-schemas";
import { requireWebhookUrl } from "./url-policy";

/** The lifecycle operations. */
export const lifecycleOperations: Operation<Env>[] = [
  {
    method: "PATCH",
    path: "/v3/webhooks/{id}",
    operationId: "updateWebhook",
    tag: TAG,
    portalTokens: true,
    summary: "Change, disable or enable a webhook registration",
    description:
      'Any of `url` (the URL policy applies), `events`, `description` (`null` clears), `enabled`; the id, the secret and the delivery log are kept. `url`: queued deliveries and pending retries go to the new URL from their next attempt; an attempt already in flight finishes and is logged. `events`: deliveries already queued stay; later events follow the new subscription. `enabled: false`: from the 200 on no attempt to it starts; its queued deliveries and pending retries end `skipped`, and so does each event accepted meanwhile that it subscribes to (`disabledReason: "manual"`). `enabled: true`: events accepted from then on are delivered again; skipped ones only by resend or recover.',
    request: { params: webhookIdParams, body: { schema: updateWebhookSchema, description: "The fields to change (at least one)." } },
    responses: {
      200: {
        description: "The registration after the change.",
        schema: webhookResponseSchema,
        example: { status: "success", result: webhookRecordSchema.meta()!.example },
      },
      400: ["VALIDATION_ERROR", "UNKNOWN_PARAMETER", "INVALID_JSON", "INVALID_WEBHOOK_URL"],
      404: ["WEBHOOK_NOT_FOUND"],
    },
    /** A disable holds the registration before answering: from the 200 on, no attempt to it starts. */
    async handler(req, env, _exec, rc) {
      const schoolId = await authenticate(req, env.DB, rc);
      rejectQuery(req);
      const body = parseBodyWith(updateWebhookSchema, await optionalBody(req));
      const url = body.url === undefined ? undefined : requireWebhookUrl(body.url, env.WEBHOOK_ALLOW_INSECURE_URLS === "true");
      const id = webhookId(req);
      const record = await hubFor(env, schoolId).updateWebhook(id, {
        url,
        events: body.events === undefined ? undefined : subscriptionOf(body.events),
        description: body.description,
        enabled: body.enabled,
      });
      if (record === null) throw webhookNotFound(id);
      return success(record);
    },
  },
  {
    method: "POST",
    path: "/v3/webhooks/{id}/secret/rotate",
    operationId: "rotateWebhookSecret",
    tag: TAG,
    portalTokens: true,
    summary: "Rotate the signing secret",
    description:
      "A new secret (shown only here). Until `previousSecretExpiresAt` every attempt carries two space-separated signatures, `v1,<new> v1,<previous>` (Standard Webhooks), so a receiver can switch at its own pace. A second rotation within the grace keeps only the newest previous secret; `graceSeconds: 0` drops the previous secret at once.",
    request: { params: webhookIdParams, body: { schema: rotateSchema, description: "Absent, or `{ graceSeconds }`.", required: false } },
    responses: {
      200: { description: "The new secret.", schema: rotatedSecretResponseSchema, example: { status: "success", result: rotatedSecretSchema.meta()!.example } },
      400: ["VALIDATION_ERROR", "UNKNOWN_PARAMETER", "INVALID_JSON"],
      404: ["WEBHOOK_NOT_FOUND"],
    },
    async handler(req, env, _exec, rc) {
      const schoolId = await authenticate(req, env.DB, rc);
      rejectQuery(req);
      const body = parseBodyWith(rotateSchema, await optionalBody(req));
      const id = webhookId(req);
      const rotated = await hubFor(env, schoolId).rotateSecret(id, body.graceSeconds ?? DEFAULT_GRACE_SECONDS);
      if (rotated === null) throw webhookNotFound(id);
      return success(rotated);
    },
  },
  {
    method: "POST",
    path: "/v3/webhooks/{id}/deliveries/{eventId}/resend",
    operationId: "resendWebhookDelivery",
    tag: TAG,
    portalTokens: true,
    summary: "Resend one event",
    description:
      "Queues the event again for this registration, due now, whatever its last status (same `webhook-id`: receivers deduplicate). A delivery of it already queued becomes due now instead (no second copy).",
    request: { params: resendParams, body: { schema: emptyBodySchema, description: "Absent, or an empty JSON object.", required: false, example: {} } },
    responses: {
      202: { description: "The event is queued again.", schema: resendResponseSchema, example: { status: "success", result: { eventId: EVENT_ID_EXAMPLE } } },
      400: ["VALIDATION_ERROR", "UNKNOWN_PARAMETER", "INVALID_JSON"],
      404: ["WEBHOOK_NOT_FOUND", "EVENT_NOT_FOUND"],
      409: ["WEBHOOK_DISABLED"],
    },
    async handler(req, env, _exec, rc) {
      const schoolId = await authenticate(req, env.DB, rc);
      rejectQuery(req);
      parseBodyWith(emptyBodySchema, await optionalBody(req));
      const id = webhookId(req);
      const eventId = pathParam(req, "eventId");
      if (!ID_RE.test(eventId)) throw lifecycleError("EVENT_NOT_FOUND", id, eventId);
      const result = await hubFor(env, schoolId).resend(id, eventId);
      if (!result.ok) throw lifecycleError(result.error, id, eventId);
      return success(result.value, { status: 202 });
    },
  },
  {
    method: "POST",
    path: "/v3/webhooks/{id}/recover",
    operationId: "recoverWebhookDeliveries",
    tag: TAG,
    portalTokens: true,
    summary: "Recover missed events after an outage",
    description:
      "Queues again, in acceptance order, every retained event accepted in `[since, until)` whose delivery to this registration ended `failed` or `skipped` (not those succeeded or still pending), each once per call. `since` older than the 7-day retention, or after `until`: 400 INVALID_PARAMETER.",
    request: { params: webhookIdParams, body: { schema: recoverSchema, description: "The window of acceptance." } },
    responses: {
      202: { description: "The events are queued again.", schema: recoverResponseSchema, example: { status: "success", result: { queued: 12 } } },
      400: ["INVALID_PARAMETER", "VALIDATION_ERROR", "UNKNOWN_PARAMETER", "INVALID_JSON"],
      404: ["WEBHOOK_NOT_FOUND"],
      409: ["WEBHOOK_DISABLED"],
    },
    async handler(req, env, _exec, rc) {
      const schoolId = await authenticate(req, env.DB, rc);
      rejectQuery(req);
      const body = parseBodyWith(recoverSchema, await optionalBody(req));
      if (body.since < Date.now() - LOG_RETENTION_MS) {
        throw new ApiError("INVALID_PARAMETER", "`since` is older than the 7-day retention of events.", [
          { path: "$.since", message: "must be within the last 7 days" },
        ]);
      }
      if (body.until !== undefined && body.since > body.until) {
        throw new ApiError("INVALID_PARAMETER", "`since` is after `until`.", [{ path: "$.since", message: "must not be after until" }]);
      }
      const id = webhookId(req);
      const result = await hubFor(env, schoolId).recover(id, body.since, body.until ?? null);
      if (!result.ok) throw lifecycleError(result.error, id);
      return success(result.value, { status: 202 });
    },
  },
  {
    method: "GET",
    path: "/v3/webhooks/{id}/stats",
    operationId: "getWebhookStats",
    tag: TAG,
    portalTokens: true,
    summary: "Delivery statistics per hour or day",
    description:
      "The delivery log of this registration counted per bucket over `[since, until)` (default the last 24 h; at most 7 days, the log's retention): attempts that succeeded and failed (a failed attempt counts as `failed` even when a retry follows; the log shows it `pending`), deliveries queued and not attempted yet (`pending`, at the time they were queued) and skipped entries. Buckets are aligned on UTC hours or days, oldest first, every bucket overlapping the window included, empty ones as zeros; entries older than the 7-day retention are not counted. Only `since`: until now, or 7 days later if sooner; only `until`: the 24 hours before it. `since` not before `until`, or a window longer than 7 days: 400 INVALID_PARAMETER.",
    request: { params: webhookIdParams, query: statsQuerySchema },
    responses: {
      200: { description: "The counts per bucket.", schema: statsResponseSchema, example: { status: "success", result: statsSchema.meta()!.example } },
      400: ["INVALID_PARAMETER", "UNKNOWN_PARAMETER"],
      404: ["WEBHOOK_NOT_FOUND"],
    },
    async handler(req, env, _exec, rc) {
      const schoolId = await authenticate(req, env.DB, rc);
      const query = parseQuery(statsQuerySchema, req);
      const until = query.until ?? (query.since === undefined ? Date.now() : Math.min(Date.now(), query.since + STATS_MAX_WINDOW_MS));
      // A derived start never falls before year 0000, which the API could not write.
      const since = query.since ?? Math.max(FIRST_INSTANT_MS, until - STATS_DEFAULT_WINDOW_MS);
      if (since >= until) throw new ApiError("INVALID_PARAMETER", "`since` must be before `until`.", [{ parameter: "since", message: "must be before until" }]);
      if (until - since > STATS_MAX_WINDOW_MS) {
        throw new ApiError("INVALID_PARAMETER", "The window from `since` to `until` is longer than 7 days, the log's retention.", [
          { parameter: "until", message: "must be at most 7 days after since" },
        ]);
      }
      const bucket = query.bucket ?? "hour";
      const id = webhookId(req);
      const buckets = await hubFor(env, schoolId).deliveryStats(id, since, until, bucket);
      if (buckets === null) throw webhookNotFound(id);
      return success({ since: formatInstant(since), until: formatInstant(until), bucket, buckets });
    },
  },
  {
    method: "GET",
    path: "/v3/event-types",
    operationId: "listEventTypes",
    tag: TAG,
    summary: "The event catalog",
    description: "Every event type with its description and the JSON Schema of its body (the same as this document's `webhooks`). No authentication.",
    public: true,
    responses: {
      200: {
        description: "The catalog.",
        schema: eventTypesResponseSchema,
        example: { status: "success", result: [{ type: "webhook.test", description: "A test event.", schema: { type: "object" } }] },
      },
      400: ["UNKNOWN_PARAMETER"],
    },
    async handler(req) {
      rejectQuery(req);
      return success(eventCatalog());
    },
  },
];
