/**
 * Response helpers: the success envelope of API.md § "Conventions".
 */
import type { Pagination } from "./envelopes";

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
