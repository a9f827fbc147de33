/**
 * The router: itty-router's `Router` with the route table of src/http/routes.ts, the error
 * envelope for anything thrown, 404 NOT_FOUND / 405 METHOD_NOT_ALLOWED derived from the
 * route table, and the `x-request-id` and `Server-Timing` headers on every response.
 */
import { Router, type IRequest, type RouteEntry } from "itty-router";
import type { Env } from "../env";
import type { RequestContext } from "./context";
import { errors, toErrorBody } from "./errors";
import { jsonResponse } from "./respond";

/** A route handler. `rc` carries the request id and D1 timing. */
export type Handler = (req: IRequest, env: Env, exec: ExecutionContext, rc: RequestContext) => Promise<Response>;

/** One row of the route table. `path` uses `:name` parameters; `literal: true` matches it exactly (for `/v3/courses:search`). */
export interface RouteDef {
  method: "GET" | "POST" | "PATCH" | "DELETE";
  path: string;
  handler: Handler;
  literal?: boolean;
}

const escapeRe = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

/** Builds the fetch function of a route table. */
export function buildRouter(table: RouteDef[]) {
  const router = Router<IRequest, [Env, ExecutionContext, RequestContext]>({
    catch: (err: unknown, req: IRequest, _env: Env, _exec: ExecutionContext, rc: RequestContext) => {
      const { status, body, headers } = toErrorBody(err, rc.requestId);
      if (status === 500) console.error(`[${rc.requestId}] ${req.method} ${req.url}`, err);
      return jsonResponse(body, status, headers);
    },
  });
  for (const route of table) {
    if (route.literal) {
      // itty-router reads ":search" as a parameter: push an exact pattern instead.
      (router.routes as RouteEntry[]).push([route.method, new RegExp(`^${escapeRe(route.path)}/*$`), [route.handler], route.path]);
    } else {
      router[route.method.toLowerCase() as "get"](route.path, route.handler);
    }
  }
  // Fallback: 405 when another method matches the path, else 404.
  router.all("*", (req: IRequest) => {
    const path = new URL(req.url).pathname;
    const allowed = [...new Set((router.routes as RouteEntry[]).filter(([m, re]) => m !== "ALL" && re.test(path)).map(([m]) => m))];
    if (allowed.length > 0) throw errors.methodNotAllowed(req.method, allowed);
    throw errors.notFound(path);
  });
  return async (request: Request, env: Env, exec: ExecutionContext, rc: RequestContext): Promise<Response> => {
    const response: Response = await router.fetch(request, env, exec, rc);
    const headers = new Headers(response.headers);
    headers.set("x-request-id", rc.requestId);
    headers.set("server-timing", rc.serverTiming());
    return new Response(response.body, { status: response.status, statusText: response.statusText, headers });
  };
}
