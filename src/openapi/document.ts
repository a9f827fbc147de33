/**
 * The OpenAPI 3.1 document of the API, generated from the zod schemas the handlers use
 * (@asteasolutions/zod-to-openapi): request schemas from src/courses/filters.ts,
 * src/courses/writes.ts and src/webhooks/routes.ts; response and event schemas from
 * src/http/schemas.ts. Nothing here restates a rule those schemas enforce: this module adds
 * the operations (method, path, statuses, examples, prose) and the conventions of API.md.
 *
 * Request schemas are documented by their INPUT shape (what a client sends): a query
 * parameter such as `limit` is a string of digits with its range and default in its
 * description, booleans are the strings `true|false|1|0`, instants are `date-time` strings
 * with a zone. zod-to-openapi reads a `.transform()` / `.pipe()` by its input side.
 *
 * Served by GET /openapi.json (src/openapi/routes.ts); the tests validate every response
 * of the suite against it (test/openapi-check.ts).
 */
import { OpenApiGeneratorV31, OpenAPIRegistry, type ResponseConfig, type RouteConfig } from "@asteasolutions/zod-to-openapi";
import { z } from "zod";
import { includeQuerySchema, listQuerySchema, searchBodySchema, GET_MAX_IDS, SEARCH_MAX_IDS } from "../courses/filters";
import { createCourseSchema, patchCourseSchema } from "../courses/writes";
import { EVENT_TYPES } from "../events/types";
import { MAX_BODY_BYTES } from "../http/body";
import {
  COURSE_EXAMPLE,
  courseListResponseSchema,
  courseResponseSchema,
  createdWebhookResponseSchema,
  createdWebhookSchema,
  DELIVERED_EVENT_TYPES,
  deletedWebhookResponseSchema,
  eventTypesResponseSchema,
  recoverResponseSchema,
  resendResponseSchema,
  rotatedSecretResponseSchema,
  webhookResponseSchema,
  deliveryListResponseSchema,
  deliveryRecordSchema,
  ERROR_CODES,
  errorEnvelope,
  eventSchemas,
  webhookListResponseSchema,
  webhookRecordSchema,
  webhookTestResponseSchema,
  type ErrorCode,
} from "../http/schemas";
import { recoverSchema, rotateSchema, updateWebhookSchema } from "../webhooks/lifecycle-routes";
import { createWebhookSchema, deliveriesQuerySchema, MAX_DESCRIPTION_LENGTH } from "../webhooks/routes";
import { MAX_WEBHOOKS } from "../webhooks/types";

/** The `info.version` of the document. */
export const API_VERSION = "3.0.0";

/** The name of the bearer security scheme (`components.securitySchemes`). */
export const SECURITY_SCHEME = "bearerAuth";

/**
 * Root extension of the document: the responses of a request that matches no operation
 * (404 NOT_FOUND for an unknown path, 405 METHOD_NOT_ALLOWED with `allow` for a known path
 * and another method). OpenAPI has no place for them; the test helper reads them here.
 */
export const FALLBACK_RESPONSES_KEY = "x-fallback-responses";

/** When each error code is answered (API.md § "Error codes"), for the document's prose. */
const ERROR_WHEN: Record<ErrorCode, string> = {
  INVALID_PARAMETER: "a query parameter is malformed, out of range or repeated (`details` names each)",
  UNKNOWN_PARAMETER: "a query parameter or body field the operation does not define, a body key `__proto__`, `constructor` or `prototype` at any depth included (the message lists the accepted names and a close match)",
  TOO_MANY_IDS: `a GET id list has more than ${GET_MAX_IDS} ids (use POST /v3/courses:search, up to ${SEARCH_MAX_IDS})`,
  INVALID_JSON: "the body is not JSON (UTF-8)",
  VALIDATION_ERROR: "the body is JSON but breaks the schema, holds a string with an unpaired surrogate or a list of more than 10,000 items (`details` with JSON paths, at most 100)",
  INVALID_DATE_RANGE: "a course whose end is not after its start",
  STUDENTS_NOT_FOUND: "the write references students that do not exist in the school (`details` lists them)",
  GROUPS_NOT_FOUND: "the write references groups that do not exist in the school (`details` lists them)",
  PROFESSORS_NOT_FOUND: "the write references professors that do not exist in the school (`details` lists them)",
  TRAINING_NOT_FOUND: "the write references a training that does not exist in the school",
  SURVEY_TEMPLATES_NOT_FOUND: "the write references survey templates that do not exist in the school (`details` lists them)",
  INVALID_WEBHOOK_URL: "the URL is not https, carries credentials, or targets a private, loopback, link-local or reserved address, a single-label host or a special-use or internal name",
  UNAUTHORIZED: "no valid API key (missing, malformed, unknown or revoked)",
  NOT_FOUND: "no such route",
  COURSE_NOT_FOUND: "the course id does not exist in the school",
  WEBHOOK_NOT_FOUND: "the registration does not exist or no longer exists in the school (a second delete of the same id included)",
  METHOD_NOT_ALLOWED: "known path, other method (`allow` lists the methods)",
  WEBHOOK_LIMIT_REACHED: `the school already has ${MAX_WEBHOOKS} registrations`,
  EVENT_NOT_FOUND: "the event is not retained (7 days) or was never addressed to this registration",
  WEBHOOK_DISABLED: "test, resend or recover on a disabled registration",
  PAYLOAD_TOO_LARGE: `the body is over ${MAX_BODY_BYTES} bytes (1 MiB)`,
  UNSUPPORTED_MEDIA_TYPE: "a body that is not `application/json`",
  INTERNAL_ERROR: "a bug; the message never carries a stack or SQL",
};

