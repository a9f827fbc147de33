/**
 * The OpenAPI 3.1 document of the API, built from the operations' own declarations
 * (src/http/operation.ts) with @asteasolutions/zod-to-openapi: each operation's request and
 * response schemas are the zod schemas its handler validates with and answers, its error
 * responses come from the error catalogue (src/http/error-catalogue.ts). This module adds
 * only what belongs to the document as a whole (conventions, common headers, tags) and the
 * post-processing below.
 *
 * Request schemas are documented by their INPUT shape (what a client sends): a query
 * parameter such as `limit` is a string of digits with its range and default in its
 * description, booleans are the strings `true|false|1|0`, instants are `date-time` strings
 * with a zone. zod-to-openapi reads a `.transform()` / `.pipe()` by its input side.
 *
 * Served by GET /openapi.json (src/openapi/operations.ts); the tests validate every response
 * of the suite against it (test/support/openapi-check.ts).
 */
import { OpenAPIRegistry, OpenApiGeneratorV31, type ResponseConfig, type RouteConfig } from "@asteasolutions/zod-to-openapi";
import type { z } from "zod";
import { errorEnvelope } from "../http/envelopes";
import { ERROR_CODES, ERRORS, type ErrorCode } from "../http/error-catalogue";
import {
  allResponses,
  type ErrorResponse,
  type Operation,
  type OutgoingRequest,
  PORTAL_SESSION_EXPIRES_HEADER,
  PORTAL_SESSION_READ_ONLY_HEADER,
  portalSessionHeaders,
  type SuccessResponse,
} from "../http/operation";
import { RATE_LIMIT_WINDOW_S } from "../http/rate-limit";
import { conventions } from "./conventions";

/** The document: an OpenAPI 3.1 object (its root extension included). */
export type OpenApiDocument = ReturnType<OpenApiGeneratorV31["generateDocument"]>;

/** The `info.title` of the document. */
export const API_TITLE = "School courses & webhooks API";

/** The `info.version` of the document. */
export const API_VERSION = "3.0.0";

/** The name of the bearer security scheme of API keys (`components.securitySchemes`). */
export const SECURITY_SCHEME = "bearerAuth";

/** The name of the bearer security scheme of portal session tokens: the operations that take them list it. */
export const PORTAL_SECURITY_SCHEME = "portalToken";

/**
 * Root extension of the document: the responses of a request that matches no operation
 * (404 NOT_FOUND for an unknown path, 405 METHOD_NOT_ALLOWED with `allow` for a known path
 * and another method, 429 RATE_LIMITED when its client IP is over its limit). OpenAPI has no place for them; the test helper reads them here.
 */
export const FALLBACK_RESPONSES_KEY = "x-fallback-responses";

const REQUEST_ID_EXAMPLE = "req_01K4A8Z1M2N3P4Q5R6S7T8V9W0";
const REQUEST_ID_PATTERN = "^[A-Za-z0-9_.:-]{1,128}$";

/** Headers on every response (API.md § "Conventions"), as `components.headers`. */
const COMMON_HEADERS = {
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
  RetryAfter: {
    description: "Seconds to wait before retrying (the rate-limit window: an upper bound).",
    required: true,
    schema: { type: "string", pattern: "^[0-9]+$" },
    example: String(RATE_LIMIT_WINDOW_S),
  },
} as const;

const headerRefs = {
  "x-request-id": { $ref: "#/components/headers/RequestId" },
  "Server-Timing": { $ref: "#/components/headers/ServerTiming" },
  "RateLimit-Policy": { $ref: "#/components/headers/RateLimitPolicy" },
};

/** `components.headers` names of the portal session headers (`portalSessionHeaders`). */
const PORTAL_HEADER_COMPONENTS: Record<string, string> = {
  [PORTAL_SESSION_EXPIRES_HEADER]: "PortalSessionExpiresAt",
  [PORTAL_SESSION_READ_ONLY_HEADER]: "PortalSessionReadOnly",
};

