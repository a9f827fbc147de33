/**
 * The delivery operations of one registration (docs/reference.md § "Delivery log", § "POST /v3/webhooks/{id}/test",
 * § "Resend", § "Recover", § "Delivery statistics"): reads are served by the registration's
 * courier once its hub found the registration; test, resend and recover go through the hub,
 * which checks the registration and forwards to the courier. Answers: 401, then 400, then
 * the objects'. Ids malformed, unknown, deleted or another school's: 404 WEBHOOK_NOT_FOUND.
 */
import { hubFor } from "../../events/hub-client";
import { authenticate } from "../../http/auth";
import { parseBodyWith, readOptionalJson } from "../../http/body";
import { ApiError } from "../../http/errors";
import type { Operation } from "../../http/operation";
import { parseQuery, pathParam, rejectQuery } from "../../http/request";
import { success } from "../../http/respond";
import { ID_RE } from "../../lib/ids";
import { MAX_PAGE_SIZE, RETENTION_MS } from "../../lib/limits";
import { readsCourses } from "../../lib/scopes";
import { formatInstant } from "../../lib/time";
import { courierFor, emptyBuckets, STATS_DEFAULT_WINDOW_MS, STATS_MAX_WINDOW_MS } from "../rpc";
import { lifecycleError, TAG, webhookId, webhookNotFound } from "./parts";
import { deliveriesQuerySchema, emptyBodySchema, recoverSchema, resendParams, webhookIdParams } from "./request-schemas";
import {
  deliveryListResponseSchema,
  deliveryRecordSchema,
  EVENT_ID_EXAMPLE,
  recoverResponseSchema,
  resendResponseSchema,
  WEBHOOK_ID_EXAMPLE,
  webhookTestResponseSchema,
} from "./schemas";
import { statsQuerySchema, statsResponseSchema, statsSchema } from "./stats-schemas";