/** The HTTP status of each error code. */
const ERROR_STATUS: Record<ErrorCode, number> = {
  INVALID_PARAMETER: 400,
  UNKNOWN_PARAMETER: 400,
  TOO_MANY_IDS: 400,
  INVALID_JSON: 400,
  VALIDATION_ERROR: 400,
  INVALID_DATE_RANGE: 400,
  STUDENTS_NOT_FOUND: 400,
  GROUPS_NOT_FOUND: 400,
  PROFESSORS_NOT_FOUND: 400,
  TRAINING_NOT_FOUND: 400,
  SURVEY_TEMPLATES_NOT_FOUND: 400,
  INVALID_WEBHOOK_URL: 400,
  UNAUTHORIZED: 401,
  NOT_FOUND: 404,
  COURSE_NOT_FOUND: 404,
  WEBHOOK_NOT_FOUND: 404,
  METHOD_NOT_ALLOWED: 405,
  WEBHOOK_LIMIT_REACHED: 409,
  EVENT_NOT_FOUND: 404,
  WEBHOOK_DISABLED: 409,
  PAYLOAD_TOO_LARGE: 413,
  UNSUPPORTED_MEDIA_TYPE: 415,
  INTERNAL_ERROR: 500,
};

const ERROR_MESSAGE_EXAMPLES: Partial<Record<ErrorCode, { message: string; details?: unknown[] }>> = {
  INVALID_PARAMETER: { message: "Invalid query parameter: limit must be an integer from 1 to 100.", details: [{ parameter: "limit", message: "must be an integer from 1 to 100" }] },
  UNKNOWN_PARAMETER: { message: 'Unknown query parameter "limt" (did you mean "limit"?). Accepted: …', details: [{ parameter: "limt", message: 'unknown; did you mean "limit"?' }] },
  VALIDATION_ERROR: { message: "The body breaks the schema: name must not be empty.", details: [{ path: "name", message: "must not be empty" }] },
  INVALID_DATE_RANGE: { message: "endDateTime must be after startDateTime.", details: [{ path: "endDateTime", message: "must be after startDateTime" }] },
  INVALID_WEBHOOK_URL: { message: "The webhook URL is not accepted: the URL must use https.", details: [{ path: "url", message: "the URL must use https" }] },
  UNAUTHORIZED: { message: "A valid API key is required: send `Authorization: Bearer sk_…`." },
  COURSE_NOT_FOUND: { message: 'No course with id "crs_404" exists in this school.' },
  WEBHOOK_NOT_FOUND: { message: 'No webhook registration with id "wh_404" exists in this school.' },
  WEBHOOK_LIMIT_REACHED: { message: `This school already has ${MAX_WEBHOOKS} webhook registrations; delete one (DELETE /v3/webhooks/{id}) before creating another.` },
  PAYLOAD_TOO_LARGE: { message: `The body is larger than ${MAX_BODY_BYTES} bytes (1 MiB).` },
  UNSUPPORTED_MEDIA_TYPE: { message: "Send the body as JSON with `content-type: application/json`." },
  INTERNAL_ERROR: { message: "An unexpected error occurred. Quote request id req_01K4A8Z1M2N3P4Q5R6S7T8V9W0 when reporting it." },
};

/** An example error body for `code`. */
function errorExample(code: ErrorCode) {
  const known = ERROR_MESSAGE_EXAMPLES[code];
  return {
    status: "error",
    code,
    message: known?.message ?? `${ERROR_WHEN[code][0]!.toUpperCase()}${ERROR_WHEN[code].slice(1)}.`,
    ...(known?.details ? { details: known.details } : {}),
    requestId: "req_01K4A8Z1M2N3P4Q5R6S7T8V9W0",
  };
}

// ---------------------------------------------------------------------------------------
// Headers.

const REQUEST_ID_PATTERN = "^[A-Za-z0-9_.:-]{1,128}$";

/** Headers on every response (API.md § "Conventions"), as `components.headers`. */
const COMMON_HEADERS = {
  RequestId: {
    description:
      "The request id: the request's own `x-request-id` when it is 1–128 characters `[A-Za-z0-9_.:-]`, else one minted by the service (`req_…`). Error bodies repeat it as `requestId`.",
    required: true,
    schema: { type: "string", pattern: REQUEST_ID_PATTERN },
    example: "req_01K4A8Z1M2N3P4Q5R6S7T8V9W0",
  },
  ServerTiming: {
    description: 'Time spent: `db;dur=<ms waiting on D1>;desc="D1 round trips: <n>", total;dur=<ms in the Worker>` (milliseconds, one decimal).',
    required: true,
    schema: { type: "string", pattern: "^db;dur=\\d+(\\.\\d+)?(;[^,]*)?, total;dur=\\d+(\\.\\d+)?$" },
    example: 'db;dur=3.2;desc="D1 round trips: 1", total;dur=4.8',
  },
} as const;

const headerRefs = {
  "x-request-id": { $ref: "#/components/headers/RequestId" },
  "Server-Timing": { $ref: "#/components/headers/ServerTiming" },
};

const locationHeader = (example: string) => ({
  location: { description: "Path of the new resource.", required: true, schema: { type: "string" }, example },
});

// ---------------------------------------------------------------------------------------
// Responses.

/** A success response: the envelope schema, an example and the common headers. */
function ok(description: string, schema: z.ZodType, example: unknown, extraHeaders: Record<string, unknown> = {}): ResponseConfig {
  return {
    description,
    headers: { ...headerRefs, ...extraHeaders } as ResponseConfig["headers"],
    content: { "application/json": { schema, example } },
  };
}

