/**
 * One declaration per operation (docs/architecture.md § "One rule, one home"): method, path, request
 * schemas, responses with their error codes, summary and handler, in one object. The router
 * (src/http/router.ts) and the OpenAPI document (src/openapi/document.ts) are both built
 * from the same list of them; each domain declares its own (`src/<domain>/operations.ts`),
 * so adding an operation is adding one declaration there.
 */
import type { IRequest } from "itty-router";
import type { z } from "zod";
import type { Scope } from "../lib/scopes";
import type { RequestContext } from "./context";
import type { ErrorCode } from "./error-catalogue";

/** A route handler. `rc` carries the request id and D1 timing. */
type Handler<E> = (req: IRequest, env: E, exec: ExecutionContext, rc: RequestContext) => Promise<Response>;

/** A response header, as the document describes it. */
export interface HeaderDoc {
  description: string;
  required?: boolean;
  /** JSON Schema of the value; `{ type: "string" }` when absent. */
  schema?: Record<string, unknown>;
  example?: string;
}

/** A success response: its body schema and an example of it (neither for a body-less one, a redirect). */
export interface SuccessResponse {
  description: string;
  /** The body: a zod schema, or a JSON Schema object for a body that zod does not describe. Absent: no body. */
  schema?: z.ZodType | Record<string, unknown>;
  example?: unknown;
  /** Default `application/json`. */
  mediaType?: string;
  /** Headers beyond `x-request-id` and `Server-Timing` (which every response has). */
  headers?: Record<string, HeaderDoc>;
}

/** The codes of one error status (all of that status in the catalogue), first the example's. */
export type ErrorCodes = readonly [ErrorCode, ...ErrorCode[]];

/** An error response: its codes, and an optional lead paragraph for the document. */
export type ErrorResponse = ErrorCodes | { codes: ErrorCodes; lead: string };

/** A tag of the document: the operations of one domain. */
interface Tag {
  name: string;
  description: string;
}

/** One operation of the API. */
export interface Operation<E> {
  method: "GET" | "POST" | "PATCH" | "DELETE";
  /** As the document writes it: `/v3/courses/{id}`. A `:` is literal (`/v3/courses:search`). */
  path: string;
  /** Unique, camelCase. */
  operationId: string;
  /** The document's tag (one per domain). */
  tag: Tag;
  summary: string;
  description: string;
  /** Answers without authentication (`security: []` in the document). */
  public?: boolean;
  /**
   * The scopes a credential needs for it (docs/reference.md § Scopes), every one of them;
   * `[]` for a public operation and for those any credential of the school may call. A
   * credential without one answers 403 FORBIDDEN naming it, before any shard or object is
   * touched (src/http/auth.ts checks it as it resolves the credential). Some operations need
   * more for some requests (`includeStudents`: `students:read`, src/courses/operations.ts).
   */
  scopes: readonly Scope[];
  /**
   * Served before the rate limit and never counted by it (src/index.ts `unmeteredRequest`),
   * so the document lists no 429: the health check, which monitors call from shared IPs.
   */
  unmetered?: boolean;
  /**
   * Portal session tokens (`ps_…`) may call it besides API keys, read-only ones only when
   * `method` is GET (docs/reference.md § "Conventions"). Absent: API keys only, and a valid portal
   * token answers 403 FORBIDDEN. The one place the scope is stated: src/http/auth.ts and
   * the document read it here.
   */
  portalTokens?: boolean;
  /**
   * With `portalTokens`: read-only tokens may call it too, though it is not a GET (the
   * redeem, which changes the session and nothing of the school's data).
   */
  readOnlyTokens?: boolean;
  /**
   * With `portalTokens`: the operation takes a portal link's token (one minted by POST
   * /v3/portal-sessions) and no other portal token: the redeem. A link's token anywhere else
   * answers 401 UNAUTHORIZED (the catalogue's `link` message); a redeemed session's token
   * here 403 FORBIDDEN (docs/reference.md § Portal sessions).
   */
  portalLinks?: boolean;
  /** The schemas the handler validates with (`params` documents the path segments). */
  request?: {
    params?: z.ZodObject;
    query?: z.ZodObject;
    /** Request headers the operation reads (documentation: src/http/headers.ts parses them). */
    headers?: z.ZodObject;
    body?: {
      schema: z.ZodType;
      description: string;
      /** Default true. */
      required?: boolean;
      /** Default: the schema's own `.meta()` example. */
      example?: unknown;
    };
  };
  /**
   * By status: a success response, or the error codes answered with that status. The ones
   * every operation of a kind shares are not listed here (`allResponses` adds them).
   */
  responses: Record<number, SuccessResponse | ErrorResponse>;
  handler: Handler<E>;
}

/**
 * Whether a valid portal session token can be refused by `op` (403 FORBIDDEN): every
 * operation that needs a credential, but the GETs that portal tokens may call.
 */
