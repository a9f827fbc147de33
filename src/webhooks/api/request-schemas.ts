/**
 * What the webhook operations accept, as zod schemas (docs/reference.md § "Webhook registrations"):
 * registration bodies with their `filter`, custom `headers` and `maxPerSecond` rules, the
 * path parameters, and the query of the delivery log. Unknown fields are refused.
 */
import { z } from "zod";
import { DELIVERED_EVENT_TYPES, EVENT_TYPES } from "../../events/types";
import { idSchema, instantSchema, queryIntegerSchema } from "../../lib/fields";
import { DEFAULT_GRACE_SECONDS, MAX_GRACE_SECONDS, MAX_PAGE, MAX_PAGE_SIZE } from "../../lib/limits";
import { PAYLOAD_FORMS } from "../delivery/payload";
import { SIGNATURE_SCHEMES } from "../delivery/signing";
import { DELIVERY_STATUSES, EVENT_ID_EXAMPLE, ORDERING_DESCRIPTION, ORDERINGS, WEBHOOK_ID_EXAMPLE } from "./schemas";

/** Longest accepted `description`, in characters. */
const MAX_DESCRIPTION_LENGTH = 500;

/** Most custom headers a registration may have. */
const MAX_CUSTOM_HEADERS = 10;
/** Longest custom header value, in characters. */
const MAX_HEADER_VALUE_LENGTH = 1000;
/** Most ids per filter dimension. */
const MAX_FILTER_IDS = 100;
/** An HTTP token (RFC 9110 § 5.6.2): what a header name may be. */
const HTTP_TOKEN_RE = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
/**
 * Header names a registration may not set (lower case; `*` ends a prefix): the delivery's own,
 * the platform's, and the hop-by-hop ones (RFC 9110 § 7.6.1: `connection`, `keep-alive`, `te`,
 * `trailer`, `transfer-encoding`, `upgrade`, `proxy-*`), which describe one connection rather
 * than the request and could change how the attempt is framed or relayed, and `expect`
 * (RFC 9110 § 10.1.1: `100-continue` makes the connection wait for the receiver before the body).
 */
const RESERVED_HEADER_NAMES = [
  "webhook-*",
  "content-type",
  "content-length",
  "host",
  "connection",
  "keep-alive",
  "te",
  "trailer",
  "transfer-encoding",
  "upgrade",
  "expect",
  "proxy-*",
  "user-agent",
  "cf-*",
  "x-forwarded-*",
  "forwarded",
] as const;

/** Why header `name` is refused, or `null` (docs/reference.md § "POST /v3/webhooks": `headers`). */
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

/** A registration's filter on the school's dimensions (docs/reference.md § "POST /v3/webhooks": `filter`). */
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
        "Where events are POSTed, at most 2,048 characters, stored normalized (WHATWG serialization). The policy (400 INVALID_WEBHOOK_URL with the reason otherwise): `https` only; no userinfo (`user:pass@`); the host is not an IP literal in a loopback, private, link-local, unique-local, CGNAT, unspecified, multicast, documentation or otherwise reserved range (IPv4 and IPv6, every spelling: `0x7f000001`, `127.1`, `[::ffff:127.0.0.1]`…), not a single-label name (`https://metadata/`), and not a special-use or internal name: `localhost` and `*.localhost`, `*.local`, `*.internal`, `*.home.arpa`, `*.lan`, `*.intranet`, `*.corp`, `*.onion`, `*.test`, `*.invalid`, `*.example` — in any case, with or without a trailing dot; the port, when given, is 443 or 8443. Host names are not resolved by the service: on Cloudflare, a Worker's outgoing requests reach a private network only through a Workers VPC binding over Cloudflare Tunnel, whatever a name resolves to (https://developers.cloudflare.com/workers-vpc/configuration/vpc-services/), and never an IP address directly (https://developers.cloudflare.com/workers/platform/known-issues/#fetch-to-ip-addresses); a deployment elsewhere must provide the same egress guarantee. On PATCH, a new `url` for a registration with custom headers must come with `headers` (the same values again, new ones, or `null`): header values are bound to the URL they were given for. A deployment with `WEBHOOK_ALLOW_INSECURE_URLS=true` (local development) lifts all of it but the scheme (`http` or `https`).",
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
    ordering: z
      .enum(ORDERINGS)
      .optional()
      .meta({ description: `${ORDERING_DESCRIPTION} Default \`course\`; on PATCH it applies to attempts started after the 200.`, example: "course" }),
    signatureScheme: z.enum(SIGNATURE_SCHEMES).optional().meta({
      description:
        "How deliveries are signed, for the registration's whole life: `v1` (default; HMAC-SHA256, the 201 shows the `secret`) or `v1a` (ed25519, Standard Webhooks: the 201 and `GET` show `publicKey`, the receiver holds nothing that can sign).",
      example: "v1a",
    }),
    payload: z.enum(PAYLOAD_FORMS).optional().meta({
      description:
        "`full` (default): each course event carries the course record. `thin`: `data.course` is `{ id, version }` only (and `professorId` for `course.professor_signed`), for the receiver to fetch `GET /v3/courses/{id}`; `webhook.*` events are sent whole.",
      example: "thin",
    }),
  })
  .meta({
    id: "WebhookCreate",
    description: "A new registration. Unknown fields, `__proto__`, `constructor` and `prototype` included at any depth, are a 400 UNKNOWN_PARAMETER.",
    example: { url: "https://hooks.example.com/in", events: ["course.created", "course.archived"], description: "ERP sync" },
  });

/** The optional body of POST /v3/webhooks/{id}/test: nothing, or an empty JSON object. */
export const emptyBodySchema = z.strictObject({}).meta({ description: "An empty object (the body may also be absent)." });

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
  page: queryIntegerSchema(1, MAX_PAGE, 1)
    .meta({ description: `Page number: an integer, minimum 1, maximum ${MAX_PAGE}, default 1.`, example: 1 })
    .optional(),
  limit: queryIntegerSchema(1, MAX_PAGE_SIZE, MAX_PAGE_SIZE)
    .meta({ description: `Items per page: an integer, minimum 1, maximum ${MAX_PAGE_SIZE}, default ${MAX_PAGE_SIZE}.`, example: 20 })
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

/** Why `signatureScheme` is refused on PATCH (400 VALIDATION_ERROR). */
const SCHEME_AT_CREATION = "is set at creation only: create a new registration to change it";

/**
 * The PATCH /v3/webhooks/{id} body: any of the fields (none: nothing changes); `null` clears
 * `description`, `filter`, `headers`, `maxPerSecond`. `signatureScheme`, whatever its value,
 * is 400 VALIDATION_ERROR: it is chosen at creation only.
 */
export const updateWebhookSchema = createWebhookSchema
  .partial()
  .extend({
    enabled: z.boolean({ error: "must be true or false" }).optional().meta({ description: "`false` disables, `true` enables." }),
    signatureScheme: z
      .unknown()
      .refine(() => false, { error: SCHEME_AT_CREATION })
      .optional()
      // Any value is refused (400 VALIDATION_ERROR, checked above): the document says so.
      .meta({ description: "Set at creation only: given here, whatever its value, it is a 400 VALIDATION_ERROR.", not: {} }),
  })
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
