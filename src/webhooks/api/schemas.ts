/**
 * Webhook registrations and deliveries as zod schemas (docs/reference.md § "Webhook registrations",
 * § "Event delivery"): the request schemas the operations validate with, the records they
 * answer (objects forbid undocumented fields), and the headers of a delivery. The document
 * is generated from them and the types of src/webhooks/rpc.ts are their `z.infer`s.
 */
import { z } from "zod";
import { DELIVERED_EVENT_TYPES, EVENT_TYPES } from "../../events/types";
import { listEnvelope, successEnvelope } from "../../http/envelopes";
import { instantOutSchema, mintedIdSchema, opaqueIdSchema } from "../../lib/fields";
import { MAX_WEBHOOKS, RECOVER_COUNT_CAP } from "../../lib/limits";
import { SCOPES } from "../../lib/scopes";
import { PAYLOAD_FORMS } from "../delivery/payload";
import { SIGNATURE_SCHEMES } from "../delivery/signing";

/** Example ids of the document. */
export const WEBHOOK_ID_EXAMPLE = "wh_01K4A8Z1M2N3P4Q5R6S7T8V9W0";
export const EVENT_ID_EXAMPLE = "evt_01K4A8Z1M2N3P4Q5R6S7T8V9W0";

/** The states of a delivery in the log (`skipped`: never attempted, the registration was disabled). */
export const DELIVERY_STATUSES = ["pending", "succeeded", "failed", "skipped"] as const;

/** A registration's `ordering` (docs/reference.md § "Event delivery", ordering): per course (the default), or none. */
export const ORDERINGS = ["course", "none"] as const;

/** What `ordering` means, for the record and the request bodies. */
export const ORDERING_DESCRIPTION =
  "`course` (the default): the events of one course (`data.course.id`) are delivered in the order the service accepted them — no attempt of an event starts while an earlier event of the same course has not ended (succeeded, failed with no retry to follow, or skipped); events of other courses and `webhook.*` events are never held by it; resend and recover follow the same rule. `none`: every event is delivered independently. Registrations created before the setting existed read `none`.";

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
  ordering: z.enum(ORDERINGS).meta({ description: ORDERING_DESCRIPTION, example: "course" }),
  signatureScheme: z.enum(SIGNATURE_SCHEMES).meta({
    description:
      "How deliveries are signed, chosen at creation: `v1` (HMAC-SHA256 with the registration's `whsec_` secret) or `v1a` (ed25519, Standard Webhooks: verify with `publicKey`; the private key is never shown).",
  }),
  publicKey: z
    .string()
    .regex(/^whpk_[A-Za-z0-9+/]{43}=$/)
    .nullable()
    .meta({
      description: "`v1a`: the public key deliveries verify with, `whpk_` + base64 of the 32-byte ed25519 key (a rotation replaces it). `null` for `v1`.",
      example: null,
    }),
  payload: z.enum(PAYLOAD_FORMS).meta({
    description:
      "What deliveries carry: `full` events, or `thin` ones: course events with `data.course` reduced to `{ id, version }` (and `professorId` for `course.professor_signed`), for the receiver to fetch `GET /v3/courses/{id}`; `webhook.*` events are sent whole.",
  }),
  scopes: z.array(z.enum(SCOPES)).meta({
    description:
      'The scopes of the API key that created the registration (directly or through a portal session it minted; docs/reference.md § Scopes), fixed at creation: its deliveries carry nothing that key could not read. Without `courses:read`, course events are delivered thin (as with `payload: "thin"`), whatever `payload` says. Registrations created before scopes existed hold every scope.',
    example: ["courses:read", "webhooks:read", "webhooks:write"],
  }),
  enabled: z.boolean().meta({ description: "`false` while disabled: nothing is attempted; events it subscribes to are logged `skipped`." }),
  disabledReason: z.enum(["manual", "failing", "gone", "receiver"]).nullable().meta({
    description:
      "`manual` (PATCH `enabled: false`), `failing` (auto-disable), `gone` (the receiver answered 410) or `receiver` (the receiver answered `webhook-delivery: disable`); `null` while enabled.",
  }),
  disabledAt: instantOutSchema.nullable().meta({ description: "When it was disabled; `null` while enabled." }),
  failingSince: instantOutSchema.nullable().meta({
    description:
      "While the registration is failing — its attempts failed 4 times in a row and no success followed (`webhook.failing` was sent) — the first failed attempt of that streak; `null` otherwise (`webhook.recovered` clears it). A re-enable does not: only a success ends the streak.",
  }),
  createdBy: z.string().nullable().meta({
    description:
      "The id of the API key (`key_…`) that created the registration, directly or through a portal session it minted: after a key leaks, find its registrations by it. `null` for registrations created before it was recorded.",
    example: "key_01K4A8Z1M2N3P4Q5R6S7T8V9W0",
  }),
  updatedBy: z.string().nullable().meta({
    description:
      "The id of the API key (`key_…`) behind the registration's last change by a request (the POST, a PATCH that changed something, a secret rotation), directly or through a portal session it minted; an auto-disable changes neither. After a key leaks, find what it created or re-pointed by it (an operator's `npm run keys -- revoke KEY_ID` lists them and, with `--disable-webhooks`, disables them: `manual`, `updatedBy` the operator's temporary key). `null` when unknown (changed before it was recorded).",
    example: "key_01K4A8Z1M2N3P4Q5R6S7T8V9W0",
  }),
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
  ordering: "course",
  signatureScheme: "v1",
  publicKey: null,
  payload: "full",
  scopes: ["courses:read", "courses:write", "students:read", "webhooks:read", "webhooks:write", "events:read", "portal"],
  enabled: true,
  disabledReason: null,
  disabledAt: null,
  failingSince: null,
  createdBy: "key_01K4A8Z1M2N3P4Q5R6S7T8V9W0",
  updatedBy: "key_01K4A8Z1M2N3P4Q5R6S7T8V9W0",
  createdAt: "2026-08-20T09:12:44.120Z",
  updatedAt: "2026-08-20T09:12:44.120Z",
};