function refusesPortalTokens<E>(op: Pick<Operation<E>, "public" | "portalTokens" | "readOnlyTokens" | "method">): boolean {
  return !op.public && !(op.portalTokens && (op.method === "GET" || op.readOnlyTokens));
}

/**
 * An operation's responses with those it shares with every operation of its kind: 401
 * UNAUTHORIZED unless it is public, 403 FORBIDDEN when it needs a scope (docs/reference.md §
 * Scopes) or a valid portal token can be out of its reach (`refusesPortalTokens`), 413 PAYLOAD_TOO_LARGE and 415 UNSUPPORTED_MEDIA_TYPE when it
 * reads a JSON body (`readJson`), 429 RATE_LIMITED unless it is `unmetered` (before the
 * operation's own 429 codes, if any) and 500 INTERNAL_ERROR always (the rate limit of src/http/rate-limit.ts runs
 * before every operation).
 */
export function allResponses<E>(op: Operation<E>): Record<number, SuccessResponse | ErrorResponse> {
  // An operation's own 429 codes (a course write's EVENT_QUOTA_EXCEEDED) come after the rate limit's.
  const own429 = op.responses[429] as ErrorResponse | undefined;
  const own = own429 === undefined ? { codes: [] } : "codes" in own429 ? own429 : { codes: own429 };
  const ownLead = "lead" in own ? `\n\n${own.lead}` : "";
  const shared: Record<number, ErrorResponse> = {
    429: {
      codes: ["RATE_LIMITED", ...own.codes],
      lead: `The limit is counted per API key, per portal session token and per school for its portal tokens together (a higher limit), or per client IP (an IPv6 client by its /64) for requests without a valid credential. Once the client IP is over its limit, a request with no credential, or one the service has not recently verified, answers 429 before any database read.${ownLead}`,
    },
    500: ["INTERNAL_ERROR"],
  };
  if (!op.public) shared[401] = ["UNAUTHORIZED"];
  const leads: string[] = [];
  if (op.scopes.length > 0) leads.push(`A credential without ${scopeList(op.scopes)} (the message names the missing scope).`);
  if (refusesPortalTokens(op)) {
    leads.push(
      op.portalTokens
        ? "A read-only portal session token: it may call only the GET operations of its scope."
        : "A portal session token (`ps_…`): this operation takes API keys only.",
    );
  }
  if (leads.length > 0) shared[403] = { codes: ["FORBIDDEN"], lead: leads.join(" ") };
  if (op.request?.body) Object.assign(shared, { 413: ["PAYLOAD_TOO_LARGE"], 415: ["UNSUPPORTED_MEDIA_TYPE"] });
  if (op.unmetered) {
    const { 429: _never, ...rest } = { ...shared, ...op.responses };
    return rest;
  }
  return { ...shared, ...op.responses, 429: shared[429]! };
}

/** `a`, `a and b`, `a, b and c`, each in backquotes: the scopes an operation needs, for the document. */
export function scopeList(scopes: readonly Scope[]): string {
  const names = scopes.map((s) => `\`${s}\``);
  return names.length < 2 ? (names[0] ?? "") : `${names.slice(0, -1).join(", ")} and ${names.at(-1)}`;
}

/** Response header: when the request's portal session ends (ISO 8601 UTC instant). */
export const PORTAL_SESSION_EXPIRES_HEADER = "x-portal-session-expires-at";
/** Response header: whether the request's portal session is read-only (`true` / `false`). */
export const PORTAL_SESSION_READ_ONLY_HEADER = "x-portal-session-read-only";

/**
 * The headers of every response to a request made with a portal session token in the
 * operation's scope (src/http/router.ts sets them), for the document.
 */
export const portalSessionHeaders: Record<string, HeaderDoc> = {
  [PORTAL_SESSION_EXPIRES_HEADER]: {
    description:
      "Only for a request made with a portal session token (`ps_…`): when the session ends (ISO 8601 UTC). A portal link carries only the token; the portal page shows this instant.",
    schema: { type: "string", format: "date-time" },
    example: "2026-09-07T09:00:00.000Z",
  },
  [PORTAL_SESSION_READ_ONLY_HEADER]: {
    description: "Only for a request made with a portal session token: `true` when the session is read-only (GET operations only).",
    schema: { type: "string", enum: ["true", "false"] },
    example: "false",
  },
};

/** The `location` header of a 201. */
export const locationHeader = (example: string): Record<string, HeaderDoc> => ({
  location: { description: "Path of the new resource.", required: true, schema: { type: "string" }, example },
});

/**
 * A request the service sends (an OpenAPI `webhooks` entry): what a receiver gets and what
 * its answers mean. Documentation only: the sending is the hub's.
 */
export interface OutgoingRequest {
  /** The entry's name (an event type). */
  name: string;
  operationId: string;
  tag: Tag;
  summary: string;
  description: string;
  headers: z.ZodObject;
  body: z.ZodType;
  /** By status (`2XX`, `410`, `default`): what the answer means. */
  responses: Record<string, string>;
}
