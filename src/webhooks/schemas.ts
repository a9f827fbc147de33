/**
 * Webhook registrations and deliveries as zod schemas (API.md § "Webhook registrations",
 * § "Event delivery"): the request schemas the operations validate with, the records they
 * answer (objects forbid undocumented fields), and the headers of a delivery. The document
 * is generated from them and the types of src/webhooks/types.ts are their `z.infer`s.
 */
import { z } from "zod";
import { DELIVERED_EVENT_TYPES, EVENT_TYPES } from "../events/types";
import { listEnvelope, successEnvelope } from "../http/envelopes";
import { instantOutSchema, mintedIdSchema, opaqueIdSchema, queryIntegerSchema } from "../lib/fields";
import { MAX_PAGE, MAX_PAGE_SIZE, MAX_WEBHOOKS } from "../lib/limits";

/** Longest accepted `description`, in characters. */
const MAX_DESCRIPTION_LENGTH = 500;

/** Example ids of the document. */
export const WEBHOOK_ID_EXAMPLE = "wh_01K4A8Z1M2N3P4Q5R6S7T8V9W0";
export const EVENT_ID_EXAMPLE = "evt_01K4A8Z1M2N3P4Q5R6S7T8V9W0";

// ---------------------------------------------------------------------------------------
// Requests.

const eventItem = z.enum(["*", ...EVENT_TYPES], { error: `must be "*" or one of ${EVENT_TYPES.join(", ")}` });

/** The POST /v3/webhooks body. */
export const createWebhookSchema = z
  .strictObject({
    url: z.string({ error: "must be a string" }).min(1, "must not be empty").meta({
      format: "uri",
      description:
        "Where events are POSTed, at most 2,048 characters, stored normalized (WHATWG serialization). The policy (400 INVALID_WEBHOOK_URL with the reason otherwise): `https` only; no userinfo (`user:pass@`); the host is not an IP literal in a loopback, private, link-local, unique-local, CGNAT, unspecified, multicast, documentation or otherwise reserved range (IPv4 and IPv6, every spelling: `0x7f000001`, `127.1`, `[::ffff:127.0.0.1]`…), not a single-label name (`https://metadata/`), and not a special-use or internal name: `localhost` and `*.localhost`, `*.local`, `*.internal`, `*.home.arpa`, `*.lan`, `*.intranet`, `*.corp`, `*.onion`, `*.test`, `*.invalid`, `*.example` — in any case, with or without a trailing dot. Names are not resolved. A deployment with `WEBHOOK_ALLOW_INSECURE_URLS=true` (local development) lifts all of it but the scheme (`http` or `https`).",
      example: "https://hooks.example.com/in",
    }),
    events: z
      .array(eventItem, { error: "must be an array of event types" })
      .min(1, `must list at least one event type, or be ["*"]`)
      .refine((list) => !list.includes("*") || list.length === 1, `"*" must be alone: ["*"] means every event type`)
      .optional()
      .meta({
        description: `Event types to receive: \`["*"]\` (default) for every type, or a list of ${EVENT_TYPES.map((t) => `\`${t}\``).join(", ")}. \`"*"\` must be alone; an unknown type is 400 VALIDATION_ERROR; duplicates are dropped.`,
        example: ["course.created", "course.archived"],
      }),
    description: z
      .string({ error: "must be a string or null" })
      .max(MAX_DESCRIPTION_LENGTH, `must be at most ${MAX_DESCRIPTION_LENGTH} characters`)
      .nullable()
      .optional()
      .meta({ description: `Free text, up to ${MAX_DESCRIPTION_LENGTH} characters.`, example: "ERP sync" }),
  })
  .meta({
    id: "WebhookCreate",
    description: "A new registration. Unknown fields, `__proto__`, `constructor` and `prototype` included at any depth, are a 400 UNKNOWN_PARAMETER.",
    example: { url: "https://hooks.example.com/in", events: ["course.created", "course.archived"], description: "ERP sync" },
  });

/** The optional body of POST /v3/webhooks/{id}/test: nothing, or an empty JSON object. */
export const emptyBodySchema = z.strictObject({}).meta({ description: "An empty object (the body may also be absent)." });

