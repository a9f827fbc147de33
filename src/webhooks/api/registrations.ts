/**
 * The registration operations (docs/reference.md § "Webhook registrations"): create, list, read, change,
 * rotate and delete, each declared once — thin handlers that authenticate, validate and call
 * the school's SchoolHub over RPC. Answers: 401 first, then 400 for a bad query or body, then
 * the hub's. Ids malformed, unknown, deleted or another school's: 404 WEBHOOK_NOT_FOUND.
 */
import { z } from "zod";
import { requestHash } from "../../db/idempotency";
import { hubFor } from "../../events/hub-client";
import { authenticate } from "../../http/auth";
import { parseBody, parseBodyWith, readOptionalJson } from "../../http/body";
import { ApiError } from "../../http/errors";
import { idempotencyKeyHeaderSchema, readIdempotencyKey } from "../../http/headers";
import { locationHeader, type Operation } from "../../http/operation";
import { rejectQuery } from "../../http/request";
import { replayedHeader, storedAnswer, success } from "../../http/respond";
import { DEFAULT_GRACE_SECONDS, MAX_WEBHOOKS } from "../../lib/limits";
import { requireWebhookUrl } from "../delivery/url-policy";
import { HEADERS_REQUIRED } from "../rpc";
import { subscriptionOf, TAG, webhookId, webhookNotFound } from "./parts";
import { createWebhookSchema, rotateSchema, updateWebhookSchema, webhookIdParams } from "./request-schemas";
import {
  createdWebhookResponseSchema,
  createdWebhookSchema,
  deletedWebhookResponseSchema,
  rotatedSecretResponseSchema,
  rotatedSecretSchema,
  WEBHOOK_ID_EXAMPLE,
  webhookListResponseSchema,
  webhookRecordSchema,
  webhookResponseSchema,
} from "./schemas";

