/**
 * The webhook operations (API.md § "Webhook registrations"), each declared once: thin
 * handlers that authenticate, validate, and call the school's SchoolHub over RPC. Only the
 * hub touches webhook state.
 *
 * Every handler answers 401 UNAUTHORIZED first (one D1 query), then 400 for a bad query or
 * body, then the hub's answer. Ids that are not well-formed, unknown, deleted or belong to
 * another school all answer 404 WEBHOOK_NOT_FOUND.
 */
import { z } from "zod";
import { requestHash } from "../db/idempotency";
import { hubFor } from "../events/hub-client";
import { authenticate } from "../http/auth";
import { ApiError } from "../http/errors";
import { idempotencyKeyHeaderSchema, readIdempotencyKey } from "../http/headers";
import { locationHeader, type Operation } from "../http/operation";
import { parseBody, parseBodyWith, parseQuery, rejectQuery } from "../http/request";
import { replayedHeader, storedAnswer, success } from "../http/respond";
import { MAX_PAGE_SIZE, MAX_WEBHOOKS } from "../lib/limits";
import { lifecycleError, optionalBody, subscriptionOf, TAG, webhookId, webhookNotFound } from "./operation-parts";
import {
  createdWebhookResponseSchema,
  createdWebhookSchema,
  createWebhookSchema,
  deletedWebhookResponseSchema,
  deliveriesQuerySchema,
  deliveryListResponseSchema,
  deliveryRecordSchema,
  EVENT_ID_EXAMPLE,
  emptyBodySchema,
  WEBHOOK_ID_EXAMPLE,
  webhookIdParams,
  webhookListResponseSchema,
  webhookRecordSchema,
  webhookTestResponseSchema,
} from "./schemas";
import { requireWebhookUrl } from "./url-policy";

