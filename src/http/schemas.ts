/**
 * The response shapes of the API, as zod schemas, in one place (API.md § "Conventions",
 * § "Course record", § "Webhook registrations", § "Event delivery"):
 *
 * - they generate the OpenAPI document's response and webhook schemas
 *   (src/openapi/document.ts), whose objects forbid undocumented fields
 *   (`additionalProperties: false`, from `z.strictObject`);
 * - the TypeScript types the code writes are derived from them (`z.infer`): `CourseRecord`
 *   (src/courses/record.ts), `ErrorBody` / `ErrorCode` / `ErrorDetail` (src/http/errors.ts),
 *   `Pagination` (src/http/respond.ts). The webhook shapes of src/webhooks/types.ts are
 *   checked against these schemas at compile time (see the end of this file), so code and
 *   document cannot drift.
 *
 * Schemas carry documentation with zod's `.meta()` (`id` names a component of the document;
 * `description`, `example` and other OpenAPI keywords are copied as they are).
 *
 * This module imports only zod and constants, so any module may import it.
 */
import { z } from "zod";
import { EVENT_TYPES, type SchoolEvent } from "../events/types";
import { ID_RE } from "../lib/ids";
import type { CreatedWebhook, DeliveryRecord, WebhookRecord } from "../webhooks/types";

// ---------------------------------------------------------------------------------------
// Values.

/** Pattern of the instants the API writes: ISO 8601 UTC with milliseconds. */
export const INSTANT_OUT_RE = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

/** An id (API.md § "Conventions"): 1–64 characters `[A-Za-z0-9_-]`. */
export const idSchema = z.string().regex(ID_RE).meta({ description: "An opaque id: 1–64 characters `[A-Za-z0-9_-]`." });

/** A minted id with its type prefix (`crs_`, `wh_`, `evt_`) and a time-sortable random part. */
const mintedId = (prefix: "crs" | "wh" | "evt", example: string) =>
  z
    .string()
    .regex(new RegExp(`^${prefix}_[A-Za-z0-9_-]{1,60}$`))
    .meta({ description: `An id minted by the service: \`${prefix}_\` followed by a time-sortable random part.`, example });

/** An instant as the API writes it: `2026-09-07T08:00:00.000Z`. */
export const instantSchema = z
  .string()
  .regex(INSTANT_OUT_RE)
  .meta({ format: "date-time", description: "ISO 8601 instant, UTC, with milliseconds.", example: "2026-09-07T08:00:00.000Z" });

// ---------------------------------------------------------------------------------------
// Course record (API.md § "Course record").

/** A student embedded by `includeStudents=true`. */
export const studentRefSchema = z
  .strictObject({
    id: idSchema,
    firstName: z.string(),
    lastName: z.string(),
    email: z.string().meta({ format: "email" }),
  })
  .meta({
    id: "Student",
    description: "A student enrolled in the course.",
    example: { id: "stu_1", firstName: "Léa", lastName: "Martin", email: "lea.martin@example.org" },
  });

/** A teacher embedded by `includeTeachers=true`. */
export const teacherRefSchema = z
  .strictObject({
    id: idSchema,
    firstName: z.string(),
    lastName: z.string(),
    email: z.string().meta({ format: "email" }),
    coTeacher: z.boolean().meta({ description: "Assigned as co-teacher." }),
    signed: z.boolean().meta({ description: "Has signed the course's attendance sheet." }),
  })
  .meta({
    id: "Teacher",
    description: "A professor assigned to the course.",
    example: { id: "prf_4", firstName: "Karim", lastName: "Benali", email: "k.benali@example.org", coTeacher: false, signed: true },
  });

/** `{ id, name }` of a survey template or training. */
export const namedRefSchema = z
  .strictObject({ id: idSchema, name: z.string() })
  .meta({ id: "NamedRef", description: "A survey template or a training: `{ id, name }`.", example: { id: "trn_3", name: "BTS SIO" } });

