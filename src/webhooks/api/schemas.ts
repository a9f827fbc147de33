/**
 * Webhook registrations and deliveries as zod schemas (API.md § "Webhook registrations",
 * § "Event delivery"): the request schemas the operations validate with, the records they
 * answer (objects forbid undocumented fields), and the headers of a delivery. The document
 * is generated from them and the types of src/webhooks/types.ts are their `z.infer`s.
 */
import { z } from "zod";
import { DELIVERED_EVENT_TYPES, EVENT_TYPES } from "../../events/types";
import { listEnvelope, successEnvelope } from "../../http/envelopes";
import { idSchema, instantOutSchema, instantSchema, mintedIdSchema, opaqueIdSchema, queryIntegerSchema } from "../../lib/fields";
import { DEFAULT_GRACE_SECONDS, MAX_GRACE_SECONDS, MAX_PAGE, MAX_PAGE_SIZE, MAX_WEBHOOKS } from "../../lib/limits";

/** Longest accepted `description`, in characters. */
const MAX_DESCRIPTION_LENGTH = 500;

/** Example ids of the document. */
export const WEBHOOK_ID_EXAMPLE = "wh_01K4A8Z1M2N3P4Q5R6S7T8V9W0";
export const EVENT_ID_EXAMPLE = "evt_01K4A8Z1M2N3P4Q5R6S7T8V9W0";

// ---------------------------------------------------------------------------------------
// Requests.

/** Most custom headers a registration may have. */
const MAX_CUSTOM_HEADERS = 10;
/** Longest custom header value, in characters. */
const MAX_HEADER_VALUE_LENGTH = 1000;
/** Most ids per filter dimension. */
const MAX_FILTER_IDS = 100;
/** An HTTP token (RFC 9110 § 5.6.2): what a header name may be. */
const HTTP_TOKEN_RE = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
/** Header names a registration may not set (lower case; `*` ends a prefix): the delivery's own and the platform's. */
const RESERVED_HEADER_NAMES = [
  "webhook-*",
  "content-type",
  "content-length",
  "host",
  "connection",
  "transfer-encoding",
  "user-agent",
  "cf-*",
  "x-forwarded-*",
  "forwarded",
] as const;

/** Why header `name` is refused, or `null` (API.md § "POST /v3/webhooks": `headers`). */
function headerNameProblem(name: string): string | null {
  if (!HTTP_TOKEN_RE.test(name)) return "must be an HTTP header name (a token: letters, digits and !#$%&'*+-.^_`|~)";
  const lower = name.toLowerCase();
  const reserved = RESERVED_HEADER_NAMES.find((r) => (r.endsWith("*") ? lower.startsWith(r.slice(0, -1)) : lower === r));
  return reserved ? `is reserved (${reserved}): the delivery or the platform sets it` : null;
}

/** Custom headers: at most 10, names unique whatever their case, not reserved; values printable ASCII. */
const headersSchema = z
  .record(
    z.string(),
    z
      .string({ error: "must be a string" })
      .min(1, "must not be empty")
      .max(MAX_HEADER_VALUE_LENGTH, `must be at most ${MAX_HEADER_VALUE_LENGTH} characters`)
      .regex(/^[\x20-\x7e]*$/, "must be printable ASCII (no CR, LF, NUL or other control characters)"),
    { error: "must be an object of header names to values" },
  )
  .superRefine((headers, ctx) => {
    const names = Object.keys(headers);
    if (names.length > MAX_CUSTOM_HEADERS) ctx.addIssue({ code: "custom", message: `must hold at most ${MAX_CUSTOM_HEADERS} headers` });
    const seen = new Set<string>();
    for (const name of names) {
      const problem = headerNameProblem(name);
      if (problem) ctx.addIssue({ code: "custom", path: [name], message: problem });
      if (seen.has(name.toLowerCase())) ctx.addIssue({ code: "custom", path: [name], message: "is given twice (names are case-insensitive)" });
      seen.add(name.toLowerCase());
    }
  })
  .transform((headers) => Object.fromEntries(Object.entries(headers).map(([name, value]) => [name.toLowerCase(), value])))
  .meta({
    description: `Up to ${MAX_CUSTOM_HEADERS} headers sent with every attempt (tests, resends and recovers included): names are HTTP tokens, case-insensitive, unique, and not \`${RESERVED_HEADER_NAMES.join("`, `")}\`; values 1–${MAX_HEADER_VALUE_LENGTH} printable ASCII characters. Values are never shown again (records carry \`headerNames\`).`,
    example: { "x-api-key": "k_2b9f4c" },
  });

