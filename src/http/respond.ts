/**
 * Response helpers: the success envelope of API.md § "Conventions".
 */

import type { Pagination } from "./schemas";

/** `pagination` of list responses (`{ page, limit, hasMore }`, derived from `paginationSchema`). */
export type { Pagination } from "./schemas";

/** A JSON response (`application/json; charset=utf-8`). */
export function jsonResponse(body: unknown, status = 200, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: { "content-type": "application/json; charset=utf-8", ...headers },
  });
}

/** `{ status: "success", result }` (+ `pagination` for lists). */
export function success(result: unknown, init: { status?: number; headers?: Record<string, string>; pagination?: Pagination } = {}): Response {
  const body: Record<string, unknown> = { status: "success", result };
  if (init.pagination) body.pagination = init.pagination;
  return jsonResponse(body, init.status ?? 200, init.headers);
}

/**
 * The `{id}` path segment of a route, percent-decoded. A malformed %-escape is kept as it is:
 * it matches no id, so the caller answers its 404 rather than a 500.
 */
export function pathId(req: { params: Record<string, string | undefined> }): string {
  const raw = req.params.id ?? "";
  try {
    return decodeURIComponent(raw);
  } catch {
    return raw;
  }
}