/** Example course record (API.md § "Course record"). */
export const COURSE_EXAMPLE = {
  id: "crs_01K4A8Z1M2N3P4Q5R6S7T8V9W0",
  name: "Algèbre linéaire",
  startDateTime: "2026-09-07T08:00:00.000Z",
  endDateTime: "2026-09-07T10:00:00.000Z",
  classroom: "B204",
  creatorId: "usr_12",
  trainingId: "trn_3",
  groupIds: ["grp_1", "grp_7"],
  professorIds: ["prf_4", "prf_9"],
  archived: false,
  absencesSent: false,
  createdAt: "2026-08-20T09:12:44.120Z",
  updatedAt: "2026-08-21T16:02:10.004Z",
} as const;

/**
 * The course record. `classroom`, `creatorId`, `trainingId` are `null` when absent;
 * `groupIds` and `professorIds` are sorted ascending (`[]` when empty). The include flags
 * add `students`, `teachers`, `surveyTemplates` (sorted by lastName, firstName, id / name,
 * id; names folded) and `training`.
 */
export const courseRecordSchema = z
  .strictObject({
    id: idSchema.meta({ description: "The course id (`crs_…` when minted by the service).", example: COURSE_EXAMPLE.id }),
    name: z.string().min(1).max(200),
    startDateTime: instantSchema,
    endDateTime: instantSchema.meta({ description: "ISO 8601 instant, UTC, with milliseconds; after `startDateTime`." }),
    classroom: z.string().nullable().meta({ description: "Classroom name, `null` when absent." }),
    creatorId: idSchema.nullable().meta({ description: "Id of the course's creator, `null` when absent." }),
    trainingId: idSchema.nullable().meta({ description: "Id of the course's training, `null` when absent." }),
    groupIds: z.array(idSchema).meta({ description: "Ids of the attached groups, sorted ascending." }),
    professorIds: z.array(idSchema).meta({ description: "Ids of the assigned professors (co-teachers included), sorted ascending." }),
    archived: z.boolean(),
    absencesSent: z.boolean(),
    createdAt: instantSchema,
    updatedAt: instantSchema,
    students: z.array(studentRefSchema).optional().meta({ description: "With `includeStudents=true`: enrolled students, by lastName, firstName, id." }),
    teachers: z.array(teacherRefSchema).optional().meta({ description: "With `includeTeachers=true`: assigned professors, by lastName, firstName, id." }),
    surveyTemplates: z.array(namedRefSchema).optional().meta({ description: "With `includeSurveyTemplates=true`: survey templates, by name, id." }),
    // A union with null, not `.nullable()`: zod-to-openapi drops the null of a nullable `$ref`.
    training: z.union([namedRefSchema, z.null()]).optional().meta({ description: "With `includeTraining=true`: the training, or `null`." }),
  })
  .meta({ id: "Course", description: "A course of the school (API.md § Course record).", example: COURSE_EXAMPLE });

/** A course record (`z.infer` of `courseRecordSchema`). */
export type CourseRecord = z.infer<typeof courseRecordSchema>;
/** A student embedded by `includeStudents`. */
export type StudentRef = z.infer<typeof studentRefSchema>;
/** A teacher embedded by `includeTeachers`. */
export type TeacherRef = z.infer<typeof teacherRefSchema>;
/** `{ id, name }` of a survey template or training. */
export type NamedRef = z.infer<typeof namedRefSchema>;

// ---------------------------------------------------------------------------------------
// Envelopes (API.md § "Conventions").

/** `pagination` of list responses: the page asked for, its size, and whether a next page exists. */
export const paginationSchema = z
  .strictObject({
    page: z.int().min(1).meta({ description: "The page returned, from 1." }),
    limit: z.int().min(1).max(100).meta({ description: "Items per page." }),
    hasMore: z.boolean().meta({ description: "Whether a next page exists." }),
  })
  .meta({ id: "Pagination", example: { page: 1, limit: 100, hasMore: false } });

/** `pagination` of list responses. */
export type Pagination = z.infer<typeof paginationSchema>;

/** The success envelope `{ status: "success", result }`, named `id` in the document. */
export function successEnvelope<T extends z.ZodType>(id: string, result: T, description: string) {
  return z.strictObject({ status: z.literal("success"), result }).meta({ id, description });
}