/** The registration operations. */
export const registrationOperations: Operation<Env>[] = [
  {
    method: "POST",
    path: "/v3/webhooks",
    operationId: "createWebhook",
    scopes: ["webhooks:write"],
    tag: TAG,
    portalTokens: true,
    summary: "Register a webhook",
    description:
      'The registration receives the school\'s events of the chosen types (and, with `filter`, of its trainings, groups or professors) from now until it is deleted (see `webhooks` for the payloads and the Standard Webhooks signature). `headers` are sent with every attempt; `maxPerSecond` throttles its attempts; `ordering` (default `course`) delivers the events of one course in order; `payload: "thin"` sends course events with the course\'s id and version only. With `signatureScheme: "v1"` (default) the `secret` is shown only in this response; with `"v1a"` (ed25519) the answer carries `publicKey` instead and no secret: the private key is never shown.',
    request: {
      headers: z.object({ "Idempotency-Key": idempotencyKeyHeaderSchema }),
      body: { schema: createWebhookSchema, description: "The registration." },
    },
    responses: {
      201: {
        description: "The registration, with its secret (`v1`) or public key (`v1a`).",
        schema: createdWebhookResponseSchema,
        example: { status: "success", result: createdWebhookSchema.meta()!.example },
        headers: { ...locationHeader(`/v3/webhooks/${WEBHOOK_ID_EXAMPLE}`), ...replayedHeader },
      },
      400: {
        codes: ["VALIDATION_ERROR", "UNKNOWN_PARAMETER", "INVALID_JSON", "INVALID_WEBHOOK_URL", "INVALID_PARAMETER"],
        lead: "`INVALID_PARAMETER` for a malformed `Idempotency-Key`.",
      },
      404: {
        codes: ["WEBHOOK_NOT_FOUND"],
        lead: "The `Idempotency-Key` created a registration that was deleted since: nothing was created, and its answer (the secret) is erased.",
      },
      409: ["WEBHOOK_LIMIT_REACHED"],
      422: { codes: ["IDEMPOTENCY_KEY_MISMATCH"], lead: "Nothing was created; use a new key for a new request." },
    },
    /**
     * `events` omitted or `["*"]` → `["*"]` (every event type); duplicates are dropped. `url`
     * is stored in its normalized form (see `checkWebhookUrl`, applied by `requireWebhookUrl`).
     */
    async handler(req, env, _exec, rc) {
      const schoolId = await authenticate(req, env.DIRECTORY, rc);
      rejectQuery(req);
      const key = readIdempotencyKey(req);
      const body = await parseBody(createWebhookSchema, req, "The body must be a JSON object: { url, events?, description? }.");
      const url = requireWebhookUrl(body.url, env.WEBHOOK_ALLOW_INSECURE_URLS === "true");
      const idem = key === undefined ? undefined : { key, hash: await requestHash(body) };
      const result = await hubFor(env, schoolId).createWebhook(
        schoolId,
        {
          url,
          events: subscriptionOf(body.events),
          description: body.description ?? null,
          filter: body.filter ?? null,
          headers: body.headers ?? {},
          maxPerSecond: body.maxPerSecond ?? null,
          ordering: body.ordering ?? "course",
          signatureScheme: body.signatureScheme ?? "v1",
          payload: body.payload ?? "full",
          createdBy: rc.keyId ?? null,
          scopes: rc.keyScopes ?? [],
        },
        idem,
      );
      if (!result.ok) {
        if (result.error === "IDEMPOTENCY_KEY_MISMATCH")
          throw new ApiError(result.error, "This Idempotency-Key was used with another body in the last 24 h; use a new key for a new request.");
        if (result.error === "WEBHOOK_NOT_FOUND")
          throw new ApiError(result.error, "The registration this Idempotency-Key created was deleted; nothing was created. Use a new key to create another.");
        throw new ApiError(result.error);
      }
      return storedAnswer(result.answer, result.replayed);
    },
  },
  {
    method: "GET",
    path: "/v3/webhooks",
    operationId: "listWebhooks",
    scopes: ["webhooks:read"],
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
      const schoolId = await authenticate(req, env.DIRECTORY, rc);
      rejectQuery(req);
      const list = await hubFor(env, schoolId).listWebhooks();
      return success(list, { pagination: { page: 1, limit: MAX_WEBHOOKS, hasMore: false } });
    },
  },
  {
    method: "GET",
    path: "/v3/webhooks/{id}",
    operationId: "getWebhook",
    scopes: ["webhooks:read"],
    tag: TAG,
    portalTokens: true,
    summary: "Read one webhook registration",
    description:
      "The registration's record, without its secret, private key or header values (`headerNames` only); a `v1a` registration's `publicKey` is always shown.",
    request: { params: webhookIdParams },
    responses: {
      200: { description: "The registration.", schema: webhookResponseSchema, example: { status: "success", result: webhookRecordSchema.meta()!.example } },
      400: ["UNKNOWN_PARAMETER"],
      404: ["WEBHOOK_NOT_FOUND"],
    },
    async handler(req, env, _exec, rc) {
      const schoolId = await authenticate(req, env.DIRECTORY, rc);
      rejectQuery(req);
      const id = webhookId(req);
      const record = await hubFor(env, schoolId).getWebhook(id);
      if (record === null) throw webhookNotFound(id);
      return success(record);
    },
  },
  {
    method: "PATCH",
    path: "/v3/webhooks/{id}",
    operationId: "updateWebhook",
    scopes: ["webhooks:write"],
    tag: TAG,
    portalTokens: true,
    summary: "Change, disable or enable a webhook registration",
    description:
      'Any of `url` (the URL policy applies), `events`, `description`, `filter`, `headers`, `maxPerSecond` (`null` clears these four; `headers` replaces the whole set), `ordering`, `payload`, `enabled`; the id, the secret, the `signatureScheme` (set at creation only: given here, 400 VALIDATION_ERROR) and the delivery log are kept. The registration\'s courier holds the change before the 200: `url`, `headers`, `maxPerSecond`, `ordering` and `payload` apply to attempts started after it (an attempt in flight to the old URL finishes and is logged); `events` and `filter` to events accepted after it (deliveries already queued stay). `enabled: false`: from the 200 on no attempt to it starts; its queued deliveries and pending retries end `skipped`, and so does each event accepted meanwhile that it subscribes to (`disabledReason: "manual"`). `enabled: true`: events accepted from then on are delivered again, the failure streak restarts; skipped ones only by resend or recover. A new `url` on a registration with custom headers must come with `headers` (the same values again, new ones, or `null`), else 400 VALIDATION_ERROR naming `headers`: the stored values are bound to the URL they were given for. If the courier cannot be reached the answer is 500 and the change is made: a repeated PATCH completes it.',
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
      const schoolId = await authenticate(req, env.DIRECTORY, rc);
      rejectQuery(req);
      const body = parseBodyWith(updateWebhookSchema, await readOptionalJson(req));
      const url = body.url === undefined ? undefined : requireWebhookUrl(body.url, env.WEBHOOK_ALLOW_INSECURE_URLS === "true");
      const id = webhookId(req);
      const record = await hubFor(env, schoolId).updateWebhook(id, {
        url,
        events: body.events === undefined ? undefined : subscriptionOf(body.events),
        description: body.description,
        filter: body.filter,
        headers: body.headers,
        maxPerSecond: body.maxPerSecond,
        ordering: body.ordering,
        payload: body.payload,
        enabled: body.enabled,
        updatedBy: rc.keyId ?? null,
      });
      if (record === null) throw webhookNotFound(id);
      if (record === HEADERS_REQUIRED) {
        const message = "a new url on a registration with custom headers needs headers too: the same values again, new ones, or null";
        throw new ApiError("VALIDATION_ERROR", `The body breaks the schema: headers ${message}.`, [{ path: "headers", message }]);
      }
      return success(record);
    },
  },
  {
    method: "POST",
    path: "/v3/webhooks/{id}/secret/rotate",
    operationId: "rotateWebhookSecret",
    scopes: ["webhooks:write"],
    tag: TAG,
    portalTokens: true,
    summary: "Rotate the signing secret",
    description:
      "A new secret (shown only here) — for a `v1a` registration a new key pair, answered as its `publicKey` (the private key is never shown). Until `previousSecretExpiresAt` every attempt carries two space-separated signatures, `v1,<new> v1,<previous>` (`v1a,<new> v1a,<previous>`; Standard Webhooks), so a receiver can switch at its own pace. A second rotation within the grace keeps only the newest previous secret; `graceSeconds: 0` drops the previous secret at once.",
    request: { params: webhookIdParams, body: { schema: rotateSchema, description: "Absent, or `{ graceSeconds }`.", required: false } },
    responses: {
      200: {
        description: "The new secret, or public key (`v1a`).",
        schema: rotatedSecretResponseSchema,
        example: { status: "success", result: rotatedSecretSchema.meta()!.example },
      },
      400: ["VALIDATION_ERROR", "UNKNOWN_PARAMETER", "INVALID_JSON"],
      404: ["WEBHOOK_NOT_FOUND"],
    },
    async handler(req, env, _exec, rc) {
      const schoolId = await authenticate(req, env.DIRECTORY, rc);
      rejectQuery(req);
      const body = parseBodyWith(rotateSchema, await readOptionalJson(req));
      const id = webhookId(req);
      const rotated = await hubFor(env, schoolId).rotateSecret(id, body.graceSeconds ?? DEFAULT_GRACE_SECONDS, rc.keyId ?? null);
      if (rotated === null) throw webhookNotFound(id);
      return success(rotated);
    },
  },
  {
    method: "DELETE",
    path: "/v3/webhooks/{id}",
    operationId: "deleteWebhook",
    scopes: ["webhooks:write"],
    tag: TAG,
    portalTokens: true,
    summary: "Delete a webhook registration (beta)",
    description:
      'Removes the registration permanently. Once the 200 is sent: no event accepted after the delete is ever delivered to it; pending retries for it are dropped and no new attempt starts; the deletion survives restarts; the id is never reused. A second delete of the same id is a 404. "(beta)": this behaviour is settled and kept; the answer may still gain fields (CHANGELOG.md, compatibility policy).',
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
      const schoolId = await authenticate(req, env.DIRECTORY, rc);
      rejectQuery(req);
      const id = webhookId(req);
      if (!(await hubFor(env, schoolId).deleteWebhook(id))) throw webhookNotFound(id);
      return success({ id, deleted: true });
    },
  },
];