/** The webhook operations. */
export const webhookOperations: Operation<Env>[] = [
  {
    method: "POST",
    path: "/v3/webhooks",
    operationId: "createWebhook",
    tag: TAG,
    portalTokens: true,
    summary: "Register a webhook",
    description:
      "The registration receives the school's events of the chosen types from now until it is deleted (see `webhooks` for the payloads and the Standard Webhooks signature). The `secret` is shown only in this response.",
    request: {
      headers: z.object({ "Idempotency-Key": idempotencyKeyHeaderSchema }),
      body: { schema: createWebhookSchema, description: "The registration." },
    },
    responses: {
      201: {
        description: "The registration, with its secret.",
        schema: createdWebhookResponseSchema,
        example: { status: "success", result: createdWebhookSchema.meta()!.example },
        headers: { ...locationHeader(`/v3/webhooks/${WEBHOOK_ID_EXAMPLE}`), ...replayedHeader },
      },
      400: {
        codes: ["VALIDATION_ERROR", "UNKNOWN_PARAMETER", "INVALID_JSON", "INVALID_WEBHOOK_URL", "INVALID_PARAMETER"],
        lead: "`INVALID_PARAMETER` for a malformed `Idempotency-Key`.",
      },
      409: ["WEBHOOK_LIMIT_REACHED"],
      422: { codes: ["IDEMPOTENCY_KEY_MISMATCH"], lead: "Nothing was created; use a new key for a new request." },
    },
    /**
     * `events` omitted or `["*"]` → `["*"]` (every event type); duplicates are dropped. `url`
     * is stored in its normalized form (see `checkWebhookUrl`, applied by `requireWebhookUrl`).
     */
    async handler(req, env, _exec, rc) {
      const schoolId = await authenticate(req, env.DB, rc);
      rejectQuery(req);
      const key = readIdempotencyKey(req);
      const body = await parseBody(createWebhookSchema, req, "The body must be a JSON object: { url, events?, description? }.");
      const url = requireWebhookUrl(body.url, env.WEBHOOK_ALLOW_INSECURE_URLS === "true");
      const idem = key === undefined ? undefined : { key, hash: await requestHash(body) };
      const result = await hubFor(env, schoolId).createWebhook({ url, events: subscriptionOf(body.events), description: body.description ?? null }, idem);
      if (!result.ok) {
        if (result.error === "IDEMPOTENCY_KEY_MISMATCH")
          throw new ApiError(result.error, "This Idempotency-Key was used with another body in the last 24 h; use a new key for a new request.");
        throw new ApiError(result.error);
      }
      return storedAnswer(result.answer, result.replayed);
    },
  },
  {
    method: "GET",
    path: "/v3/webhooks",
    operationId: "listWebhooks",
    tag: TAG,
    portalTokens: true,
    summary: "List webhook registrations",
    description: `The school's registrations, oldest first, without secrets. One page holds them all (at most ${MAX_WEBHOOKS}): \`pagination\` is \`{ page: 1, limit: ${MAX_WEBHOOKS}, hasMore: false }\`. No query parameter is defined.`,
    responses: {
      200: {
        description: "Every registration.",
        schema: webhookListResponseSchema,
        example: { status: "success", result: [webhookRecordSchema.meta()!.example], pagination: { page: 1, limit: MAX_WEBHOOKS, hasMore: false } },
      },
      400: ["UNKNOWN_PARAMETER"],
    },
    async handler(req, env, _exec, rc) {
      const schoolId = await authenticate(req, env.DB, rc);
      rejectQuery(req);
      const list = await hubFor(env, schoolId).listWebhooks();
      return success(list, { pagination: { page: 1, limit: MAX_WEBHOOKS, hasMore: false } });
    },
  },
  {
    method: "DELETE",
    path: "/v3/webhooks/{id}",
    operationId: "deleteWebhook",
    tag: TAG,
    portalTokens: true,
    summary: "Delete a webhook registration (beta)",
    description:
      "Removes the registration permanently. Once the 200 is sent: no event accepted after the delete is ever delivered to it; pending retries for it are dropped and no new attempt starts; the deletion survives restarts; the id is never reused. A second delete of the same id is a 404.",
    request: { params: webhookIdParams },
    responses: {
      200: {
        description: "The registration is deleted.",
        schema: deletedWebhookResponseSchema,
        example: { status: "success", result: { id: WEBHOOK_ID_EXAMPLE, deleted: true } },
      },
      400: ["UNKNOWN_PARAMETER"],
      404: ["WEBHOOK_NOT_FOUND"],
    },
    /** Once answered, nothing more is ever sent to the registration (`SchoolHub.deleteWebhook`). */
    async handler(req, env, _exec, rc) {
      const schoolId = await authenticate(req, env.DB, rc);
      rejectQuery(req);
      const id = webhookId(req);
      if (!(await hubFor(env, schoolId).deleteWebhook(id))) throw webhookNotFound(id);
      return success({ id, deleted: true });
    },
  },
  {
    method: "GET",
    path: "/v3/webhooks/{id}/deliveries",
    operationId: "listWebhookDeliveries",
    tag: TAG,
    portalTokens: true,
    summary: "List delivery attempts",
    description:
      'Delivery attempts of the last 7 days, newest first, filtered by `status` (`skipped` included), `eventType`, `eventId`, `since` and `until` (combined with AND; served from an index). A delivery still waiting for its first attempt is listed once with `attempt: 1`, `status: "pending"`, `attemptedAt: null` and its due time in `nextAttemptAt`.',
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
      const schoolId = await authenticate(req, env.DB, rc);
      const { page = 1, limit = MAX_PAGE_SIZE, ...filter } = parseQuery(deliveriesQuerySchema, req);
      const id = webhookId(req);
      const rows = await hubFor(env, schoolId).listDeliveries(id, filter, (page - 1) * limit, limit + 1);
      if (rows === null) throw webhookNotFound(id);
      return success(rows.slice(0, limit), { pagination: { page, limit, hasMore: rows.length > limit } });
    },
  },
  {
    method: "POST",
    path: "/v3/webhooks/{id}/test",
    operationId: "testWebhook",
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
      const schoolId = await authenticate(req, env.DB, rc);
      rejectQuery(req);
      parseBodyWith(emptyBodySchema, await optionalBody(req), "The body, if any, must be an empty JSON object.");
      const id = webhookId(req);
      const sent = await hubFor(env, schoolId).sendTest(id, schoolId);
      if (!sent.ok) throw lifecycleError(sent.error, id);
      return success({ eventId: sent.value.eventId, webhookId: id, type: "webhook.test" }, { status: 202 });
    },
  },
];
