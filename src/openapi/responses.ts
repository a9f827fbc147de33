/**
 * The responses of the OpenAPI document: the headers every response carries (as
 * `components.headers`), a success or error response object from an operation's
 * declaration — error descriptions and examples from the error catalogue
 * (src/http/error-catalogue.ts) — and the fallback responses of a request that matches no
 * operation.
 */
import type { ResponseConfig } from "@asteasolutions/zod-to-openapi";
import type { z } from "zod";
import { errorEnvelope } from "../http/envelopes";
import { ERRORS, type ErrorCode } from "../http/error-catalogue";
import { type ErrorResponse, PORTAL_SESSION_EXPIRES_HEADER, PORTAL_SESSION_READ_ONLY_HEADER, type SuccessResponse } from "../http/operation";
import { RATE_LIMIT_WINDOW_S } from "../http/rate-limit";

const REQUEST_ID_EXAMPLE = "req_01K4A8Z1M2N3P4Q5R6S7T8V9W0";
export const REQUEST_ID_PATTERN = "^[A-Za-z0-9_.:-]{1,128}$";

/** Headers on every response (docs/reference.md § "Conventions"), as `components.headers`. */
export const COMMON_HEADERS = {
  RequestId: {
    description:
      "The request id: the request's own `x-request-id` when it is 1–128 characters `[A-Za-z0-9_.:-]`, else one minted by the service (`req_…`). Error bodies repeat it as `requestId`.",
    required: true,
    schema: { type: "string", pattern: REQUEST_ID_PATTERN },
    example: REQUEST_ID_EXAMPLE,
  },
  ServerTiming: {
    description: 'Time spent: `db;dur=<ms waiting on D1>;desc="D1 round trips: <n>", total;dur=<ms in the Worker>` (milliseconds, one decimal).',
    required: true,
    schema: { type: "string", pattern: "^db;dur=\\d+(\\.\\d+)?(;[^,]*)?, total;dur=\\d+(\\.\\d+)?$" },
    example: 'db;dur=3.2;desc="D1 round trips: 1", total;dur=4.8',
  },
  RateLimitPolicy: {
    description: `While the rate limit is enabled (every deployment unless \`RATE_LIMIT_ENABLED=false\`): \`"default";q=<requests>;w=${RATE_LIMIT_WINDOW_S}\`, the requests allowed per credential (per client IP for requests without a valid one) in a ${RATE_LIMIT_WINDOW_S} s window.`,
    required: false,
    schema: { type: "string", pattern: '^"default";q=[0-9]+;w=[0-9]+$' },
    example: `"default";q=600;w=${RATE_LIMIT_WINDOW_S}`,
  },
  CacheControl: {
    description:
      "`no-store` on every answer of the API, errors included: answers may carry secrets (a portal token, a webhook secret), and no cache may keep one.",
    required: true,
    schema: { type: "string", enum: ["no-store"] },
    example: "no-store",
  },
  RetryAfter: {
    description:
      "Seconds to wait before retrying: the rate-limit window (429 RATE_LIMITED, an upper bound), the seconds until the next UTC day, when the school's daily quota of event bytes starts again (429 EVENT_QUOTA_EXCEEDED), or the pause of a school's course writes while it moves to another database shard (503 SCHOOL_MOVING).",
    required: true,
    schema: { type: "string", pattern: "^[0-9]+$" },
    example: String(RATE_LIMIT_WINDOW_S),
  },
} as const;

const headerRefs = {
  "x-request-id": { $ref: "#/components/headers/RequestId" },
  "Server-Timing": { $ref: "#/components/headers/ServerTiming" },
  "RateLimit-Policy": { $ref: "#/components/headers/RateLimitPolicy" },
  "Cache-Control": { $ref: "#/components/headers/CacheControl" },
};

/** `components.headers` names of the portal session headers (`portalSessionHeaders`). */
export const PORTAL_HEADER_COMPONENTS: Record<string, string> = {
  [PORTAL_SESSION_EXPIRES_HEADER]: "PortalSessionExpiresAt",
  [PORTAL_SESSION_READ_ONLY_HEADER]: "PortalSessionReadOnly",
};

