/**
 * The error envelope of API.md § "Conventions" and § "Error codes", built in one place.
 *
 * `{ status: "error", code, message, details?, requestId }` with a real HTTP status.
 */

import type { ErrorBody, ErrorCode, ErrorDetail } from "./schemas";

/**
 * `ErrorDetail` (one problem: a query `parameter` or a JSON `path`, and a message),
 * `ErrorCode` (every code of the contract) and `ErrorBody` (the envelope) are derived from
 * the zod schemas of src/http/schemas.ts, which also generate the OpenAPI document.
 */
export type { ErrorBody, ErrorCode, ErrorDetail } from "./schemas";

/**
 * An error that becomes a contract error response. Throw it from any handler; the router
 * turns it into the envelope (`toErrorBody`). Anything else thrown becomes a 500
 * INTERNAL_ERROR whose message carries no stack and no SQL.
 */
export class ApiError extends Error {
  constructor(
    /** HTTP status (4xx/5xx). */
    readonly status: number,
    readonly code: ErrorCode,
    message: string,
    readonly details?: ErrorDetail[],
    /** Extra response headers (e.g. `allow` on a 405). */
    readonly headers?: Record<string, string>,
  ) {
    super(message);
    this.name = "ApiError";
  }
}

/** Builds the error envelope for `err` (an ApiError or anything else → INTERNAL_ERROR). */
export function toErrorBody(err: unknown, requestId: string): { status: number; body: ErrorBody; headers?: Record<string, string> } {
  if (err instanceof ApiError) {
    const body: ErrorBody = { status: "error", code: err.code, message: err.message, requestId };
    if (err.details && err.details.length > 0) body.details = err.details;
    return { status: err.status, body, headers: err.headers };
  }
  return {
    status: 500,
    body: {
      status: "error",
      code: "INTERNAL_ERROR",
      message: `An unexpected error occurred. Quote request id ${requestId} when reporting it.`,
      requestId,
    },
  };
}

/** Shorthand constructors for the common errors. */
export const errors = {
  unauthorized: () =>
    new ApiError(401, "UNAUTHORIZED", "A valid API key is required: send `Authorization: Bearer sk_…`."),
  notFound: (path: string) => new ApiError(404, "NOT_FOUND", `No route matches ${path}.`),
  methodNotAllowed: (method: string, allowed: string[]) =>
    new ApiError(405, "METHOD_NOT_ALLOWED", `${method} is not allowed here; use ${allowed.join(", ")}.`, undefined, {
      allow: allowed.join(", "),
    }),
  courseNotFound: (id: string) => new ApiError(404, "COURSE_NOT_FOUND", `No course with id "${id}" exists in this school.`),
  webhookNotFound: (id: string) =>
    new ApiError(404, "WEBHOOK_NOT_FOUND", `No webhook registration with id "${id}" exists in this school.`),
  webhookDisabled: (id: string) =>
    new ApiError(409, "WEBHOOK_DISABLED", `Webhook registration "${id}" is disabled; enable it first (PATCH /v3/webhooks/${id} with { "enabled": true }).`),
  eventNotFound: (id: string, eventId: string) =>
    new ApiError(404, "EVENT_NOT_FOUND", `Event "${eventId}" is not retained (7 days) or was never addressed to webhook registration "${id}".`),
};