/** The list envelope `{ status: "success", result: [...], pagination }`, named `id` in the document. */
export function listEnvelope<T extends z.ZodType>(id: string, item: T, description: string) {
  return z.strictObject({ status: z.literal("success"), result: z.array(item), pagination: paginationSchema }).meta({ id, description });
}

// ---------------------------------------------------------------------------------------
// Errors (API.md § "Error codes").

/** Every error code of the contract. */
export const ERROR_CODES = [
  "INVALID_PARAMETER",
  "UNKNOWN_PARAMETER",
  "TOO_MANY_IDS",
  "INVALID_JSON",
  "VALIDATION_ERROR",
  "INVALID_DATE_RANGE",
  "STUDENTS_NOT_FOUND",
  "GROUPS_NOT_FOUND",
  "PROFESSORS_NOT_FOUND",
  "TRAINING_NOT_FOUND",
  "SURVEY_TEMPLATES_NOT_FOUND",
  "INVALID_WEBHOOK_URL",
  "UNAUTHORIZED",
  "NOT_FOUND",
  "COURSE_NOT_FOUND",
  "WEBHOOK_NOT_FOUND",
  "EVENT_NOT_FOUND",
  "METHOD_NOT_ALLOWED",
  "WEBHOOK_LIMIT_REACHED",
  "WEBHOOK_DISABLED",
  "PAYLOAD_TOO_LARGE",
  "UNSUPPORTED_MEDIA_TYPE",
  "INTERNAL_ERROR",
] as const;

/** An error code of the contract. */
export type ErrorCode = (typeof ERROR_CODES)[number];

/** One problem of a request: a query `parameter` or a JSON `path` in the body. */
export const errorDetailSchema = z
  .union([
    z.strictObject({
      parameter: z.string().meta({ description: "The query parameter at fault." }),
      message: z.string(),
    }),
    z.strictObject({
      path: z.string().meta({ description: "JSON path of the body value at fault (`name`, `professors[0].professorId`, `$` for the whole body)." }),
      message: z.string(),
    }),
  ])
  .meta({ id: "ErrorDetail", description: "One problem: a query `parameter` or a body `path`, and what is wrong with it." });

/** One problem of a request. */
export type ErrorDetail = z.infer<typeof errorDetailSchema>;

/**
 * The error envelope restricted to `codes`: `{ status: "error", code, message, details?, requestId }`.
 * `id` names it in the document.
 */
export function errorEnvelope<const C extends readonly [ErrorCode, ...ErrorCode[]]>(codes: C, meta: { id?: string; description?: string } = {}) {
  return z
    .strictObject({
      status: z.literal("error"),
      code: z.enum(codes).meta({ description: "What went wrong, as a stable UPPER_SNAKE code (API.md § Error codes)." }),
      message: z.string().meta({ description: "A human sentence that says what to do; never a stack or SQL." }),
      details: z.array(errorDetailSchema).min(1).optional().meta({ description: "Every problem found (omitted when there is none to list)." }),
      requestId: z.string().meta({ description: "The `x-request-id` of the response; quote it when reporting a problem." }),
    })
    .meta(meta);
}

/** The error envelope with any code of the contract. */
export const errorBodySchema = errorEnvelope(ERROR_CODES, { id: "Error", description: "The error envelope (API.md § Conventions)." });

/** The JSON body of an error response. */
export type ErrorBody = z.infer<typeof errorBodySchema>;

// ---------------------------------------------------------------------------------------
// Webhooks (API.md § "Webhook registrations").

/** What a registration subscribes to: `["*"]` (every event type) or a list of event types. */
export const subscriptionSchema = z
  .union([z.tuple([z.literal("*")]).meta({ minItems: 1, maxItems: 1 }), z.array(z.enum(EVENT_TYPES)).min(1)])
  .meta({
    description: '`["*"]` for every event type (the default), or the list of event types the registration receives.',
    example: ["course.created", "course.archived"],
  });