/** The query of GET /v3/webhooks/{id}/deliveries (defaults: page 1, limit 100). */
export const deliveriesQuerySchema = z.strictObject({
  page: queryIntegerSchema(1, MAX_PAGE)
    .meta({ description: `Page number: a string-encoded integer (decimal digits), minimum 1, maximum ${MAX_PAGE}, default 1.`, default: "1", example: "1" })
    .optional(),
  limit: queryIntegerSchema(1, MAX_PAGE_SIZE)
    .meta({
      description: `Items per page: a string-encoded integer (decimal digits), minimum 1, maximum ${MAX_PAGE_SIZE}, default ${MAX_PAGE_SIZE}.`,
      default: String(MAX_PAGE_SIZE),
      example: "20",
    })
    .optional(),
});

/** The `{id}` of the operations on one registration. */
export const webhookIdParams = z.strictObject({
  id: z.string().meta({
    description: "The registration id (`wh_…`). Unknown, deleted, malformed or another school's: 404 WEBHOOK_NOT_FOUND.",
    example: WEBHOOK_ID_EXAMPLE,
  }),
});

// ---------------------------------------------------------------------------------------
// Records.

/** What a registration subscribes to: `["*"]` (every event type) or a list of event types. */
export const subscriptionSchema = z.union([z.tuple([z.literal("*")]).meta({ minItems: 1, maxItems: 1 }), z.array(z.enum(EVENT_TYPES)).min(1)]).meta({
  description: '`["*"]` for every event type (the default), or the list of event types the registration receives.',
  example: ["course.created", "course.archived"],
});

const webhookFields = {
  id: mintedIdSchema("wh", WEBHOOK_ID_EXAMPLE).meta({ description: "The registration id (`wh_…`), never reused." }),
  url: z.string().meta({ format: "uri", description: "The normalized target URL (WHATWG serialization).", example: "https://hooks.example.com/in" }),
  events: subscriptionSchema,
  description: z.string().nullable().meta({ description: "Free text, `null` when absent.", example: "ERP sync" }),
  createdAt: instantOutSchema,
};

/** The example registration of the document. */
const WEBHOOK_EXAMPLE = {
  id: WEBHOOK_ID_EXAMPLE,
  url: "https://hooks.example.com/in",
  events: ["course.created", "course.archived"],
  description: "ERP sync",
  createdAt: "2026-08-20T09:12:44.120Z",
};

/** A registration as listed (no secret). */
export const webhookRecordSchema = z.strictObject(webhookFields).meta({
  id: "Webhook",
  description: "A webhook registration (without its secret).",
  example: WEBHOOK_EXAMPLE,
});

