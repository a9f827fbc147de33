/**
 * The router: itty-router's `Router` over a list of operations (src/http/operation.ts), the
 * error envelope for anything thrown, 404 NOT_FOUND / 405 METHOD_NOT_ALLOWED derived from
 * the same list, and the `x-request-id` and `Server-Timing` headers on every response.
 */
import { type IRequest, type RouteEntry, Router } from "itty-router";
import { formatInstant } from "../lib/time";
import type { RequestContext } from "./context";
import { errors, toErrorBody } from "./errors";
import { type Operation, PORTAL_SESSION_EXPIRES_HEADER, PORTAL_SESSION_READ_ONLY_HEADER } from "./operation";
import { jsonResponse } from "./respond";

const escapeRe = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

/**
 * The pattern of a declared path: `{name}` matches one segment (`params.name`, not decoded),
 * everything else literally — a `:` too, which itty-router's own patterns would read as a
 * parameter (`/v3/courses:search`). Trailing slashes are ignored, as itty-router does.
 */
function pathPattern(path: string): RegExp {
  const source = path
    .split(/(\{[A-Za-z_]\w*\})/)
    .map((part) => (/^\{\w+\}$/.test(part) ? `(?<${part.slice(1, -1)}>[^/]+?)` : escapeRe(part)))
    .join("");
  return new RegExp(`^${source}/*$`);
}

/**
 * The pattern of each of `paths`: `pathPattern`, and for a path with a parameter, never a
 * literal path of the list (`/v3/courses/{id}` does not match `/v3/courses/changes`), so that
 * a literal path is one resource for every method: another method on it is 405, whatever a
 * parametric route of that method would have matched (docs/reference.md § Error codes).
 */
function pathPatterns(paths: readonly string[]): Map<string, RegExp> {
  // A path appears once per method that serves it.
  const literal = [...new Set(paths.filter((p) => !p.includes("{")))];
  return new Map(
    paths.map((p) => {
      const re = pathPattern(p);
      if (!p.includes("{")) return [p, re];
      const shadowed = literal.filter((l) => re.test(l));
      if (shadowed.length === 0) return [p, re];
      return [p, new RegExp(`^(?!(?:${shadowed.map(escapeRe).join("|")})/*$)${re.source.slice(1)}`)];
    }),
  );
}

/** What the router needs of an operation (a benchmark-only route declares no more). */
export type Route<E> = Pick<Operation<E>, "method" | "path" | "handler" | "portalTokens"> &
  Partial<Pick<Operation<E>, "operationId" | "readOnlyTokens" | "portalLinks" | "unmetered" | "scopes">>;

/**
 * Whether `request` is for an `unmetered` route of `routes` (its exact path and method), which
 * the Worker serves before the rate limit (src/index.ts). Only literal paths may be unmetered.
 */
export function unmeteredRequest<E>(routes: readonly Route<E>[]): (request: Request) => boolean {
  const keys = new Set(routes.filter((r) => r.unmetered).map((r) => `${r.method} ${r.path}`));
  return (request) => keys.size > 0 && keys.has(`${request.method} ${new URL(request.url).pathname}`);
}

/** Builds the fetch function of a list of operations. */
export function buildRouter<E>(operations: readonly Route<E>[]) {
  const router = Router<IRequest, [E, ExecutionContext, RequestContext]>({
    catch: (err: unknown, _req: IRequest, _env: E, _exec: ExecutionContext, rc: RequestContext) => {
      const { status, body, headers } = toErrorBody(err, rc.requestId);
      rc.errorCode = body.code;
      // The request's log line (src/index.ts) carries it; the client never sees it.
      if (status === 500) rc.internalError = err;
      return jsonResponse(body, status, headers);
    },
  });
  const routes = router.routes as RouteEntry[];
  const patterns = pathPatterns(operations.map((op) => op.path));
  for (const op of operations) {
    // Names the matched operation for the request's log line and sets its scope for
    // src/http/auth.ts, before its handler authenticates (itty-router runs the next handler
    // when one returns nothing).
    const portalTokens = op.portalTokens === true;
    const readOnlyTokens = op.readOnlyTokens === true;
    const portalLinks = op.portalLinks === true;
    const scopes = op.scopes ?? [];
    const scope = (_req: IRequest, _env: E, _exec: ExecutionContext, rc: RequestContext) => {
      rc.operationId = op.operationId;
      rc.portalTokens = portalTokens;
      rc.readOnlyTokens = readOnlyTokens;
      rc.portalLinks = portalLinks;
      rc.scopesNeeded = [...scopes];
    };
    routes.push([op.method, patterns.get(op.path)!, [scope, op.handler], op.path]);
  }
  // Fallback: 405 when another method matches the path, else 404.
  router.all("*", (req: IRequest) => {
    const path = new URL(req.url).pathname;
    const allowed = [...new Set(routes.filter(([m, re]) => m !== "ALL" && re.test(path)).map(([m]) => m))];
    if (allowed.length > 0) throw errors.methodNotAllowed(req.method, allowed);
    throw errors.notFound(path);
  });
  return async (request: Request, env: E, exec: ExecutionContext, rc: RequestContext): Promise<Response> =>
    finish(await router.fetch(request, env, exec, rc), rc);
}

/**
 * The response headers a browser client may read (docs/reference.md § "Conventions"). The Worker sets
 * no other CORS header (a cross-origin browser client needs an origin policy in front of it);
 * this one names what such a client would read once allowed.
 */
const EXPOSED_HEADERS = `x-request-id, x-d1-bookmark, ETag, Retry-After, RateLimit-Policy, Idempotent-Replayed, Location, ${PORTAL_SESSION_EXPIRES_HEADER}, ${PORTAL_SESSION_READ_ONLY_HEADER}`;

/**
 * `response` with the headers of every response: `x-request-id`, `Server-Timing`,
 * `Access-Control-Expose-Headers`; and, for a request made with a portal session token that
 * the operation takes, the session's end and read-only flag (docs/reference.md § "Webhook portal": a
 * portal link carries only the token, the page learns the rest from any answer).
 */
function finish(response: Response, rc: RequestContext): Response {
  const headers = new Headers(response.headers);
  headers.set("access-control-expose-headers", EXPOSED_HEADERS);
  headers.set("x-request-id", rc.requestId);
  headers.set("server-timing", rc.serverTiming());
  if (rc.portalSession) {
    headers.set(PORTAL_SESSION_EXPIRES_HEADER, formatInstant(rc.portalSession.expiresAt));
    headers.set(PORTAL_SESSION_READ_ONLY_HEADER, String(rc.portalSession.readOnly));
  }
  return new Response(response.body, { status: response.status, statusText: response.statusText, headers });
}

/** The error envelope of `err` as a complete response (for errors thrown outside the router). */
export function errorResponse(err: unknown, rc: RequestContext): Response {
  const { status, body, headers } = toErrorBody(err, rc.requestId);
  rc.errorCode = body.code;
  if (status === 500) rc.internalError = err;
  return finish(jsonResponse(body, status, headers), rc);
}
