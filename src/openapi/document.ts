/**
 * The OpenAPI 3.1 document of the API, built from the operations' own declarations
 * (src/http/operation.ts) with @asteasolutions/zod-to-openapi: request and response schemas
 * are those the handlers validate with and answer; error responses come from the catalogue
 * (src/http/error-catalogue.ts) through src/openapi/responses.ts. This module adds what
 * belongs to the document as a whole (conventions, security schemes, common components,
 * tags) and the post-processing below. Request schemas are documented by their input shape,
 * query scalars by their meaning (docs/architecture.md § One declaration per operation).
 * Served by GET /openapi.json (src/openapi/operations.ts); the tests check every response
 * against it (test/support/openapi-check.ts).
 */
import { OpenAPIRegistry, OpenApiGeneratorV31, type ResponseConfig, type RouteConfig } from "@asteasolutions/zod-to-openapi";
import { ERROR_CODES, ERRORS } from "../http/error-catalogue";
import { allResponses, type Operation, type OutgoingRequest, portalSessionHeaders, scopeList } from "../http/operation";
import { conventions } from "./conventions";
import { COMMON_HEADERS, fallbackResponses, PORTAL_HEADER_COMPONENTS, REQUEST_ID_PATTERN, responseConfig, when } from "./responses";

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
  const responses = Object.entries(allResponses(op)).map(([status, r]) => [status, responseConfig(r)] as const);
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
    description: op.scopes.length > 0 ? `${op.description}\n\nScopes: ${scopeList(op.scopes)} (docs/reference.md § Scopes).` : op.description,
    ...securityOf(op),
    ...(op.request ? { request } : {}),
    responses: Object.fromEntries(responses),
    parameters: [{ $ref: "#/components/parameters/RequestIdHeader" }],
  };
}

/**
 * An operation's security requirements: none for a public one; else the bearer schemes it
 * takes, each listing the scopes the credential needs (OpenAPI 3.1 lets a non-OAuth scheme
 * name roles there: docs/reference.md § Scopes). An API-key-only operation without scopes
 * inherits the document's.
 */
function securityOf<E>(op: Operation<E>): Pick<RouteConfig, "security"> {
  if (op.public) return { security: [] };
  const scopes = [...op.scopes];
  if (op.portalTokens) return { security: [{ [SECURITY_SCHEME]: scopes }, { [PORTAL_SECURITY_SCHEME]: scopes }] };
  return scopes.length > 0 ? { security: [{ [SECURITY_SCHEME]: scopes }] } : {};
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

/** The component naming the union of every `webhooks` body, for receivers' code. */
const DELIVERY_UNION = "WebhookDelivery";

/**
 * The union of the bodies of every request the service sends (each a component by its meta
 * `id`): no operation refers to it; it names, for a receiver's handler, all it may be POSTed
 * (a generated client's `components["schemas"]["WebhookDelivery"]`, told apart by `type`).
 */
function deliveryUnion(outgoing: readonly OutgoingRequest[]) {
  const ref = (o: OutgoingRequest) => `#/components/schemas/${o.body.meta()?.id as string}`;
  return {
    description: `Any body POSTed to a webhook endpoint: one of this document's \`webhooks\` (${outgoing.map((o) => `\`${o.name}\``).join(", ")}), told apart by \`type\`. No operation returns it: it names the union a receiver handles.`,
    oneOf: outgoing.map((o) => ({ $ref: ref(o) })),
    // Each outgoing request is named by its event type, the body's `type`.
    discriminator: { propertyName: "type", mapping: Object.fromEntries(outgoing.map((o) => [o.name, ref(o)])) },
  };
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
    description: "An API key of the school: `Authorization: Bearer sk_…`, as issued by the service's operators. Every operation of the school.",
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
  if (outgoing.length > 0) registry.registerComponent("schemas", DELIVERY_UNION, deliveryUnion(outgoing));

  const errorTable = ERROR_CODES.map((c) => `| ${ERRORS[c].status} | \`${c}\` | ${when(c).replace(/\|/g, "\\|")} |`).join("\n");
  const doc = new OpenApiGeneratorV31(registry.definitions).generateDocument({
    openapi: "3.1.0",
    info: {
      title: API_TITLE,
      version: API_VERSION,
      description: conventions(FALLBACK_RESPONSES_KEY, errorTable),
      license: { name: "MIT", identifier: "MIT" },
    },
    servers: [{ url: "http://127.0.0.1:8787", description: "Local development (`npm start`)" }],
    security: [{ [SECURITY_SCHEME]: [] }],
    // Each tag once, in order of first use: the domains in the router's order, then the events.
    tags: [...new Map([...operations, ...outgoing].map((o) => [o.tag.name, o.tag])).values()],
  });
  return inlineRequestDefaults(postProcess(doc));
}

