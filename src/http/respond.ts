/**
 * Response helpers: the success envelope of docs/reference.md § Conventions. Every JSON
 * answer of the API (errors too: src/http/router.ts builds them here) carries
 * `Cache-Control: no-store`: answers may carry secrets, and none may be kept by a cache.
 */
import type { Pagination } from "./envelopes";
import type { HeaderDoc } from "./operation";

/** A response whose body is JSON text already (`application/json; charset=utf-8`, `Cache-Control: no-store`). */
function jsonTextResponse(text: string, status: number, headers: Record<string, string> = {}): Response {
  return new Response(text, { status, headers: { "content-type": "application/json; charset=utf-8", "cache-control": "no-store", ...headers } });
}

/** A JSON response (`application/json; charset=utf-8`). */
export function jsonResponse(body: unknown, status = 200, headers: Record<string, string> = {}): Response {
  return jsonTextResponse(JSON.stringify(body), status, headers);
}

/** `{ status: "success", result }` (+ `pagination` for lists). */
export function success(result: unknown, init: { status?: number; headers?: Record<string, string>; pagination?: Pagination } = {}): Response {
  const body: Record<string, unknown> = { status: "success", result };
  if (init.pagination) body.pagination = init.pagination;
  return jsonResponse(body, init.status ?? 200, init.headers);
}

/**
 * The success envelope around a result that is JSON text already: `{"status":"success",
 * "result":<resultJson>}` (+ `,"pagination":{…}`), the same bytes as `success` would send for
 * the parsed value. Course listings use it (src/courses/read.ts): SQLite builds each record's
 * JSON, and parsing and serializing it again would cost the Worker more than the query (a page
 * of 100 courses with every include is about 160 KB).
 *
 * @param resultJson valid JSON text; the caller answers for it (nothing here parses it).
 */
export function successRaw(resultJson: string, init: { headers?: Record<string, string>; pagination?: Pagination | Record<string, unknown> } = {}): Response {
  const pagination = init.pagination ? `,"pagination":${JSON.stringify(init.pagination)}` : "";
  return jsonTextResponse(`{"status":"success","result":${resultJson}${pagination}}`, 200, init.headers);
}

/** A response as first sent and stored for an `Idempotency-Key` (src/db/idempotency.ts). */
export interface StoredAnswer {
  status: number;
  /** The exact body text. */
  body: string;
  location: string | null;
}

/**
 * The stored answer of an idempotent request as a response (docs/reference.md § "Conventions":
 * idempotent creation): the same status, body and `location`, plus `Idempotent-Replayed:
 * true` when it is a replay, and the `extra` headers derived from the stored body (e.g. `etag`).
 */
export function storedAnswer(answer: StoredAnswer, replayed: boolean, extra: Record<string, string> = {}): Response {
  const headers: Record<string, string> = { ...extra };
  if (answer.location !== null) headers.location = answer.location;
  if (replayed) headers["idempotent-replayed"] = "true";
  return jsonTextResponse(answer.body, answer.status, headers);
}

/** `Idempotent-Replayed` of a response that may be a replay, for the document. */
export const replayedHeader: Record<string, HeaderDoc> = {
  "Idempotent-Replayed": {
    description: "`true` when this is the stored answer of an earlier request with the same `Idempotency-Key` (nothing was written again); absent otherwise.",
    schema: { type: "string", enum: ["true"] },
    example: "true",
  },
};