const webhookFields = {
  id: mintedId("wh", "wh_01K4A8Z1M2N3P4Q5R6S7T8V9W0").meta({ description: "The registration id (`wh_…`), never reused." }),
  url: z.string().meta({ format: "uri", description: "The normalized target URL (WHATWG serialization).", example: "https://hooks.example.com/in" }),
  events: subscriptionSchema,
  description: z.string().nullable().meta({ description: "Free text, `null` when absent.", example: "ERP sync" }),
  enabled: z.boolean().meta({ description: "`false` while disabled: nothing is attempted; events it subscribes to are logged `skipped`." }),
  disabledReason: z.enum(["manual", "failing"]).nullable().meta({ description: "`manual` (PATCH `enabled: false`) or `failing` (auto-disable); `null` while enabled." }),
  disabledAt: instantSchema.nullable().meta({ description: "When it was disabled; `null` while enabled." }),
  createdAt: instantSchema,
  updatedAt: instantSchema.meta({ description: "The last change (PATCH, rotation, auto-disable); `createdAt` before any." }),
};
const RECORD_STATE = { enabled: true, disabledReason: null, disabledAt: null, createdAt: "2026-08-20T09:12:44.120Z", updatedAt: "2026-08-20T09:12:44.120Z" };

/** A registration as listed (no secret). */
export const webhookRecordSchema = z.strictObject(webhookFields).meta({
  id: "Webhook",
  description: "A webhook registration (without its secret).",
  example: { id: "wh_01K4A8Z1M2N3P4Q5R6S7T8V9W0", url: "https://hooks.example.com/in", events: ["course.created", "course.archived"], description: "ERP sync", ...RECORD_STATE },
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
    example: {
      id: "wh_01K4A8Z1M2N3P4Q5R6S7T8V9W0",
      url: "https://hooks.example.com/in",
      events: ["course.created", "course.archived"],
      description: "ERP sync",
      ...RECORD_STATE,
      secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw/Jb8Yq8Bn7A=",
    },
  });

/** Answer of DELETE /v3/webhooks/{id}. */
export const deletedWebhookSchema = z
  .strictObject({ id: idSchema, deleted: z.literal(true) })
  .meta({ id: "DeletedWebhook", example: { id: "wh_01K4A8Z1M2N3P4Q5R6S7T8V9W0", deleted: true } });

/** Answer of POST /v3/webhooks/{id}/test. */
export const webhookTestSchema = z
  .strictObject({
    eventId: mintedId("evt", "evt_01K4A8Z1M2N3P4Q5R6S7T8V9W0").meta({ description: "Id of the `webhook.test` event; its attempts appear under this id in the deliveries." }),
    webhookId: idSchema,
    type: z.literal("webhook.test"),
  })
  .meta({ id: "WebhookTest", example: { eventId: "evt_01K4A8Z1M2N3P4Q5R6S7T8V9W0", webhookId: "wh_01K4A8Z1M2N3P4Q5R6S7T8V9W0", type: "webhook.test" } });

/** Every event type a delivery may carry. */
export const DELIVERED_EVENT_TYPES = [...EVENT_TYPES, "webhook.test"] as const;