type SchemaNode = { $ref?: string; default?: unknown; [key: string]: unknown };

/** Whether a schema holds a `default`, itself or below (through `$ref`s, guarded against cycles). */
function holdsDefault(node: unknown, schemas: Record<string, unknown>, seen: Set<string>): boolean {
  if (!node || typeof node !== "object") return false;
  const n = node as SchemaNode;
  if (typeof n.$ref === "string") {
    if (seen.has(n.$ref)) return false;
    return holdsDefault(schemas[n.$ref.replace("#/components/schemas/", "")], schemas, new Set([...seen, n.$ref]));
  }
  if (n.default !== undefined) return true;
  return Object.values(n).some((v) => holdsDefault(v, schemas, seen));
}

/** A copy of `node` with every `$ref` to a schema that holds a default replaced by that schema, inlined. */
function inlineDefaults(node: unknown, schemas: Record<string, unknown>, seen: Set<string>): unknown {
  if (Array.isArray(node)) return node.map((v) => inlineDefaults(v, schemas, seen));
  if (!node || typeof node !== "object") return node;
  const n = node as SchemaNode;
  if (typeof n.$ref === "string") {
    if (seen.has(n.$ref) || !holdsDefault(n, schemas, new Set())) return n;
    return inlineDefaults(schemas[n.$ref.replace("#/components/schemas/", "")], schemas, new Set([...seen, n.$ref]));
  }
  return Object.fromEntries(Object.entries(n).map(([k, v]) => [k, inlineDefaults(v, schemas, seen)]));
}

/**
 * Request bodies describe what a client may send: a field with a `default` may be left out.
 * zod-to-openapi already leaves such a field out of `required`, but generators (openapi-typescript
 * by default) make a defaulted property of a *component* required, reading components as
 * responses, and keep it optional only inline under a `requestBody`. So each request body's
 * schema that holds a default is inlined there, and a component no longer referenced is dropped;
 * responses keep their components (their defaults are filled in). Checked by
 * test/http/openapi-request-defaults.test.ts and `npm run test:client`.
 */
function inlineRequestDefaults(doc: OpenApiDocument): OpenApiDocument {
  const schemas = (doc.components?.schemas ?? {}) as Record<string, unknown>;
  type Body = { content?: Record<string, { schema?: unknown }> };
  const unreferenced = () => {
    const text = JSON.stringify(doc);
    return Object.keys(schemas).filter((name) => !text.includes(`"#/components/schemas/${name}"`));
  };
  const keep = new Set(unreferenced());
  for (const item of [...Object.values(doc.paths ?? {}), ...Object.values(doc.webhooks ?? {})]) {
    for (const op of Object.values(item) as { requestBody?: Body }[]) {
      for (const media of Object.values(op?.requestBody?.content ?? {})) media.schema = inlineDefaults(media.schema, schemas, new Set());
    }
  }
  // Drop the components the inlining left unreferenced (one may be referenced by another only).
  for (let dropped = unreferenced().filter((n) => !keep.has(n)); dropped.length > 0; dropped = unreferenced().filter((n) => !keep.has(n))) {
    for (const name of dropped) delete schemas[name];
  }
  return doc;
}

/**
 * What zod-to-openapi cannot say: the fallback responses (their envelope is the generated
 * 401 envelope with its code replaced), one description per parameter, `deprecated` on the
 * parameter rather than its schema, and the examples of optional parameters disabled (`exampleOff`).
 */
function postProcess(doc: OpenApiDocument): OpenApiDocument {
  doc[FALLBACK_RESPONSES_KEY] = fallbackResponses(doc.components?.schemas?.UnauthorizedError);
  type Parameter = {
    description?: string;
    required?: boolean;
    deprecated?: boolean;
    schema?: { description?: string; example?: unknown; deprecated?: boolean };
    examples?: unknown;
  };
  for (const item of [...Object.values(doc.paths ?? {}), ...Object.values(doc.webhooks ?? {})]) {
    for (const op of Object.values(item) as { parameters?: Parameter[] }[]) {
      for (const p of op.parameters ?? []) {
        if (!p.schema) continue;
        // zod-to-openapi copies a parameter's description into its schema too: keep one.
        if (p.schema.description === p.description) delete p.schema.description;
        // A deprecated parameter is flagged on the parameter, where OpenAPI and clients look for it.
        if (p.schema.deprecated) {
          p.deprecated = true;
          delete p.schema.deprecated;
        }
        if (!p.required && p.schema.example !== undefined) {
          p.examples = exampleOff(p.schema.example);
          delete p.schema.example;
        }
      }
    }
  }
  return doc;
}