/** Error envelopes shared by many operations, named in `components.schemas`. */
const sharedErrors = {
  401: errorEnvelope(["UNAUTHORIZED"], { id: "UnauthorizedError", description: "401: no valid API key." }),
  413: errorEnvelope(["PAYLOAD_TOO_LARGE"], { id: "PayloadTooLargeError", description: "413: the body is over 1 MiB." }),
  415: errorEnvelope(["UNSUPPORTED_MEDIA_TYPE"], { id: "UnsupportedMediaTypeError", description: "415: the body is not `application/json`." }),
  500: errorEnvelope(["INTERNAL_ERROR"], { id: "InternalError", description: "500: a bug; quote the request id." }),
};

/**
 * An error response whose `code` is one of `codes` (all of one status). The description
 * says when each code is answered; the example shows the first one.
 */
function fail(codes: readonly [ErrorCode, ...ErrorCode[]], lead?: string): ResponseConfig {
  const status = ERROR_STATUS[codes[0]];
  for (const c of codes) if (ERROR_STATUS[c] !== status) throw new Error(`${c} is not a ${status}`);
  const shared = sharedErrors[status as keyof typeof sharedErrors];
  const schema = shared && codes.length === 1 && shared.shape.code.options[0] === codes[0] ? shared : errorEnvelope(codes);
  const lines = codes.map((c) => `- \`${c}\`: ${ERROR_WHEN[c]}.`).join("\n");
  return {
    description: `${lead ? `${lead}\n\n` : ""}${lines}`,
    headers: headerRefs as ResponseConfig["headers"],
    content: { "application/json": { schema, example: errorExample(codes[0]) } },
  };
}

const unauthorized = () => fail(["UNAUTHORIZED"]);
const internal = () => fail(["INTERNAL_ERROR"]);
/** 413 and 415 of every operation that reads a JSON body. */
const bodyErrors = () => ({ 413: fail(["PAYLOAD_TOO_LARGE"]), 415: fail(["UNSUPPORTED_MEDIA_TYPE"]) });

// ---------------------------------------------------------------------------------------
// Request pieces.

const courseIdParams = z.strictObject({
  id: z.string().meta({
    description: "The course id. An id that is not a course of the school — malformed, unknown or another school's — answers 404 COURSE_NOT_FOUND.",
    example: COURSE_EXAMPLE.id,
  }),
});

const webhookIdParams = z.strictObject({
  id: z.string().meta({
    description: "The registration id (`wh_…`). Unknown, deleted, malformed or another school's: 404 WEBHOOK_NOT_FOUND.",
    example: "wh_01K4A8Z1M2N3P4Q5R6S7T8V9W0",
  }),
});

/** POST /v3/webhooks body: the handler's schema, with documentation on its fields. */
const webhookCreateBody = createWebhookSchema
  .extend({
    url: createWebhookSchema.shape.url.meta({
      format: "uri",
      description:
        "Where events are POSTed, at most 2,048 characters, stored normalized (WHATWG serialization). The policy (400 INVALID_WEBHOOK_URL with the reason otherwise): `https` only; no userinfo (`user:pass@`); the host is not an IP literal in a loopback, private, link-local, unique-local, CGNAT, unspecified, multicast, documentation or otherwise reserved range (IPv4 and IPv6, every spelling: `0x7f000001`, `127.1`, `[::ffff:127.0.0.1]`…), not a single-label name (`https://metadata/`), and not a special-use or internal name: `localhost` and `*.localhost`, `*.local`, `*.internal`, `*.home.arpa`, `*.lan`, `*.intranet`, `*.corp`, `*.onion`, `*.test`, `*.invalid`, `*.example` — in any case, with or without a trailing dot. Names are not resolved. A deployment with `WEBHOOK_ALLOW_INSECURE_URLS=true` (local development) lifts all of it but the scheme (`http` or `https`).",
      example: "https://hooks.example.com/in",
    }),
    events: createWebhookSchema.shape.events.meta({
      description: `Event types to receive: \`["*"]\` (default) for every type, or a list of ${EVENT_TYPES.map((t) => `\`${t}\``).join(", ")}. \`"*"\` must be alone; an unknown type is 400 VALIDATION_ERROR; duplicates are dropped.`,
      example: ["course.created", "course.archived"],
    }),
    description: createWebhookSchema.shape.description.meta({
      description: `Free text, up to ${MAX_DESCRIPTION_LENGTH} characters.`,
      example: "ERP sync",
    }),
  })
  .meta({
    id: "WebhookCreate",
    description: "A new registration. Unknown fields, `__proto__`, `constructor` and `prototype` included at any depth, are a 400 UNKNOWN_PARAMETER.",
    example: { url: "https://hooks.example.com/in", events: ["course.created", "course.archived"], description: "ERP sync" },
  });

/**
 * GET /v3/webhooks/{id}/deliveries query: the handler's schema, with documentation. The
 * defaults are read from the schema; the maxima (1000000, 100) live in its refinements, so
 * test/openapi.test.ts checks them by request.
 */
const deliveriesDefault = (name: "page" | "limit") => String((deliveriesQuerySchema.shape[name]._zod.def as { defaultValue: unknown }).defaultValue);
const deliveriesQuery = deliveriesQuerySchema.extend({
  page: deliveriesQuerySchema.shape.page.meta({
    description: `Page number: a string-encoded integer (decimal digits), minimum 1, maximum 1000000, default ${deliveriesDefault("page")}.`,
    default: deliveriesDefault("page"),
    example: "1",
  }),
  limit: deliveriesQuerySchema.shape.limit.meta({
    description: `Items per page: a string-encoded integer (decimal digits), minimum 1, maximum 100, default ${deliveriesDefault("limit")}.`,
    default: deliveriesDefault("limit"),
    example: "20",
  }),
});

/** The optional body of POST /v3/webhooks/{id}/test: nothing, or an empty JSON object. */
const emptyBody = z.strictObject({}).meta({ description: "An empty object (the body may also be absent)." });