const filterIds = (what: string) =>
  z
    .array(idSchema, { error: "must be an array of ids" })
    .min(1, "must list at least one id")
    .max(MAX_FILTER_IDS, `must list at most ${MAX_FILTER_IDS} ids`)
    .optional()
    .meta({ description: `The course ${what}.` });

const FILTER_FIELDS = ["trainingId", "groupId", "professorId"] as const;

/** A registration's filter on the school's dimensions (API.md § "POST /v3/webhooks": `filter`). */
const filterSchema = z
  .object(
    {
      trainingId: filterIds("`trainingId` equals one of these"),
      groupId: filterIds("`groupIds` share one of these"),
      professorId: filterIds("`professorIds` share one of these"),
    },
    { error: "must be an object { trainingId?, groupId?, professorId? }" },
  )
  .catchall(z.unknown())
  .superRefine((filter, ctx) => {
    for (const key of Object.keys(filter)) {
      if (!(FILTER_FIELDS as readonly string[]).includes(key))
        ctx.addIssue({ code: "custom", path: [key], message: `is not a filter field (${FILTER_FIELDS.join(", ")})` });
    }
    if (!FILTER_FIELDS.some((f) => filter[f] !== undefined)) ctx.addIssue({ code: "custom", message: `must give at least one of ${FILTER_FIELDS.join(", ")}` });
  })
  .transform(
    (filter) =>
      Object.fromEntries(FILTER_FIELDS.filter((f) => filter[f] !== undefined).map((f) => [f, filter[f]])) as {
        trainingId?: string[];
        groupId?: string[];
        professorId?: string[];
      },
  )
  .meta({
    // Other fields are refused (400 VALIDATION_ERROR, checked above rather than by a strict object).
    additionalProperties: false,
    description:
      "Only course events whose course matches, for every field given, one listed id (`trainingId` equal, `groupIds` or `professorIds` sharing one) — as the event carries it or as it was just before the change, so a course leaving the scope is reported once. Other events always pass. Ids need not exist.",
    example: { trainingId: ["trn_3"] },
  });

/** 1–1,000 attempts per second at most, or `null` (no throttle). */
const maxPerSecondSchema = z
  .int({ error: "must be an integer from 1 to 1000, or null" })
  .min(1, "must be an integer from 1 to 1000, or null")
  .max(1000, "must be an integer from 1 to 1000, or null")
  .nullable()
  .meta({
    description: "At most this many attempts start within any one second (1–1,000); waiting is not part of an attempt's timeout. `null`: no throttle.",
    example: 10,
  });

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
    filter: filterSchema.nullable().optional(),
    headers: headersSchema.nullable().optional(),
    maxPerSecond: maxPerSecondSchema.optional(),
  })
  .meta({
    id: "WebhookCreate",
    description: "A new registration. Unknown fields, `__proto__`, `constructor` and `prototype` included at any depth, are a 400 UNKNOWN_PARAMETER.",
    example: { url: "https://hooks.example.com/in", events: ["course.created", "course.archived"], description: "ERP sync" },
  });

/** The optional body of POST /v3/webhooks/{id}/test: nothing, or an empty JSON object. */
export const emptyBodySchema = z.strictObject({}).meta({ description: "An empty object (the body may also be absent)." });

/** The states of a delivery in the log (`skipped`: never attempted, the registration was disabled). */
const DELIVERY_STATUSES = ["pending", "succeeded", "failed", "skipped"] as const;