/** A registration as listed (no secret). */
export const webhookRecordSchema = z.strictObject(webhookFields).meta({
  id: "Webhook",
  description: "A webhook registration (without its secret or private key).",
  example: WEBHOOK_EXAMPLE,
});

/** The `v1` signing secret (shown only when created or rotated). */
const secretSchema = z.string().regex(/^whsec_[A-Za-z0-9+/]{43}=$/);

/** A registration as POST /v3/webhooks answers it, with its secret (`v1`, shown only there). */
export const createdWebhookSchema = z
  .strictObject({
    ...webhookFields,
    secret: secretSchema.optional().meta({
      description: "`v1`: the signing secret, `whsec_` + base64 of 32 random bytes, shown only in this response. Absent for `v1a` (verify with `publicKey`).",
    }),
  })
  .meta({
    id: "CreatedWebhook",
    description: "A new webhook registration, with its signing secret (`v1`) or its public key (`v1a`).",
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
 * One entry of GET /v3/webhooks/{id}/deliveries: one attempt (`attemptedAt` set) with its own
 * outcome (`succeeded` or `failed`; a failed one that a retry follows has `nextAttemptAt`), a
 * skipped entry, or a delivery still waiting for its first attempt, listed once with
 * `status: "pending"`, `attemptedAt: null` and the `attempt` it will be logged with. `attempt`
 * numbers the event's entries 1..k (docs/reference.md § "Delivery log").
 */
export const deliveryRecordSchema = z
  .strictObject({
    eventId: opaqueIdSchema,
    eventType: z.enum(DELIVERED_EVENT_TYPES),
    attempt: z.int().min(1).meta({
      description:
        "The entry's number among its event's entries, in the order they were logged: 1 for the immediate attempt, 2 for the first retry, …; a resend or recover goes on from the event's last number, a skipped entry takes one too.",
    }),
    status: z.enum(DELIVERY_STATUSES).meta({
      description:
        'This entry\'s own outcome: `succeeded` (a 2xx answer), `failed` (any other answer, a network error or a timeout; when a retry follows, `nextAttemptAt` says when, else the delivery ended: 410 Gone, schedule exhausted, or the URL refused), `pending` (a delivery not attempted yet; `attemptedAt` null) or `skipped` (never attempted: the registration was disabled, `error: "registration disabled"`, or its course had 1,000 events held behind a failing one, `error: "course backlog full"`; `attemptedAt` and `responseStatus` null). The statistics count entries with the same words.',
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
      description:
        "The first 1,024 bytes of the answer's body, decoded as UTF-8 (invalid bytes replaced); `null` without an answer, and for a credential without `courses:read` (an answer may echo the course it was sent). The rest is not read.",
    }),
    attemptedAt: instantOutSchema.nullable().meta({ description: "When the attempt started; `null` for a delivery still waiting for its first attempt." }),
    nextAttemptAt: instantOutSchema.nullable().meta({
      description:
        "When the delivery's next attempt is due: set on a failed attempt that a retry follows (a resend or recover that makes it due sooner replaces it with when it did) and on a delivery not attempted yet; `null` when none is (it succeeded, or ended failed or skipped), and on a delivery not attempted yet that waits for an earlier event of its course (`ordering: course`): it is due the moment that event's delivery ends.",
    }),
  })
  .meta({
    id: "Delivery",
    description: "One delivery attempt (or a delivery waiting for its first attempt).",
    example: {
      eventId: EVENT_ID_EXAMPLE,
      eventType: "course.updated",
      attempt: 2,
      status: "failed",
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
    secret: secretSchema.optional().meta({ description: "`v1`: the new signing secret (shown only here). Absent for `v1a`." }),
    publicKey: webhookFields.publicKey.unwrap().optional().meta({
      description: "`v1a`: the new public key (`whpk_…`), which `GET /v3/webhooks/{id}` shows from now on. Absent for `v1`.",
    }),
    previousSecretExpiresAt: instantOutSchema
      .nullable()
      .meta({ description: "Until then every attempt is also signed with the previous secret (`v1a`: private key); `null` for `graceSeconds: 0`." }),
  })
  .meta({
    id: "RotatedSecret",
    example: { id: WEBHOOK_ID_EXAMPLE, secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw/Jb8Yq8Bn7A=", previousSecretExpiresAt: "2026-08-21T09:12:44.120Z" },
  });

/** 200 of PATCH /v3/webhooks/{id}. */
export const webhookResponseSchema = successEnvelope("WebhookResponse", webhookRecordSchema, "The registration after the change.");
/** 200 of POST /v3/webhooks/{id}/secret/rotate. */
export const rotatedSecretResponseSchema = successEnvelope(
  "RotatedSecretResponse",
  rotatedSecretSchema,
  "The new secret (shown only here), or the new public key of a `v1a` registration.",
);
/** 202 of POST /v3/webhooks/{id}/deliveries/{eventId}/resend. */
export const resendResponseSchema = successEnvelope(
  "ResendResponse",
  z.strictObject({ eventId: opaqueIdSchema }).meta({ id: "Resent" }),
  "The event is queued again, due now.",
);
/** 202 of POST /v3/webhooks/{id}/recover. */
export const recoverResponseSchema = successEnvelope(
  "RecoverResponse",
  z
    .strictObject({
      queued: z
        .int()
        .min(0)
        .meta({
          description: `What this recover queues again, counted when it is answered: events of the window whose delivery ended \`failed\` or \`skipped\` and deliveries of the window waiting for a retry (made due now), at most ${RECOVER_COUNT_CAP.toLocaleString("en-US")} (\`exact: false\` beyond). They are queued in acceptance order from the answer on, as the registration's queue makes room.`,
        }),
      exact: z.boolean().meta({
        description: `\`true\`: \`queued\` counts all of them; \`false\`: more than ${RECOVER_COUNT_CAP.toLocaleString("en-US")} (every one is queued all the same).`,
      }),
    })
    .meta({ id: "Recovered" }),
  "The recover is under way: its first events are queued, the rest follow as the queue makes room.",
);

// ---------------------------------------------------------------------------------------
// Delivery.

/** The Standard Webhooks headers of every delivery (docs/reference.md § "Event delivery"). */
export const deliveryHeadersSchema = z.strictObject({
  "webhook-id": z.string().meta({ description: "The event id (`evt_…`), the same on every retry: deduplicate on it.", example: EVENT_ID_EXAMPLE }),
  "webhook-timestamp": z.string().regex(/^\d+$/).meta({ description: "Unix seconds of this attempt.", example: "1788768010" }),
  "webhook-signature": z.string().meta({
    description:
      "Over `{webhook-id}.{webhook-timestamp}.{body}`: `v1,` + base64 HMAC-SHA256, keyed with the base64-decoded part of the registration's secret (after `whsec_`), or for a `v1a` registration `v1a,` + base64 ed25519 signature, verified with its `publicKey` (the 32 bytes after `whpk_`). During a rotation's grace, two space-separated signatures (the new key's first). Verify `v1` with any Standard Webhooks library.",
    example: "v1,K5oZfzN95Z9UVu1EsfQmfVNQhnkZ2pj9o9NDN/H/pI4=",
  }),
});