const jsonBody = (schema: z.ZodType, example: unknown, description: string, required = true) => ({
  description,
  required,
  content: { "application/json": { schema, example } },
});

// ---------------------------------------------------------------------------------------
// Examples.

const WEBHOOK_EXAMPLE = webhookRecordSchema.meta()!.example;
const CREATED_WEBHOOK_EXAMPLE = createdWebhookSchema.meta()!.example;
const DELIVERY_EXAMPLE = deliveryRecordSchema.meta()!.example;
const COURSE_WITH_INCLUDES = {
  ...COURSE_EXAMPLE,
  teachers: [
    { id: "prf_4", firstName: "Karim", lastName: "Benali", email: "k.benali@example.org", coTeacher: false, signed: true },
    { id: "prf_9", firstName: "Claire", lastName: "Moreau", email: "c.moreau@example.org", coTeacher: true, signed: false },
  ],
  training: { id: "trn_3", name: "BTS SIO" },
};

// ---------------------------------------------------------------------------------------
// Operations.

/**
 * One operation of the document. `path` is written as in src/http/routes.ts (`:id`); the
 * document writes it `{id}`.
 */
export interface OperationDef extends Omit<RouteConfig, "path" | "method"> {
  method: "get" | "post" | "patch" | "delete";
  path: string;
}

const COURSES = "Courses";
const WEBHOOKS = "Webhooks";
const REFERENCE = "Reference";


/** The 400 codes of a course write (POST and PATCH), in the order the first missing kind is told. */
const WRITE_400_CODES: [ErrorCode, ...ErrorCode[]] = [
  "VALIDATION_ERROR",
  "UNKNOWN_PARAMETER",
  "INVALID_JSON",
  "INVALID_DATE_RANGE",
  "STUDENTS_NOT_FOUND",
  "GROUPS_NOT_FOUND",
  "PROFESSORS_NOT_FOUND",
  "TRAINING_NOT_FOUND",
  "SURVEY_TEMPLATES_NOT_FOUND",
];