/**
 * The query of GET /v3/webhooks/{id}/deliveries: filters combined with AND (`since`/`until`
 * on `attemptedAt`, or the queued time of a delivery not attempted yet), then the page
 * (defaults: page 1, limit 100).
 */
export const deliveriesQuerySchema = z.strictObject({
  status: z
    .enum(DELIVERY_STATUSES, { error: `must be one of ${DELIVERY_STATUSES.join(", ")}` })
    .optional()
    .meta({ description: "Only entries with this `status`.", example: "failed" }),
  eventType: z
    .enum(DELIVERED_EVENT_TYPES, { error: `must be one of ${DELIVERED_EVENT_TYPES.join(", ")}` })
    .optional()
    .meta({ description: "Only entries of this event type.", example: "course.updated" }),
  eventId: idSchema.optional().meta({ description: "Only the attempts of this event.", example: EVENT_ID_EXAMPLE }),
  since: instantSchema({ repair: true })
    .optional()
    .meta({ description: "Only entries at or after this instant (`attemptedAt`, or when queued for one not attempted yet)." }),
  until: instantSchema({ repair: true })
    .optional()
    .meta({ description: "Only entries before this instant (`attemptedAt`, or when queued for one not attempted yet)." }),
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

/** The `{id}` and `{eventId}` of POST /v3/webhooks/{id}/deliveries/{eventId}/resend. */
export const resendParams = webhookIdParams.extend({
  eventId: z.string().meta({ description: "The event id (`evt_…`), retained (7 days) and addressed to this registration.", example: EVENT_ID_EXAMPLE }),
});

/** The PATCH /v3/webhooks/{id} body: any of the fields (none: nothing changes); `null` clears `description`, `filter`, `headers`, `maxPerSecond`. */
export const updateWebhookSchema = createWebhookSchema
  .partial()
  .extend({ enabled: z.boolean({ error: "must be true or false" }).optional().meta({ description: "`false` disables, `true` enables." }) })
  .meta({ id: "WebhookUpdate", description: "The fields to change.", example: { enabled: false } });

/** The body of POST /v3/webhooks/{id}/secret/rotate (absent: `{}`). */
export const rotateSchema = z
  .strictObject({
    graceSeconds: z
      .int({ error: `must be an integer from 0 to ${MAX_GRACE_SECONDS}` })
      .min(0, `must be an integer from 0 to ${MAX_GRACE_SECONDS}`)
      .max(MAX_GRACE_SECONDS, `must be an integer from 0 to ${MAX_GRACE_SECONDS}`)
      .optional()
      .meta({
        description: `Seconds during which attempts are also signed with the previous secret (default ${DEFAULT_GRACE_SECONDS}; 0 drops it at once).`,
      }),
  })
  .meta({ example: { graceSeconds: DEFAULT_GRACE_SECONDS } });

/** The body of POST /v3/webhooks/{id}/recover: the window of acceptance `[since, until)`. */
export const recoverSchema = z.strictObject({ since: instantSchema(), until: instantSchema().optional() }).meta({ example: { since: "2026-09-07T08:00:00Z" } });

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
  filter: z
    .strictObject({ trainingId: z.array(z.string()).optional(), groupId: z.array(z.string()).optional(), professorId: z.array(z.string()).optional() })
    .nullable()
    .meta({ description: "The filter on the school's dimensions; `null` when not set (every event it subscribes to)." }),
  headerNames: z.array(z.string()).meta({ description: "Names of the custom headers, lower case, sorted (values are never shown)." }),
  maxPerSecond: z.int().nullable().meta({ description: "The throttle (attempts started per second at most); `null` when not set." }),
  enabled: z.boolean().meta({ description: "`false` while disabled: nothing is attempted; events it subscribes to are logged `skipped`." }),
  disabledReason: z
    .enum(["manual", "failing", "gone"])
    .nullable()
    .meta({ description: "`manual` (PATCH `enabled: false`), `failing` (auto-disable) or `gone` (the receiver answered 410); `null` while enabled." }),
  disabledAt: instantOutSchema.nullable().meta({ description: "When it was disabled; `null` while enabled." }),
  createdAt: instantOutSchema,
  updatedAt: instantOutSchema.meta({ description: "The last change (PATCH, rotation, auto-disable); `createdAt` before any." }),
};

/** The example registration of the document. */
const WEBHOOK_EXAMPLE = {
  id: WEBHOOK_ID_EXAMPLE,
  url: "https://hooks.example.com/in",
  events: ["course.created", "course.archived"],
  description: "ERP sync",
  filter: { trainingId: ["trn_3"] },
  headerNames: ["x-api-key"],
  maxPerSecond: null,
  enabled: true,
  disabledReason: null,
  disabledAt: null,
  createdAt: "2026-08-20T09:12:44.120Z",
  updatedAt: "2026-08-20T09:12:44.120Z",
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
    status: z.enum(DELIVERY_STATUSES).meta({
      description:
        'The delivery\'s state right after this attempt: `pending` (a retry is due at `nextAttemptAt`), `succeeded`, `failed` (410 Gone or schedule exhausted), or `skipped` (never attempted: the registration was disabled; `attemptedAt` and `responseStatus` null, `error: "registration disabled"`).',
    }),
    trigger: z.enum(["event", "retry", "resend", "recover", "test"]).meta({
      description: "Why the attempt was made: `event` (the first after the event was accepted), `retry`, `resend`, `recover` or `test`.",
    }),
    url: z.string().nullable().meta({ description: "The URL this attempt was sent to; `null` when nothing was sent." }),
    responseStatus: z.int().nullable().meta({ description: "HTTP status of the answer; `null` for network errors, timeouts and attempts not made yet." }),
    error: z.string().nullable().meta({ description: "Why the attempt did not succeed (`HTTP 500`, `timed out after 15000 ms`, …); `null` on success." }),
    durationMs: z.int().min(0).nullable().meta({
      description: "Milliseconds from sending the request until its status line arrived, or until the timeout or the error; `null` when nothing was sent.",
    }),
    responseBody: z.string().nullable().meta({
      description: "The first 1,024 bytes of the answer's body, decoded as UTF-8 (invalid bytes replaced); `null` without an answer. The rest is not read.",
    }),
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
      trigger: "retry",
      url: "https://hooks.example.com/in",
      responseStatus: 503,
      error: "HTTP 503",
      durationMs: 182,
      responseBody: "Service Unavailable",
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

/** Answer of POST /v3/webhooks/{id}/secret/rotate. */
export const rotatedSecretSchema = z
  .strictObject({
    id: opaqueIdSchema,
    secret: createdWebhookSchema.shape.secret,
    previousSecretExpiresAt: instantOutSchema
      .nullable()
      .meta({ description: "Until then every attempt is also signed with the previous secret; `null` for `graceSeconds: 0`." }),
  })
  .meta({
    id: "RotatedSecret",
    example: { id: WEBHOOK_ID_EXAMPLE, secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw/Jb8Yq8Bn7A=", previousSecretExpiresAt: "2026-08-21T09:12:44.120Z" },
  });

/** 200 of PATCH /v3/webhooks/{id}. */
export const webhookResponseSchema = successEnvelope("WebhookResponse", webhookRecordSchema, "The registration after the change.");
/** 200 of POST /v3/webhooks/{id}/secret/rotate. */
export const rotatedSecretResponseSchema = successEnvelope("RotatedSecretResponse", rotatedSecretSchema, "The new secret (shown only here).");
/** 202 of POST /v3/webhooks/{id}/deliveries/{eventId}/resend. */
export const resendResponseSchema = successEnvelope(
  "ResendResponse",
  z.strictObject({ eventId: opaqueIdSchema }).meta({ id: "Resent" }),
  "The event is queued again, due now.",
);
/** 202 of POST /v3/webhooks/{id}/recover. */
export const recoverResponseSchema = successEnvelope(
  "RecoverResponse",
  z.strictObject({ queued: z.int().min(0).meta({ description: "Events queued again, in acceptance order." }) }).meta({ id: "Recovered" }),
  "The missed events are queued again.",
);

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