/** When `code` is answered, as a sentence of the document. */
export const when = (code: ErrorCode) => ERRORS[code].when;

/** An example error body for `code`. */
function errorExample(code: ErrorCode) {
  const entry: { when: string; message?: string; example?: { message: string; details?: readonly unknown[] } } = ERRORS[code];
  const example = entry.example ?? { message: entry.message ?? `${entry.when[0]!.toUpperCase()}${entry.when.slice(1)}.` };
  return { status: "error", code, message: example.message, ...(example.details ? { details: example.details } : {}), requestId: REQUEST_ID_EXAMPLE };
}

/** Error envelopes shared by many operations, named in `components.schemas`. */
const sharedErrors = {
  401: errorEnvelope(["UNAUTHORIZED"], { id: "UnauthorizedError", description: "401: no valid credential (API key or portal session token)." }),
  403: errorEnvelope(["FORBIDDEN"], { id: "ForbiddenError", description: "403: a valid portal session token outside its scope." }),
  413: errorEnvelope(["PAYLOAD_TOO_LARGE"], { id: "PayloadTooLargeError", description: "413: the body is over 1 MiB." }),
  415: errorEnvelope(["UNSUPPORTED_MEDIA_TYPE"], { id: "UnsupportedMediaTypeError", description: "415: the body is not `application/json`." }),
  500: errorEnvelope(["INTERNAL_ERROR"], { id: "InternalError", description: "500: a bug; quote the request id." }),
};

/** A success response: the body schema, an example and the common headers (no content without a schema). */
function ok(r: SuccessResponse): ResponseConfig {
  return {
    description: r.description,
    headers: { ...headerRefs, ...r.headers } as ResponseConfig["headers"],
    ...(r.schema ? { content: { [r.mediaType ?? "application/json"]: { schema: r.schema as z.ZodType, example: r.example } } } : {}),
  };
}

/**
 * An error response whose `code` is one of `codes` (all of one status). The description
 * says when each code is answered; the example shows the first one.
 */
function fail(response: ErrorResponse): ResponseConfig {
  const { codes, lead } = "codes" in response ? response : { codes: response, lead: undefined };
  const status = ERRORS[codes[0]].status;
  for (const c of codes) if (ERRORS[c].status !== status) throw new Error(`${c} is not a ${status}`);
  const shared = sharedErrors[status as keyof typeof sharedErrors];
  const schema = shared && codes.length === 1 && shared.shape.code.options[0] === codes[0] ? shared : errorEnvelope(codes);
  const lines = codes.map((c) => `- \`${c}\`: ${when(c)}.`).join("\n");
  const headers = status === 429 || status === 503 ? { ...headerRefs, "Retry-After": { $ref: "#/components/headers/RetryAfter" } } : headerRefs;
  return {
    description: `${lead ? `${lead}\n\n` : ""}${lines}`,
    headers: headers as ResponseConfig["headers"],
    content: { "application/json": { schema, example: errorExample(codes[0]) } },
  };
}

const isError = (r: SuccessResponse | ErrorResponse): r is ErrorResponse => Array.isArray(r) || "codes" in r;

/** The response object of one of an operation's declared responses. */
export const responseConfig = (r: SuccessResponse | ErrorResponse): ResponseConfig => (isError(r) ? fail(r) : ok(r));

/**
 * The responses of a request that matches no operation (`FALLBACK_RESPONSES_KEY` of
 * src/openapi/document.ts): their envelope is the generated 401 envelope `unauthorized`
 * with its code replaced.
 */
export function fallbackResponses(unauthorized: unknown) {
  const envelopeWith = (code: ErrorCode) => {
    const schema = structuredClone(unauthorized) as { properties: { code: { enum: string[] } }; description: string };
    schema.properties.code.enum = [code];
    schema.description = `${ERRORS[code].status}: ${when(code)}.`;
    return schema;
  };
  return {
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
    429: {
      description: "`RATE_LIMITED`: the client IP is over its rate limit (requests to unknown paths count against it too).",
      headers: { ...headerRefs, "Retry-After": { $ref: "#/components/headers/RetryAfter" } },
      content: { "application/json": { schema: envelopeWith("RATE_LIMITED"), example: errorExample("RATE_LIMITED") } },
    },
  };
}