/** Every operation of the API (API.md), plus the two reference routes. */
export const OPERATIONS: OperationDef[] = [
  {
    method: "get",
    path: "/v3/courses",
    operationId: "listCourses",
    tags: [COURSES],
    summary: "List the school's courses",
    description:
      "Archived and active courses alike, filtered, one page at a time. Order: `startDateTime` ascending, then `id` ascending. Every filter combines with AND. Unknown parameters are a 400 UNKNOWN_PARAMETER; a parameter given twice is a 400 INVALID_PARAMETER, except id lists, whose repetitions are joined.",
    request: { query: listQuerySchema },
    responses: {
      200: ok("One page of courses.", courseListResponseSchema, { status: "success", result: [COURSE_WITH_INCLUDES], pagination: { page: 1, limit: 20, hasMore: true } }),
      400: fail(["INVALID_PARAMETER", "UNKNOWN_PARAMETER", "TOO_MANY_IDS"]),
      401: unauthorized(),
      500: internal(),
    },
  },
  {
    method: "post",
    path: "/v3/courses:search",
    operationId: "searchCourses",
    tags: [COURSES],
    summary: "Search courses (long id lists, sorting)",
    description:
      "The same listing as GET /v3/courses, with the parameters in a JSON body: id lists as arrays of up to 10,000 ids, `courseId` to restrict to given courses, and `sort`. A filter behaves exactly as its GET twin. The query string must be empty (400 UNKNOWN_PARAMETER).",
    request: { body: jsonBody(searchBodySchema, searchBodySchema.meta()!.example, "Filters, page and sort; every field optional.") },
    responses: {
      200: ok("One page of courses.", courseListResponseSchema, { status: "success", result: [COURSE_EXAMPLE], pagination: { page: 1, limit: 10, hasMore: false } }),
      400: fail(["VALIDATION_ERROR", "UNKNOWN_PARAMETER", "INVALID_JSON"]),
      401: unauthorized(),
      ...bodyErrors(),
      500: internal(),
    },
  },
  {
    method: "post",
    path: "/v3/courses",
    operationId: "createCourse",
    tags: [COURSES],
    summary: "Create a course",
    description:
      "Creates a course and publishes `course.created` (and `course.professor_signed` for each professor sent already signed). Referenced ids must exist in the school. Answers once the events are durably queued.",
    request: { body: jsonBody(createCourseSchema, createCourseSchema.meta()!.example, "The new course.") },
    responses: {
      201: ok("The course is created.", courseResponseSchema, { status: "success", result: { ...COURSE_EXAMPLE, createdAt: COURSE_EXAMPLE.updatedAt } }, locationHeader(`/v3/courses/${COURSE_EXAMPLE.id}`)),
      400: fail(WRITE_400_CODES, "With several kinds of unknown references, the code is that of the first kind in this list's order and `details` lists every missing id."),
      401: unauthorized(),
      ...bodyErrors(),
      500: internal(),
    },
  },
  {
    method: "get",
    path: "/v3/courses/:id",
    operationId: "getCourse",
    tags: [COURSES],
    summary: "Get one course",
    description: "One course of the school, with the include flags of the list (the only query parameters accepted).",
    request: { params: courseIdParams, query: includeQuerySchema },
    responses: {
      200: ok("The course.", courseResponseSchema, { status: "success", result: COURSE_WITH_INCLUDES }),
      400: fail(["INVALID_PARAMETER", "UNKNOWN_PARAMETER"]),
      401: unauthorized(),
      404: fail(["COURSE_NOT_FOUND"]),
      500: internal(),
    },
  },
  {
    method: "patch",
    path: "/v3/courses/:id",
    operationId: "updateCourse",
    tags: [COURSES],
    summary: "Change a course",
    description:
      "Changes only the fields sent; a list sent replaces the whole list; `null` clears `classroom`, `creatorId`, `trainingId`. Publishes, in this order and only for what changed: `course.updated`, then `course.archived` / `course.unarchived`, `course.absences_sent` (false → true), one `course.professor_signed` per professor whose `signed` went false → true. A PATCH that changes nothing publishes nothing and leaves `updatedAt` unchanged.",
    request: { params: courseIdParams, body: jsonBody(patchCourseSchema, patchCourseSchema.meta()!.example, "The fields to change.") },
    responses: {
      200: ok("The course after the change.", courseResponseSchema, { status: "success", result: { ...COURSE_EXAMPLE, archived: true } }),
      400: fail(WRITE_400_CODES, "`INVALID_DATE_RANGE` also when only one end moves past the other."),
      401: unauthorized(),
      404: fail(["COURSE_NOT_FOUND"]),
      ...bodyErrors(),
      500: internal(),
    },
  },
  {
    method: "post",
    path: "/v3/webhooks",
    operationId: "createWebhook",
    tags: [WEBHOOKS],
    summary: "Register a webhook",
    description:
      "The registration receives the school's events of the chosen types from now until it is deleted (see `webhooks` for the payloads and the Standard Webhooks signature). The `secret` is shown only in this response.",
    request: { body: jsonBody(webhookCreateBody, webhookCreateBody.meta()!.example, "The registration.") },
    responses: {
      201: ok("The registration, with its secret.", createdWebhookResponseSchema, { status: "success", result: CREATED_WEBHOOK_EXAMPLE }, locationHeader("/v3/webhooks/wh_01K4A8Z1M2N3P4Q5R6S7T8V9W0")),
      400: fail(["VALIDATION_ERROR", "UNKNOWN_PARAMETER", "INVALID_JSON", "INVALID_WEBHOOK_URL"]),
      401: unauthorized(),
      409: fail(["WEBHOOK_LIMIT_REACHED"]),
      ...bodyErrors(),
      500: internal(),
    },
  },
  {
    method: "get",
    path: "/v3/webhooks",
    operationId: "listWebhooks",
    tags: [WEBHOOKS],
    summary: "List webhook registrations",
    description: `The school's registrations, oldest first, without secrets. One page holds them all (at most ${MAX_WEBHOOKS}): \`pagination\` is \`{ page: 1, limit: ${MAX_WEBHOOKS}, hasMore: false }\`. No query parameter is defined.`,
    responses: {
      200: ok("Every registration.", webhookListResponseSchema, { status: "success", result: [WEBHOOK_EXAMPLE], pagination: { page: 1, limit: MAX_WEBHOOKS, hasMore: false } }),
      400: fail(["UNKNOWN_PARAMETER"]),
      401: unauthorized(),
      500: internal(),
    },
  },
  {
    method: "delete",
    path: "/v3/webhooks/:id",
    operationId: "deleteWebhook",
    tags: [WEBHOOKS],
    summary: "Delete a webhook registration (beta)",
    description:
      "Removes the registration permanently. Once the 200 is sent: no event accepted after the delete is ever delivered to it; pending retries for it are dropped and no new attempt starts; the deletion survives restarts; the id is never reused. A second delete of the same id is a 404.",
    request: { params: webhookIdParams },
    responses: {
      200: ok("The registration is deleted.", deletedWebhookResponseSchema, { status: "success", result: { id: "wh_01K4A8Z1M2N3P4Q5R6S7T8V9W0", deleted: true } }),
      400: fail(["UNKNOWN_PARAMETER"]),
      401: unauthorized(),
      404: fail(["WEBHOOK_NOT_FOUND"]),
      500: internal(),
    },
  },
  {
    method: "get",
    path: "/v3/webhooks/:id/deliveries",
    operationId: "listWebhookDeliveries",
    tags: [WEBHOOKS],
    summary: "List delivery attempts",
    description:
      "Delivery attempts of the last 7 days, newest first. A delivery still waiting for its first attempt is listed once with `attempt: 1`, `status: \"pending\"`, `attemptedAt: null` and its due time in `nextAttemptAt`.",
    request: { params: webhookIdParams, query: deliveriesQuery },
    responses: {
      200: ok("One page of attempts.", deliveryListResponseSchema, { status: "success", result: [DELIVERY_EXAMPLE], pagination: { page: 1, limit: 20, hasMore: false } }),
      400: fail(["INVALID_PARAMETER", "UNKNOWN_PARAMETER"]),
      401: unauthorized(),
      404: fail(["WEBHOOK_NOT_FOUND"]),
      500: internal(),
    },
  },
  {
    method: "post",
    path: "/v3/webhooks/:id/test",
    operationId: "testWebhook",
    tags: [WEBHOOKS],
    summary: "Send a test event",
    description:
      "Queues a `webhook.test` event for this registration only (a disabled one: 409 WEBHOOK_DISABLED) and answers at once; the signed POST follows (retried like any delivery) and its outcome appears in the deliveries under `eventId`.",
    request: { params: webhookIdParams, body: jsonBody(emptyBody, {}, "Absent, or an empty JSON object.", false) },
    responses: {
      202: ok("The test event is queued.", webhookTestResponseSchema, { status: "success", result: { eventId: "evt_01K4A8Z1M2N3P4Q5R6S7T8V9W0", webhookId: "wh_01K4A8Z1M2N3P4Q5R6S7T8V9W0", type: "webhook.test" } }),
      400: fail(["VALIDATION_ERROR", "UNKNOWN_PARAMETER", "INVALID_JSON"]),
      401: unauthorized(),
      404: fail(["WEBHOOK_NOT_FOUND"]),
      409: fail(["WEBHOOK_DISABLED"]),
      ...bodyErrors(),
      500: internal(),
    },
  },
  {
    method: "patch",
    path: "/v3/webhooks/:id",
    operationId: "updateWebhook",
    tags: [WEBHOOKS],
    summary: "Change, disable or enable a webhook registration",
    description:
      "Any of `url` (the URL policy applies), `events`, `description` (`null` clears), `enabled`; the id, the secret and the delivery log are kept. `url`: queued deliveries and pending retries go to the new URL from their next attempt; an attempt already in flight finishes and is logged. `events`: deliveries already queued stay; later events follow the new subscription. `enabled: false`: from the 200 on no attempt to it starts; its queued deliveries and pending retries end `skipped`, and so does each event accepted meanwhile that it subscribes to (`disabledReason: \"manual\"`). `enabled: true`: events accepted from then on are delivered again; skipped ones only by resend or recover.",
    request: { params: webhookIdParams, body: jsonBody(updateWebhookSchema, { enabled: false }, "The fields to change (at least one).") },
    responses: {
      200: ok("The registration after the change.", webhookResponseSchema, { status: "success", result: WEBHOOK_EXAMPLE }),
      400: fail(["VALIDATION_ERROR", "UNKNOWN_PARAMETER", "INVALID_JSON", "INVALID_WEBHOOK_URL"]),
      401: unauthorized(),
      404: fail(["WEBHOOK_NOT_FOUND"]),
      ...bodyErrors(),
      500: internal(),
    },
  },
  {
    method: "post",
    path: "/v3/webhooks/:id/secret/rotate",
    operationId: "rotateWebhookSecret",
    tags: [WEBHOOKS],
    summary: "Rotate the signing secret",
    description:
      "A new secret (shown only here). Until `previousSecretExpiresAt` every attempt carries two space-separated signatures, `v1,<new> v1,<previous>` (Standard Webhooks), so a receiver can switch at its own pace. A second rotation within the grace keeps only the newest previous secret; `graceSeconds: 0` drops the previous secret at once.",
    request: { params: webhookIdParams, body: jsonBody(rotateSchema, { graceSeconds: 86400 }, "Absent, or `{ graceSeconds }`.", false) },
    responses: {
      200: ok("The new secret.", rotatedSecretResponseSchema, {
        status: "success",
        result: { id: "wh_01K4A8Z1M2N3P4Q5R6S7T8V9W0", secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw/Jb8Yq8Bn7A=", previousSecretExpiresAt: "2026-08-21T09:12:44.120Z" },
      }),
      400: fail(["VALIDATION_ERROR", "UNKNOWN_PARAMETER", "INVALID_JSON"]),
      401: unauthorized(),
      404: fail(["WEBHOOK_NOT_FOUND"]),
      ...bodyErrors(),
      500: internal(),
    },
  },
  {
    method: "post",
    path: "/v3/webhooks/:id/deliveries/:eventId/resend",
    operationId: "resendWebhookDelivery",
    tags: [WEBHOOKS],
    summary: "Resend one event",
    description:
      "Queues the event again for this registration, due now, whatever its last status (same `webhook-id`: receivers deduplicate). A delivery of it already queued becomes due now instead (no second copy).",
    request: {
      params: webhookIdParams.extend({ eventId: z.string().meta({ description: "The event id (`evt_…`), retained (7 days) and addressed to this registration.", example: "evt_01K4A8Z1M2N3P4Q5R6S7T8V9W0" }) }),
      body: jsonBody(emptyBody, {}, "Absent, or an empty JSON object.", false),
    },
    responses: {
      202: ok("The event is queued again.", resendResponseSchema, { status: "success", result: { eventId: "evt_01K4A8Z1M2N3P4Q5R6S7T8V9W0" } }),
      400: fail(["VALIDATION_ERROR", "UNKNOWN_PARAMETER", "INVALID_JSON"]),
      401: unauthorized(),
      404: fail(["WEBHOOK_NOT_FOUND", "EVENT_NOT_FOUND"]),
      409: fail(["WEBHOOK_DISABLED"]),
      ...bodyErrors(),
      500: internal(),
    },
  },
  {
    method: "post",
    path: "/v3/webhooks/:id/recover",
    operationId: "recoverWebhookDeliveries",
    tags: [WEBHOOKS],
    summary: "Recover missed events after an outage",
    description:
      "Queues again, in acceptance order, every retained event accepted in `[since, until)` whose delivery to this registration ended `failed` or `skipped` (not those succeeded or still pending), each once per call. `since` older than the 7-day retention, or after `until`: 400 INVALID_PARAMETER.",
    request: { params: webhookIdParams, body: jsonBody(recoverSchema, { since: "2026-09-07T08:00:00Z" }, "The window of acceptance.") },
    responses: {
      202: ok("The events are queued again.", recoverResponseSchema, { status: "success", result: { queued: 12 } }),
      400: fail(["INVALID_PARAMETER", "VALIDATION_ERROR", "UNKNOWN_PARAMETER", "INVALID_JSON"]),
      401: unauthorized(),
      404: fail(["WEBHOOK_NOT_FOUND"]),
      409: fail(["WEBHOOK_DISABLED"]),
      ...bodyErrors(),
      500: internal(),
    },
  },
  {
    method: "get",
    path: "/v3/event-types",
    operationId: "listEventTypes",
    tags: [WEBHOOKS],
    summary: "The event catalog",
    description: "Every event type with its description and the JSON Schema of its body (the same as this document's `webhooks`). No authentication.",
    security: [],
    responses: {
      200: ok("The catalog.", eventTypesResponseSchema, { status: "success", result: [{ type: "webhook.test", description: "A test event.", schema: { type: "object" } }] }),
      400: fail(["UNKNOWN_PARAMETER"]),
      500: internal(),
    },
  },
  {
    method: "get",
    path: "/openapi.json",
    operationId: "getOpenApiDocument",
    tags: [REFERENCE],
    summary: "This OpenAPI document",
    description: "The OpenAPI 3.1 document, generated from the zod schemas the service validates with. No authentication. `servers` names the origin the document was fetched from.",
    security: [],
    responses: {
      200: {
        description: "The document.",
        headers: headerRefs as ResponseConfig["headers"],
        content: { "application/json": { schema: { type: "object", description: "An OpenAPI 3.1 document." }, example: { openapi: "3.1.0", info: { title: "School courses & webhooks API", version: API_VERSION } } } },
      },
      500: internal(),
    },
  },
  {
    method: "get",
    path: "/docs",
    operationId: "getApiReference",
    tags: [REFERENCE],
    summary: "Interactive API reference",
    description: "An HTML page (Scalar API Reference, served by this Worker) that renders this document and sends requests to this server. No authentication.",
    security: [],
    responses: {
      200: {
        description: "The page.",
        headers: headerRefs as ResponseConfig["headers"],
        content: { "text/html": { schema: { type: "string" }, example: "<!doctype html>…" } },
      },
      500: internal(),
    },
  },
];

/** The OpenAPI form of a route-table path: `/v3/courses/:id` → `/v3/courses/{id}`. */
export function openApiPath(routePath: string): string {
  return routePath.replace(/\/:([A-Za-z_]\w*)/g, "/{$1}");
}

// ---------------------------------------------------------------------------------------
// Webhooks (event payloads).

const webhookHeaders = z.strictObject({
  "webhook-id": z.string().meta({ description: "The event id (`evt_…`), the same on every retry: deduplicate on it.", example: "evt_01K4A8Z1M2N3P4Q5R6S7T8V9W0" }),
  "webhook-timestamp": z.string().regex(/^\d+$/).meta({ description: "Unix seconds of this attempt.", example: "1788768010" }),
  "webhook-signature": z.string().meta({
    description:
      "`v1,` + base64 HMAC-SHA256, keyed with the base64-decoded part of the registration's secret (after `whsec_`), over `{webhook-id}.{webhook-timestamp}.{body}`. During a secret rotation's grace, two space-separated signatures: `v1,<new> v1,<previous>`. Verify it with any Standard Webhooks library.",
    example: "v1,K5oZfzN95Z9UVu1EsfQmfVNQhnkZ2pj9o9NDN/H/pI4=",
  }),
});

const EVENT_SUMMARIES: Record<(typeof DELIVERED_EVENT_TYPES)[number], string> = {
  "course.created": "A course was created",
  "course.updated": "A course was changed",
  "course.archived": "A course was archived",
  "course.unarchived": "A course was restored",
  "course.absences_sent": "A course's absences were sent",
  "course.professor_signed": "A professor signed a course",
  "webhook.disabled": "Another registration was disabled for failing",
  "webhook.test": "A test event",
};

function registerEventWebhooks(registry: OpenAPIRegistry): void {
  for (const type of DELIVERED_EVENT_TYPES) {
    const schema = eventSchemas[type];
    registry.registerWebhook({
      method: "post",
      path: type,
      operationId: `on${schema.meta()!.id as string}`,
      tags: ["Events"],
      summary: EVENT_SUMMARIES[type],
      description: `${schema.meta()!.description as string}\n\nPOSTed to each registration subscribed to \`${type}\`${type === "webhook.test" ? " (only the one tested)" : " (or to `*`)"}, with \`content-type: application/json\` and the Standard Webhooks headers. Delivery is at least once.`,
      security: [],
      request: {
        headers: webhookHeaders,
        body: { required: true, content: { "application/json": { schema, example: schema.meta()!.example } } },
      },
      responses: {
        "2XX": { description: "Any 2xx within the timeout (`WEBHOOK_TIMEOUT_MS`, default 15 s, counted from the moment the request is sent): delivered." },
        410: { description: "Gone: stops the retries of this delivery (it becomes `failed`)." },
        429: { description: "Too Many Requests: retried on the schedule, and no earlier than its `Retry-After` (seconds or an HTTP date; at most 24 h), shown in the delivery's `nextAttemptAt`." },
        503: { description: "Service Unavailable: retried like a 429, honouring `Retry-After`." },
        default: {
          description:
            "Anything else (or no answer within the timeout) is retried on the schedule (`WEBHOOK_RETRY_SCHEDULE`, default after 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h); then the delivery is `failed`.",
        },
      },
    });
  }
}

// ---------------------------------------------------------------------------------------
// The document.

/**
 * The `examples` of an optional parameter: the example value, marked `x-disabled` (a Scalar
 * extension) so that "Test Request" in /docs leaves the parameter out until the user ticks it
 * — otherwise every optional filter would be sent with its example value.
 */
function exampleOff(value: unknown) {
  return { example: { summary: "Example", value, "x-disabled": true } };
}

const DESCRIPTION = `The school's courses and webhooks, at the edge. This document is generated from the zod schemas the service validates with (@asteasolutions/zod-to-openapi); the test suite checks every response against it.

## Conventions

- **Authentication**: \`Authorization: Bearer <api key>\`. Keys start with \`sk_\` (\`sk_live_…\` for operators, \`sk_test_…\` in demo data). A key belongs to exactly one school; every read and write is scoped to it, and a resource of another school is indistinguishable from a missing one. Missing, malformed, unknown or revoked key: \`401 UNAUTHORIZED\` (checked before any 400).
- **Success envelope**: \`{ "status": "success", "result": … }\`; lists add \`"pagination": { "page", "limit", "hasMore" }\`.
- **Error envelope**, with a real HTTP status: \`{ "status": "error", "code", "message", "details"?, "requestId" }\`; \`details\` lists every problem found, each \`{ "parameter" | "path", "message" }\`.
- **Headers**: every response carries \`x-request-id\` and \`Server-Timing\` (\`db;dur=<ms in D1>\`, \`total;dur=<ms>\`). Send your own \`x-request-id\` (1–128 characters \`[A-Za-z0-9_.:-]\`) to have it echoed.
- **Instants** are written as ISO 8601 UTC with milliseconds (\`2026-09-07T08:00:00.000Z\`). Instants read from clients must carry a zone (\`Z\` or \`±hh:mm\`); in a query string a \`+\` that arrived as a space before \`hh:mm\` is read as \`+\`.
- **Query strings** carry strings: booleans are \`true\`, \`false\`, \`1\` or \`0\`; integers are decimal digits; id lists are comma-separated. Anything else is a 400.
- **Ids** are opaque strings of 1–64 characters \`[A-Za-z0-9_-]\`; minted ids carry a type prefix (\`crs_\`, \`wh_\`, \`evt_\`) and a time-sortable part.
- **Unknown** query parameters and body fields are rejected: \`400 UNKNOWN_PARAMETER\`, naming the accepted ones (and a close match).
- A path that matches no operation answers \`404 NOT_FOUND\`; a known path with another method answers \`405 METHOD_NOT_ALLOWED\` with an \`allow\` header (both described under \`${FALLBACK_RESPONSES_KEY}\` at the root of this document).

## Error codes

| status | code | when |
|---|---|---|
${ERROR_CODES.map((c) => `| ${ERROR_STATUS[c]} | \`${c}\` | ${ERROR_WHEN[c].replace(/\|/g, "\\|")} |`).join("\n")}
`;

/** Builds the document (pure: a new object on each call). Prefer `openApiDocument()`. */
export function buildOpenApiDocument(): Record<string, any> {
  const registry = new OpenAPIRegistry();
  registry.registerComponent("securitySchemes", SECURITY_SCHEME, {
    type: "http",
    scheme: "bearer",
    bearerFormat: "sk_…",
    description: "An API key of the school: `Authorization: Bearer sk_…` (with `npm start`, the demo key `sk_test_demo_…` printed at start-up).",
  });
  for (const [name, header] of Object.entries(COMMON_HEADERS)) registry.registerComponent("headers", name, header as never);
  registry.registerComponent("parameters", "RequestIdHeader", {
    name: "x-request-id",
    in: "header",
    required: false,
    description: "Optional id for this request (1–128 characters `[A-Za-z0-9_.:-]`), echoed in the `x-request-id` response header and `requestId`; otherwise one is minted.",
    schema: { type: "string", pattern: REQUEST_ID_PATTERN },
    examples: exampleOff("req_my-trace-42"),
  });
  for (const op of OPERATIONS) {
    registry.registerPath({
      ...op,
      path: openApiPath(op.path),
      parameters: [{ $ref: "#/components/parameters/RequestIdHeader" }],
    } as RouteConfig);
  }
  registerEventWebhooks(registry);

  const generator = new OpenApiGeneratorV31(registry.definitions);
  const doc = generator.generateDocument({
    openapi: "3.1.0",
    info: {
      title: "School courses & webhooks API",
      version: API_VERSION,
      description: DESCRIPTION,
      license: { name: "UNLICENSED (private)", identifier: "LicenseRef-Private" },
    },
    servers: [{ url: "http://127.0.0.1:8787", description: "Local development (`npm start`)" }],
    security: [{ [SECURITY_SCHEME]: [] }],
    tags: [
      { name: COURSES, description: "Courses: list, search, read, create, change." },
      { name: WEBHOOKS, description: "Webhook registrations, owned by the school's event hub." },
      { name: REFERENCE, description: "This document and its interactive reference." },
      { name: "Events", description: "Event payloads POSTed to webhook endpoints (OpenAPI `webhooks`)." },
    ],
  }) as Record<string, any>;

  // The fallback responses' envelope: the generated 401 envelope with its code replaced.
  const envelopeWith = (code: ErrorCode) => {
    const schema = structuredClone(doc.components.schemas.UnauthorizedError);
    schema.properties.code.enum = [code];
    schema.description = `${ERROR_STATUS[code]}: ${ERROR_WHEN[code]}.`;
    return schema;
  };
  doc[FALLBACK_RESPONSES_KEY] = {
    404: {
      description: "`NOT_FOUND`: no operation has this path.",
      headers: headerRefs,
      content: { "application/json": { schema: envelopeWith("NOT_FOUND"), example: errorExample("NOT_FOUND") } },
    },
    405: {
      description: "`METHOD_NOT_ALLOWED`: the path exists with other methods.",
      headers: {
        ...headerRefs,
        allow: { description: "The methods of this path, comma-separated.", required: true, schema: { type: "string" }, example: "GET, POST" },
      },
      content: { "application/json": { schema: envelopeWith("METHOD_NOT_ALLOWED"), example: errorExample("METHOD_NOT_ALLOWED") } },
    },
  };
  for (const item of [...Object.values(doc.paths ?? {}), ...Object.values(doc.webhooks ?? {})] as Record<string, any>[]) {
    for (const op of Object.values(item)) {
      for (const p of op.parameters ?? []) {
        if (!p.schema) continue;
        // zod-to-openapi copies a parameter's description into its schema too: keep one.
        if (p.schema.description === p.description) delete p.schema.description;
        if (!p.required && p.schema.example !== undefined) {
          p.examples = exampleOff(p.schema.example);
          delete p.schema.example;
        }
      }
    }
  }
  return doc;
}

let cached: Record<string, any> | undefined;

/**
 * The document, computed once per isolate (the object is shared: do not mutate it). Its
 * `servers` names the local development server; GET /openapi.json replaces it with the
 * origin the document is fetched from.
 */
export function openApiDocument(): Record<string, any> {
  cached ??= buildOpenApiDocument();
  return cached;
}