/** A registration as POST /v3/webhooks answers it, with its secret (shown only there). */
export const createdWebhookSchema = z
  .strictObject({
    ...webhookFields,
    secret: z
      .string()
      .regex(/^whsec_[A-Za-z0-9+/]{43}=$/)
      .meta({ description: "The signing secret: `whsec_` + base64 of 32 random bytes. Shown only in this response." }),
  })
  .meta({
    id: "CreatedWebhook",
    description: "A new webhook registration, with its signing secret.",
    example: { ...WEBHOOK_EXAMPLE, secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw/Jb8Yq8Bn7A=" },
  });

/** Answer of DELETE /v3/webhooks/{id}. */
const deletedWebhookSchema = z
  .strictObject({ id: opaqueIdSchema, deleted: z.literal(true) })
  .meta({ id: "DeletedWebhook", example: { id: WEBHOOK_ID_EXAMPLE, deleted: true } });

/** Answer of POST /v3/webhooks/{id}/test. */
const webhookTestSchema = z
  .strictObject({
    eventId: mintedIdSchema("evt", EVENT_ID_EXAMPLE).meta({
      description: "Id of the `webhook.test` event; its attempts appear under this id in the deliveries.",
    }),
    webhookId: opaqueIdSchema,
    type: z.literal("webhook.test"),
  })
  .meta({ id: "WebhookTest", example: { eventId: EVENT_ID_EXAMPLE, webhookId: WEBHOOK_ID_EXAMPLE, type: "webhook.test" } });

/**
 * One entry of GET /v3/webhooks/{id}/deliveries: one attempt (`attemptedAt` set) whose
 * `status` is the delivery's state right after it, or a delivery still waiting for its first
 * attempt, listed once with `attempt: 1`, `status: "pending"`, `attemptedAt: null`.
 */
export const deliveryRecordSchema = z
  .strictObject({
    eventId: opaqueIdSchema,
    eventType: z.enum(DELIVERED_EVENT_TYPES),
    attempt: z.int().min(1).meta({ description: "1 for the immediate attempt, 2 for the first retry, …" }),
    status: z.enum(["pending", "succeeded", "failed"]).meta({
      description:
        "The delivery's state right after this attempt: `pending` (a retry is due at `nextAttemptAt`), `succeeded`, or `failed` (410 Gone or schedule exhausted).",
    }),
    responseStatus: z.int().nullable().meta({ description: "HTTP status of the answer; `null` for network errors, timeouts and attempts not made yet." }),
    error: z.string().nullable().meta({ description: "Why the attempt did not succeed (`HTTP 500`, `timed out after 15000 ms`, …); `null` on success." }),
    attemptedAt: instantOutSchema.nullable().meta({ description: "When the attempt started; `null` for a delivery still waiting for its first attempt." }),
    nextAttemptAt: instantOutSchema.nullable().meta({ description: "When the next attempt is due; `null` when none is." }),
  })
  .meta({
    id: "Delivery",
    description: "One delivery attempt (or a delivery waiting for its first attempt).",
    example: {
      eventId: EVENT_ID_EXAMPLE,
      eventType: "course.updated",
      attempt: 2,
      status: "pending",
      responseStatus: 503,
      error: "HTTP 503",
      attemptedAt: "2026-09-07T08:00:05.120Z",
      nextAttemptAt: "2026-09-07T08:05:05.120Z",
    },
  });

// ---------------------------------------------------------------------------------------
// Responses.

/** 201 of POST /v3/webhooks. */
export const createdWebhookResponseSchema = successEnvelope("CreatedWebhookResponse", createdWebhookSchema, "The new registration, with its secret.");
/** 200 of GET /v3/webhooks. */
export const webhookListResponseSchema = listEnvelope(
  "WebhookList",
  webhookRecordSchema,
  `Every registration of the school, oldest first (one page: at most ${MAX_WEBHOOKS}).`,
);
/** 200 of DELETE /v3/webhooks/{id}. */
export const deletedWebhookResponseSchema = successEnvelope("DeletedWebhookResponse", deletedWebhookSchema, "The registration is deleted.");
/** 200 of GET /v3/webhooks/{id}/deliveries. */
export const deliveryListResponseSchema = listEnvelope("DeliveryList", deliveryRecordSchema, "Delivery attempts of the last 7 days, newest first.");
/** 202 of POST /v3/webhooks/{id}/test. */
export const webhookTestResponseSchema = successEnvelope("WebhookTestResponse", webhookTestSchema, "The test event is queued.");

// ---------------------------------------------------------------------------------------
// Delivery.

/** The Standard Webhooks headers of every delivery (API.md § "Event delivery"). */
export const deliveryHeadersSchema = z.strictObject({
  "webhook-id": z.string().meta({ description: "The event id (`evt_…`), the same on every retry: deduplicate on it.", example: EVENT_ID_EXAMPLE }),
  "webhook-timestamp": z.string().regex(/^\d+$/).meta({ description: "Unix seconds of this attempt.", example: "1788768010" }),
  "webhook-signature": z.string().meta({
    description:
      "`v1,` + base64 HMAC-SHA256, keyed with the base64-decoded part of the registration's secret (after `whsec_`), over `{webhook-id}.{webhook-timestamp}.{body}`. Verify it with any Standard Webhooks library.",
    example: "v1,K5oZfzN95Z9UVu1EsfQmfVNQhnkZ2pj9o9NDN/H/pI4=",
  }),
});
