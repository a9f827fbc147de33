/**
 * The error envelope of docs/reference.md § "Conventions", built in one place: `ApiError` carries a
 * code of the catalogue (src/http/error-catalogue.ts), whose status it takes; the router
 * turns it into `{ status: "error", code, message, details?, requestId }`.
 */

import type { ErrorBody, ErrorDetail } from "./envelopes";
import { ERRORS, type ErrorCode } from "./error-catalogue";

/**
 * An error that becomes a contract error response. Throw it from any handler; the router
 * turns it into the envelope (`toErrorBody`). Anything else thrown becomes a 500
 * INTERNAL_ERROR whose message carries no stack and no SQL.
 */
export class ApiError extends Error {
  /** HTTP status (4xx/5xx), the catalogue's for `code`. */
  readonly status: number;

  /**
   * @param code a code of the catalogue; it sets the status.
   * @param message what to do, for a human; defaults to the catalogue's fixed message.
   * @param details every problem found (`parameter` or `path`, and a message).
   * @param headers extra response headers (e.g. `allow` on a 405).
   */
  constructor(
    readonly code: ErrorCode,
    message?: string,
    readonly details?: ErrorDetail[],
    readonly headers?: Record<string, string>,
  ) {
    const entry: { status: number; message?: string } = ERRORS[code];
    super(message ?? entry.message ?? code);
    this.name = "ApiError";
    this.status = entry.status;
  }

  /** The same error with `headers` added to its response headers. */
  withHeaders(headers: Record<string, string>): ApiError {
    return new ApiError(this.code, this.message, this.details, { ...this.headers, ...headers });
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
    status: ERRORS.INTERNAL_ERROR.status,
    body: {
      status: "error",
      code: "INTERNAL_ERROR",
      message: `An unexpected error occurred. Quote request id ${requestId} when reporting it.`,
      requestId,
    },
  };
}

/** The errors of the transport itself (authentication, routing). */
export const errors = {
  unauthorized: () => new ApiError("UNAUTHORIZED"),
  /** 401 for an `Authorization` header without the `Bearer` scheme or without a credential after it. */
  wrongScheme: () => new ApiError("UNAUTHORIZED", ERRORS.UNAUTHORIZED.variants.scheme),
  /** 401 for a portal link's token on an operation other than the redeem. */
  linkToken: () => new ApiError("UNAUTHORIZED", ERRORS.UNAUTHORIZED.variants.link),
  /** 403 for a valid credential without `scope`, which the operation needs (docs/reference.md § Scopes). */
  missingScope: (scope: string) => new ApiError("FORBIDDEN", ERRORS.FORBIDDEN.variants.scope.replace("<scope>", scope)),
  notFound: (path: string) => new ApiError("NOT_FOUND", `No route matches ${path}.`),
  methodNotAllowed: (method: string, allowed: string[]) =>
    new ApiError("METHOD_NOT_ALLOWED", `${method} is not allowed here; use ${allowed.join(", ")}.`, undefined, { allow: allowed.join(", ") }),
};
