/**
 * The router: itty-router's `Router` over a list of operations (src/http/operation.ts), the
 * error envelope for anything thrown, 404 NOT_FOUND / 405 METHOD_NOT_ALLOWED derived from
 * the same list, and the `x-request-id` and `Server-Timing` headers on every response.
 */
import { type IRequest, type RouteEntry, Router } from "itty-router";
import type { RequestContext } from "./context";
import { errors, toErrorBody } from "./errors";
import type { Operation } from "./operation";
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

/** What the router needs of an operation (a benchmark-only route declares no more). */
export type Route<E> = Pick<Operation<E>, "method" | "path" | "handler">;

/** Builds the fetch function of a list of operations. */
export function buildRouter<E>(operations: readonly Route<E>[]) {
  const router = Router<IRequest, [E, ExecutionContext, RequestContext]>({
    catch: (err: unknown, req: IRequest, _env: E, _exec: ExecutionContext, rc: RequestContext) => {
      const { status, body, headers } = toErrorBody(err, rc.requestId);
      if (status === 500) console.error(`[${rc.requestId}] ${req.method} ${req.url}`, err);
      return jsonResponse(body, status, headers);
    },
  });
  const routes = router.routes as RouteEntry[];
  for (const op of operations) routes.push([op.method, pathPattern(op.path), [op.handler], op.path]);
  // Fallback: 405 when another method matches the path, else 404.
  router.all("*", (req: IRequest) => {
    const path = new URL(req.url).pathname;
    const allowed = [...new Set(routes.filter(([m, re]) => m !== "ALL" && re.test(path)).map(([m]) => m))];
    if (allowed.length > 0) throw errors.methodNotAllowed(req.method, allowed);
    throw errors.notFound(path);
  });
  return async (request: Request, env: E, exec: ExecutionContext, rc: RequestContext): Promise<Response> => {
    const response: Response = await router.fetch(request, env, exec, rc);
    const headers = new Headers(response.headers);
    headers.set("x-request-id", rc.requestId);
    headers.set("server-timing", rc.serverTiming());
    return new Response(response.body, { status: response.status, statusText: response.statusText, headers });
  };
}