/** One entry of GET /v3/webhooks/{id}/deliveries (see `DeliveryRecord` in src/webhooks/types.ts). */
export const deliveryRecordSchema = z
  .strictObject({
    eventId: idSchema,
    eventType: z.enum(DELIVERED_EVENT_TYPES),
    attempt: z.int().min(1).meta({ description: "1 for the immediate attempt, 2 for the first retry, …" }),
    status: z.enum(["pending", "succeeded", "failed", "skipped"]).meta({
      description:
        "The delivery's state right after this attempt: `pending` (a retry is due at `nextAttemptAt`), `succeeded`, `failed` (410 Gone or schedule exhausted), or `skipped` (never attempted: the registration was disabled; `attemptedAt` and `responseStatus` null, `error: \"registration disabled\"`).",
    }),
    responseStatus: z.int().nullable().meta({ description: "HTTP status of the answer; `null` for network errors, timeouts and attempts not made yet." }),
    error: z.string().nullable().meta({ description: "Why the attempt did not succeed (`HTTP 500`, `timed out after 15000 ms`, …); `null` on success." }),
    attemptedAt: instantSchema.nullable().meta({ description: "When the attempt started; `null` for a delivery still waiting for its first attempt." }),
    nextAttemptAt: instantSchema.nullable().meta({ description: "When the next attempt is due; `null` when none is." }),
  })
  .meta({
    id: "Delivery",
    description: "One delivery attempt (or a delivery waiting for its first attempt).",
    example: {
      eventId: "evt_01K4A8Z1M2N3P4Q5R6S7T8V9W0",
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
// Events (API.md § "Event delivery"): the bodies POSTed to webhook endpoints.

const eventBase = {
  id: mintedId("evt", "evt_01K4A8Z1M2N3P4Q5R6S7T8V9W0").meta({ description: "The event id, also sent as `webhook-id` (the same on every retry): deduplicate on it." }),
  createdAt: instantSchema.meta({ description: "When the event happened (ISO 8601 UTC with milliseconds)." }),
  schoolId: idSchema.meta({ description: "The school whose data changed.", example: "sch_1" }),
};

const EVENT_DESCRIPTIONS: Record<(typeof DELIVERED_EVENT_TYPES)[number], string> = {
  "course.created": "A course was created (POST /v3/courses). `data.course` is the new course.",
  "course.updated": "A PATCH changed a course. `data.course` is the course after the change.",
  "course.archived": "A course went from active to archived.",
  "course.unarchived": "A course went from archived to active.",
  "course.absences_sent": "A course's `absencesSent` went from false to true.",
  "course.professor_signed": "A professor's `signed` went from false to true (one event per professor); `data.professorId` names them.",
  "webhook.disabled":
    "The hub disabled a registration after WEBHOOK_DISABLE_AFTER_HOURS of nothing but failures; sent to the school's other registrations that subscribe to it. `data.failingSince` is its first failed attempt after its last success.",
  "webhook.test": "Sent by POST /v3/webhooks/{id}/test to that registration only; `data.webhookId` names it.",
};

/** The body of a delivered event of `type` (a course event, or `webhook.test`). */
export function eventSchema(type: (typeof DELIVERED_EVENT_TYPES)[number]) {
  const data =
    type === "webhook.test"
      ? z.strictObject({ webhookId: idSchema })
      : type === "webhook.disabled"
        ? z.strictObject({ webhookId: idSchema, reason: z.literal("failing"), failingSince: instantSchema })
      : type === "course.professor_signed"
        ? z.strictObject({ course: courseRecordSchema, professorId: idSchema.meta({ description: "The professor who signed.", example: "prf_4" }) })
        : z.strictObject({ course: courseRecordSchema });
  const name = type.replace(/(^|[._])(\w)/g, (_m, _s, c: string) => c.toUpperCase());
  const exampleData =
    type === "webhook.test"
      ? { webhookId: "wh_01K4A8Z1M2N3P4Q5R6S7T8V9W0" }
      : type === "webhook.disabled"
        ? { webhookId: "wh_01K4A8Z1M2N3P4Q5R6S7T8V9W0", reason: "failing", failingSince: "2026-08-16T16:02:10.004Z" }
        : type === "course.professor_signed"
        ? { course: COURSE_EXAMPLE, professorId: "prf_4" }
        : { course: COURSE_EXAMPLE };
  return z.strictObject({ ...eventBase, type: z.literal(type), data }).meta({
    id: `${name}Event`,
    description: EVENT_DESCRIPTIONS[type],
    example: { id: "evt_01K4A8Z1M2N3P4Q5R6S7T8V9W0", type, createdAt: "2026-08-21T16:02:10.004Z", schoolId: "sch_1", data: exampleData },
  });
}

/** Every event body, by type. */
export const eventSchemas = Object.fromEntries(DELIVERED_EVENT_TYPES.map((t) => [t, eventSchema(t)])) as {
  [T in (typeof DELIVERED_EVENT_TYPES)[number]]: ReturnType<typeof eventSchema>;
};

// ---------------------------------------------------------------------------------------
// The success bodies of the operations (envelopes around the records above).

/** 200 of GET /v3/courses and POST /v3/courses:search. */
export const courseListResponseSchema = listEnvelope("CourseList", courseRecordSchema, "One page of courses, ordered as asked.");
/** 200 of GET and PATCH /v3/courses/{id}, 201 of POST /v3/courses. */
export const courseResponseSchema = successEnvelope("CourseResponse", courseRecordSchema, "One course.");
/** 201 of POST /v3/webhooks. */
export const createdWebhookResponseSchema = successEnvelope("CreatedWebhookResponse", createdWebhookSchema, "The new registration, with its secret.");
/** 200 of GET /v3/webhooks. */
export const webhookListResponseSchema = listEnvelope("WebhookList", webhookRecordSchema, "Every registration of the school, oldest first (one page: at most 50).");
/** 200 of DELETE /v3/webhooks/{id}. */
export const deletedWebhookResponseSchema = successEnvelope("DeletedWebhookResponse", deletedWebhookSchema, "The registration is deleted.");
/** 200 of GET /v3/webhooks/{id}/deliveries. */
export const deliveryListResponseSchema = listEnvelope("DeliveryList", deliveryRecordSchema, "Delivery attempts of the last 7 days, newest first.");
/** 202 of POST /v3/webhooks/{id}/test. */
export const webhookTestResponseSchema = successEnvelope("WebhookTestResponse", webhookTestSchema, "The test event is queued.");

/** 200 of PATCH /v3/webhooks/{id}. */
export const webhookResponseSchema = successEnvelope("WebhookResponse", webhookRecordSchema, "The registration after the change.");
/** 200 of POST /v3/webhooks/{id}/secret/rotate. */
export const rotatedSecretResponseSchema = successEnvelope(
  "RotatedSecretResponse",
  z
    .strictObject({
      id: idSchema,
      secret: createdWebhookSchema.shape.secret,
      previousSecretExpiresAt: instantSchema.nullable().meta({ description: "Until then every attempt is also signed with the previous secret; `null` for `graceSeconds: 0`." }),
    })
    .meta({ id: "RotatedSecret" }),
  "The new secret (shown only here).",
);
/** 202 of POST /v3/webhooks/{id}/deliveries/{eventId}/resend. */
export const resendResponseSchema = successEnvelope("ResendResponse", z.strictObject({ eventId: idSchema }).meta({ id: "Resent" }), "The event is queued again, due now.");
/** 202 of POST /v3/webhooks/{id}/recover. */
export const recoverResponseSchema = successEnvelope(
  "RecoverResponse",
  z.strictObject({ queued: z.int().min(0).meta({ description: "Events queued again, in acceptance order." }) }).meta({ id: "Recovered" }),
  "The missed events are queued again.",
);
/** 200 of GET /v3/event-types. */
export const eventTypesResponseSchema = successEnvelope(
  "EventTypesResponse",
  z
    .array(z.strictObject({ type: z.enum(DELIVERED_EVENT_TYPES), description: z.string(), schema: z.record(z.string(), z.unknown()).meta({ description: "The JSON Schema of the event body." }) }))
    .meta({ id: "EventTypes" }),
  "The event catalog.",
);

// ---------------------------------------------------------------------------------------
// Compile-time checks: the shapes the code writes are those the document describes.

type Equals<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;
type Assignable<A, B> = [A] extends [B] ? true : false;
const checks: [
  Equals<z.infer<typeof webhookRecordSchema>, WebhookRecord>,
  Equals<z.infer<typeof createdWebhookSchema>, CreatedWebhook>,
  // DeliveryRecord types eventType as string; the document narrows it to the event types.
  Assignable<z.infer<typeof deliveryRecordSchema>, DeliveryRecord>,
  Equals<Omit<DeliveryRecord, "eventType">, Omit<z.infer<typeof deliveryRecordSchema>, "eventType">>,
  // Every documented event body is a SchoolEvent.
  Assignable<z.infer<ReturnType<typeof eventSchema>>, SchoolEvent>,
] = [true, true, true, true, true];
void checks;