/** When `code` is answered, as a sentence of the document. */
const when = (code: ErrorCode) => ERRORS[code].when;

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

/** A success response: the body schema, an example and the common headers. */
function ok(r: SuccessResponse): ResponseConfig {
  return {
    description: r.description,
    headers: { ...headerRefs, ...r.headers } as ResponseConfig["headers"],
    content: { [r.mediaType ?? "application/json"]: { schema: r.schema as z.ZodType, example: r.example } },
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
  const headers = status === 429 ? { ...headerRefs, "Retry-After": { $ref: "#/components/headers/RetryAfter" } } : headerRefs;
  return {
    description: `${lead ? `${lead}\n\n` : ""}${lines}`,
    headers: headers as ResponseConfig["headers"],
    content: { "application/json": { schema, example: errorExample(codes[0]) } },
  };
}

const isError = (r: SuccessResponse | ErrorResponse): r is ErrorResponse => Array.isArray(r) || "codes" in r;

/** The zod-to-openapi form of an operation. */
function routeConfig<E>(op: Operation<E>): RouteConfig {
  const { params, query, headers, body } = op.request ?? {};
  const request = {
    ...(params ? { params } : {}),
    ...(query ? { query } : {}),
    ...(headers ? { headers } : {}),
    ...(body
      ? {
          body: {
            description: body.description,
            required: body.required ?? true,
            content: { "application/json": { schema: body.schema, example: body.example ?? body.schema.meta()?.example } },
          },
        }
      : {}),
  };
  const responses = Object.entries(allResponses(op)).map(([status, r]) => [status, isError(r) ? fail(r) : ok(r)] as const);
  // Every answer to a portal token in scope carries the session headers (src/http/router.ts).
  if (op.portalTokens) {
    const portal = Object.fromEntries(Object.entries(PORTAL_HEADER_COMPONENTS).map(([name, id]) => [name, { $ref: `#/components/headers/${id}` }]));
    for (const [, response] of responses) response.headers = { ...response.headers, ...portal } as ResponseConfig["headers"];
  }
  return {
    method: op.method.toLowerCase() as RouteConfig["method"],
    path: op.path,
    operationId: op.operationId,
    tags: [op.tag.name],
    summary: op.summary,
    description: op.description,
    ...(op.public ? { security: [] } : op.portalTokens ? { security: [{ [SECURITY_SCHEME]: [] }, { [PORTAL_SECURITY_SCHEME]: [] }] } : {}),
    ...(op.request ? { request } : {}),
    responses: Object.fromEntries(responses),
    parameters: [{ $ref: "#/components/parameters/RequestIdHeader" }],
  };
}

/** Registers a request the service sends under `webhooks`. */
function registerOutgoing(registry: OpenAPIRegistry, out: OutgoingRequest): void {
  registry.registerWebhook({
    method: "post",
    path: out.name,
    operationId: out.operationId,
    tags: [out.tag.name],
    summary: out.summary,
    description: out.description,
    security: [],
    request: {
      headers: out.headers,
      body: { required: true, content: { "application/json": { schema: out.body, example: out.body.meta()?.example } } },
    },
    responses: Object.fromEntries(Object.entries(out.responses).map(([status, description]) => [status, { description }])),
  });
}

/**
 * The `examples` of an optional parameter: the example value, marked `x-disabled` (a Scalar
 * extension) so that "Test Request" in /docs leaves the parameter out until the user ticks it
 * — otherwise every optional filter would be sent with its example value.
 */
function exampleOff(value: unknown) {
  return { example: { summary: "Example", value, "x-disabled": true } };
}

/**
 * Builds the document (pure: a new object on each call).
 *
 * @param operations every operation the Worker serves, in the router's order.
 * @param outgoing every request the service sends (the event deliveries).
 */
export function buildOpenApiDocument<E>(operations: readonly Operation<E>[], outgoing: readonly OutgoingRequest[]): OpenApiDocument {
  const registry = new OpenAPIRegistry();
  registry.registerComponent("securitySchemes", SECURITY_SCHEME, {
    type: "http",
    scheme: "bearer",
    bearerFormat: "sk_…",
    description:
      "An API key of the school: `Authorization: Bearer sk_…` (with `npm start`, the demo key `sk_test_demo_…` printed at start-up). Every operation of the school.",
  });
  registry.registerComponent("securitySchemes", PORTAL_SECURITY_SCHEME, {
    type: "http",
    scheme: "bearer",
    bearerFormat: "ps_…",
    description:
      "A portal session token of the school (`POST /v3/portal-sessions`, the `#token=` of a portal link): `Authorization: Bearer ps_…`. Only the operations that list this scheme; a read-only token only their GETs. Any other operation answers `403 FORBIDDEN`. Responses to it carry `x-portal-session-expires-at` and `x-portal-session-read-only`.",
  });
  for (const [name, header] of Object.entries(COMMON_HEADERS)) registry.registerComponent("headers", name, header as never);
  for (const [name, id] of Object.entries(PORTAL_HEADER_COMPONENTS)) registry.registerComponent("headers", id, portalSessionHeaders[name] as never);
  registry.registerComponent("parameters", "RequestIdHeader", {
    name: "x-request-id",
    in: "header",
    required: false,
    description:
      "Optional id for this request (1–128 characters `[A-Za-z0-9_.:-]`), echoed in the `x-request-id` response header and `requestId`; otherwise one is minted.",
    schema: { type: "string", pattern: REQUEST_ID_PATTERN },
    examples: exampleOff("req_my-trace-42"),
  });
  for (const op of operations) registry.registerPath(routeConfig(op));
  for (const out of outgoing) registerOutgoing(registry, out);

  const errorTable = ERROR_CODES.map((c) => `| ${ERRORS[c].status} | \`${c}\` | ${when(c).replace(/\|/g, "\\|")} |`).join("\n");
  const doc = new OpenApiGeneratorV31(registry.definitions).generateDocument({
    openapi: "3.1.0",
    info: {
      title: API_TITLE,
      version: API_VERSION,
      description: conventions(FALLBACK_RESPONSES_KEY, errorTable),
      license: { name: "UNLICENSED (private)", identifier: "LicenseRef-Private" },
    },
    servers: [{ url: "http://127.0.0.1:8787", description: "Local development (`npm start`)" }],
    security: [{ [SECURITY_SCHEME]: [] }],
    // Each tag once, in order of first use: the domains in the router's order, then the events.
    tags: [...new Map([...operations, ...outgoing].map((o) => [o.tag.name, o.tag])).values()],
  });
  return postProcess(doc);
}

/**
 * What zod-to-openapi cannot say: the fallback responses (their envelope is the generated
 * 401 envelope with its code replaced), one description per parameter, and the examples of
 * optional parameters disabled (`exampleOff`).
 */
function postProcess(doc: OpenApiDocument): OpenApiDocument {
  const envelopeWith = (code: ErrorCode) => {
    const schema = structuredClone(doc.components?.schemas?.UnauthorizedError) as { properties: { code: { enum: string[] } }; description: string };
    schema.properties.code.enum = [code];
    schema.description = `${ERRORS[code].status}: ${when(code)}.`;
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
    429: {
      description: "`RATE_LIMITED`: the client IP is over its rate limit (requests to unknown paths count against it too).",
      headers: { ...headerRefs, "Retry-After": { $ref: "#/components/headers/RetryAfter" } },
      content: { "application/json": { schema: envelopeWith("RATE_LIMITED"), example: errorExample("RATE_LIMITED") } },
    },
  };
  type Parameter = { description?: string; required?: boolean; schema?: { description?: string; example?: unknown }; examples?: unknown };
  for (const item of [...Object.values(doc.paths ?? {}), ...Object.values(doc.webhooks ?? {})]) {
    for (const op of Object.values(item) as { parameters?: Parameter[] }[]) {
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