/** The delivery operations. */
export const deliveryOperations: Operation<Env>[] = [
  {
    method: "GET",
    path: "/v3/webhooks/{id}/deliveries",
    operationId: "listWebhookDeliveries",
    scopes: ["webhooks:read"],
    tag: TAG,
    portalTokens: true,
    summary: "List delivery attempts",
    description:
      'Delivery attempts of the last 7 days, newest first, filtered by `status` (`skipped` included), `eventType`, `eventId`, `since` and `until` (combined with AND; served from an index). Each entry is one attempt with its own outcome, `succeeded` or `failed`, logged as soon as it ends: `status=failed` finds a failed attempt at once, also when a retry follows (its `nextAttemptAt` says when). `attempt` numbers each event\'s entries 1, 2, … in the order they were logged, across resends and recovers. A delivery still waiting for its first attempt is listed once with `status: "pending"`, `attemptedAt: null`, its due time in `nextAttemptAt` and the `attempt` it will be logged with.',
    request: { params: webhookIdParams, query: deliveriesQuerySchema },
    responses: {
      200: {
        description: "One page of attempts.",
        schema: deliveryListResponseSchema,
        example: { status: "success", result: [deliveryRecordSchema.meta()!.example], pagination: { page: 1, limit: 20, hasMore: false } },
      },
      400: ["INVALID_PARAMETER", "UNKNOWN_PARAMETER"],
      404: ["WEBHOOK_NOT_FOUND"],
    },
    async handler(req, env, _exec, rc) {
      const schoolId = await authenticate(req, env.DIRECTORY, rc);
      const { page = 1, limit = MAX_PAGE_SIZE, ...filter } = parseQuery(deliveriesQuerySchema, req);
      const id = webhookId(req);
      const used = await hubFor(env, schoolId).courierInUse(id);
      if (used === null) throw webhookNotFound(id);
      // A courier never used has an empty log: it is not started (no storage made for a read).
      const rows = used ? await courierFor(env, id).listDeliveries(filter, (page - 1) * limit, limit + 1) : [];
      // A receiver's answer may echo the course it was sent: only course readers see it (reference.md § Scopes).
      const shown = readsCourses(rc.scopes) ? rows : rows.map((r) => ({ ...r, responseBody: null }));
      return success(shown.slice(0, limit), { pagination: { page, limit, hasMore: rows.length > limit } });
    },
  },
  {
    method: "GET",
    path: "/v3/webhooks/{id}/stats",
    operationId: "getWebhookStats",
    scopes: ["webhooks:read"],
    tag: TAG,
    portalTokens: true,
    summary: "Delivery statistics per hour or day",
    description:
      "The delivery log of this registration counted per bucket over `[since, until)` (default the last 24 h; at most 7 days, the log's retention): the log's entries by status, in its words: attempts that `succeeded` and `failed` (also one that a retry follows), deliveries queued and not attempted yet (`pending`, at the time they were queued) and skipped entries. Buckets are aligned on UTC hours or days, oldest first, every bucket overlapping the window included, empty ones as zeros; entries older than the 7-day retention are not counted. Each bucket also has p50, p95 and p99 of the succeeded attempts' delay since the event's acceptance (`delayMs`, resends excepted) and of their duration (`durationMs`), in ms, within 5 % (plus rounding to the ms), over the bucket's whole UTC hours that overlap the window; `null` when none succeeded. Only `since`: until now, or 7 days later if sooner; only `until`: the 24 hours before it. `since` not before `until`, a window longer than 7 days, or one that ends before the 7-day retention: 400 INVALID_PARAMETER.",
    request: { params: webhookIdParams, query: statsQuerySchema },
    responses: {
      200: {
        description: "The counts and latency percentiles per bucket.",
        schema: statsResponseSchema,
        example: { status: "success", result: statsSchema.meta()!.example },
      },
      400: ["INVALID_PARAMETER", "UNKNOWN_PARAMETER"],
      404: ["WEBHOOK_NOT_FOUND"],
    },
    async handler(req, env, _exec, rc) {
      const schoolId = await authenticate(req, env.DIRECTORY, rc);
      const query = parseQuery(statsQuerySchema, req);
      const until = query.until ?? (query.since === undefined ? Date.now() : Math.min(Date.now(), query.since + STATS_MAX_WINDOW_MS));
      const since = query.since ?? until - STATS_DEFAULT_WINDOW_MS;
      if (since >= until) throw new ApiError("INVALID_PARAMETER", "`since` must be before `until`.", [{ parameter: "since", message: "must be before until" }]);
      if (until - since > STATS_MAX_WINDOW_MS) {
        throw new ApiError("INVALID_PARAMETER", "The window from `since` to `until` is longer than 7 days, the log's retention.", [
          { parameter: "until", message: "must be at most 7 days after since" },
        ]);
      }
      // A window wholly before the retention would answer zeros that mean "not kept", not "none".
      if (until <= Date.now() - RETENTION_MS) {
        throw new ApiError("INVALID_PARAMETER", "The window ends before the log's 7-day retention: nothing of it is kept.", [
          { parameter: query.until === undefined ? "since" : "until", message: "must be within the last 7 days" },
        ]);
      }
      const bucket = query.bucket ?? "hour";
      const id = webhookId(req);
      const used = await hubFor(env, schoolId).courierInUse(id);
      if (used === null) throw webhookNotFound(id);
      const buckets = used ? await courierFor(env, id).deliveryStats(since, until, bucket) : emptyBuckets(since, until, bucket).buckets;
      return success({ since: formatInstant(since), until: formatInstant(until), bucket, buckets });
    },
  },
  {
    method: "POST",
    path: "/v3/webhooks/{id}/test",
    operationId: "testWebhook",
    scopes: ["webhooks:write"],
    tag: TAG,
    portalTokens: true,
    summary: "Send a test event",
    description:
      "Queues a `webhook.test` event for this registration only (a disabled one: 409 WEBHOOK_DISABLED) and answers at once; the signed POST follows (retried like any delivery) and its outcome appears in the deliveries under `eventId`.",
    request: { params: webhookIdParams, body: { schema: emptyBodySchema, description: "Absent, or an empty JSON object.", required: false, example: {} } },
    responses: {
      202: {
        description: "The test event is queued.",
        schema: webhookTestResponseSchema,
        example: { status: "success", result: { eventId: EVENT_ID_EXAMPLE, webhookId: WEBHOOK_ID_EXAMPLE, type: "webhook.test" } },
      },
      400: ["VALIDATION_ERROR", "UNKNOWN_PARAMETER", "INVALID_JSON"],
      404: ["WEBHOOK_NOT_FOUND"],
      409: ["WEBHOOK_DISABLED"],
    },
    /** The body may be absent (or empty) or an empty JSON object; the signed POST follows asynchronously. */
    async handler(req, env, _exec, rc) {
      const schoolId = await authenticate(req, env.DIRECTORY, rc);
      rejectQuery(req);
      parseBodyWith(emptyBodySchema, await readOptionalJson(req), "The body, if any, must be an empty JSON object.");
      const id = webhookId(req);
      const sent = await hubFor(env, schoolId).sendTest(id);
      if (!sent.ok) throw lifecycleError(sent.error, id);
      return success({ eventId: sent.value.eventId, webhookId: id, type: "webhook.test" }, { status: 202 });
    },
  },
  {
    method: "POST",
    path: "/v3/webhooks/{id}/deliveries/{eventId}/resend",
    operationId: "resendWebhookDelivery",
    scopes: ["webhooks:write"],
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
      const schoolId = await authenticate(req, env.DIRECTORY, rc);
      rejectQuery(req);
      parseBodyWith(emptyBodySchema, await readOptionalJson(req));
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
    scopes: ["webhooks:write"],
    tag: TAG,
    portalTokens: true,
    summary: "Recover missed events after an outage",
    description:
      "Queues again, in acceptance order, every retained event accepted in `[since, until)` whose delivery to this registration ended `failed` or `skipped`, and makes due now each of its deliveries waiting for a retry (not those succeeded, nor pending ones not attempted yet), each once per call. Answered at once with what it will queue; the events are queued from the answer on, as the registration's queue makes room, and sent as they are queued. A recover called while one is still queueing joins it: one recover over the smallest window covering both. A DELETE stops it at once, a disable too. `since` older than the 7-day retention, or after `until`: 400 INVALID_PARAMETER.",
    request: { params: webhookIdParams, body: { schema: recoverSchema, description: "The window of acceptance." } },
    responses: {
      202: {
        description: "The recover is under way; its count.",
        schema: recoverResponseSchema,
        example: { status: "success", result: { queued: 12, exact: true } },
      },
      400: ["INVALID_PARAMETER", "VALIDATION_ERROR", "UNKNOWN_PARAMETER", "INVALID_JSON"],
      404: ["WEBHOOK_NOT_FOUND"],
      409: ["WEBHOOK_DISABLED"],
    },
    async handler(req, env, _exec, rc) {
      const schoolId = await authenticate(req, env.DIRECTORY, rc);
      rejectQuery(req);
      const body = parseBodyWith(recoverSchema, await readOptionalJson(req));
      if (body.since < Date.now() - RETENTION_MS) {
        throw new ApiError("INVALID_PARAMETER", "`since` is older than the 7-day retention of events.", [
          { path: "since", message: "must be within the last 7 days" },
        ]);
      }
      if (body.until !== undefined && body.since > body.until) {
        throw new ApiError("INVALID_PARAMETER", "`since` is after `until`.", [{ path: "since", message: "must not be after until" }]);
      }
      const id = webhookId(req);
      const result = await hubFor(env, schoolId).recover(id, body.since, body.until ?? null);
      if (!result.ok) throw lifecycleError(result.error, id);
      return success(result.value, { status: 202 });
    },
  },
];
