/**
 * The error catalogue (docs/reference.md § "Error codes"): every code of the contract, declared once
 * with its HTTP status, when it is answered, and an example message for the document.
 * `ApiError` derives its status from here; the OpenAPI document reads the table and each
 * operation's error responses from here.
 *
 * Some codes are declared before any operation answers them (WEBHOOK_DISABLED,
 * EVENT_NOT_FOUND, PRECONDITION_FAILED, IDEMPOTENCY_KEY_MISMATCH, RATE_LIMITED): an
 * operation documents a code only once it can answer it.
 */
import {
  DEFAULT_EVENT_BYTES_PER_DAY,
  GET_MAX_IDS,
  MAX_BODY_BYTES,
  MAX_LIVE_PORTAL_SESSIONS,
  MAX_STORED_PORTAL_SESSIONS,
  MAX_WEBHOOKS,
  SEARCH_MAX_IDS,
} from "../lib/limits";

/** One entry of the catalogue. */
export interface ErrorEntry {
  /** The HTTP status of the response. */
  status: number;
  /** When the code is answered, as a clause ("a query parameter is malformed …"). */
  when: string;
  /** The message of a code whose message never varies: `ApiError`'s default and the document's example. */
  message?: string;
  /** An example `message` and `details` for the document (else `message`, else `when` capitalized). */
  example?: { message: string; details?: readonly Record<string, string>[] };
  /** Other fixed messages of the code, by the case they name (e.g. UNAUTHORIZED's `scheme`). */
  variants?: Readonly<Record<string, string>>;
}

/** The catalogue: the codes of docs/reference.md § Error codes, each with its status and message. */
export const ERRORS = {
  INVALID_PARAMETER: {
    status: 400,
    when: "a query parameter is malformed, out of range, repeated or at odds with another (`cursor` with `page`), or a listing's `cursor` is not one of its own (`details` names each)",
    example: {
      message: "Invalid query parameter: limit must be an integer from 1 to 100.",
      details: [{ parameter: "limit", message: "must be an integer from 1 to 100" }],
    },
  },
  UNKNOWN_PARAMETER: {
    status: 400,
    when: "a query parameter or body field the operation does not define, a body key `__proto__`, `constructor` or `prototype` at any depth included (the message lists the accepted names and a close match)",
    example: {
      message: 'Unknown query parameter "limt" (did you mean "limit"?). Accepted: …',
      details: [{ parameter: "limt", message: 'unknown; did you mean "limit"?' }],
    },
  },
  TOO_MANY_IDS: { status: 400, when: `a GET id list has more than ${GET_MAX_IDS} ids (use POST /v3/courses:search, up to ${SEARCH_MAX_IDS})` },
  INVALID_JSON: { status: 400, when: "the body is not JSON (UTF-8)" },
  VALIDATION_ERROR: {
    status: 400,
    when: "the body is JSON but breaks the schema, holds a string with an unpaired surrogate or a list of more than 10,000 items (`details` with JSON paths, at most 100)",
    example: { message: "The body breaks the schema: name must not be empty.", details: [{ path: "name", message: "must not be empty" }] },
  },
  INVALID_DATE_RANGE: {
    status: 400,
    when: "a course whose end is not after its start",
    example: { message: "endDateTime must be after startDateTime.", details: [{ path: "endDateTime", message: "must be after startDateTime" }] },
  },
  STUDENTS_NOT_FOUND: { status: 400, when: "the write references students that do not exist in the school (`details` lists them)" },
  GROUPS_NOT_FOUND: { status: 400, when: "the write references groups that do not exist in the school (`details` lists them)" },
  PROFESSORS_NOT_FOUND: { status: 400, when: "the write references professors that do not exist in the school (`details` lists them)" },
  TRAINING_NOT_FOUND: { status: 400, when: "the write references a training that does not exist in the school" },
  SURVEY_TEMPLATES_NOT_FOUND: { status: 400, when: "the write references survey templates that do not exist in the school (`details` lists them)" },
  INVALID_WEBHOOK_URL: {
    status: 400,
    when: "the URL is not https, carries credentials, names a port other than 443 or 8443, or targets an IP address that is not globally reachable unicast (private, loopback, link-local, or any other range of the IANA special-purpose address registries), a single-label host or a special-use or internal name; the message names WEBHOOK_ALLOW_INSECURE_URLS, the deployment's local-development switch, where it would lift the refusal",
    example: {
      message: "The webhook URL is not accepted: the URL must use https. For local development, WEBHOOK_ALLOW_INSECURE_URLS=true lifts this policy.",
      details: [{ path: "url", message: "the URL must use https" }],
    },
  },
  UNAUTHORIZED: {
    status: 401,
    when: "no valid credential: the API key or portal session token is missing, malformed, unknown, expired or revoked, or a portal link's token is used on an operation other than the redeem",
    message: "A valid API key or portal session token is required: send `Authorization: Bearer sk_…` (or `Bearer ps_…` from a portal link).",
    variants: {
      // Told apart from the default message: the header alone shows it, so it says nothing
      // about whether a key exists (an unknown and a revoked key share the default one).
      scheme:
        "The Authorization header must read `Authorization: Bearer <key>`: the `Bearer ` scheme is missing or another one was sent, or no credential follows it.",
      // A link's token (POST /v3/portal-sessions) is no bearer until the portal redeems it.
      link: "This is a portal link's token: open the link (<origin>/portal#token=ps_…) in a browser to sign in; it works only there, once. The portal's session token works on the API.",
    },
  },
  FORBIDDEN: {
    status: 403,
    when: "a valid credential without a scope the operation needs (the message names it; docs/reference.md § Scopes), or a valid portal session token (`ps_…`) used outside its reach: an operation other than the webhook ones, GET /v3/school and the redeem, a change with a read-only token, or the redeem with a session token (only a link's token is redeemed)",
    example: {
      message: "This credential lacks the scope courses:write, which this operation needs; ask the school's administrator for a credential with it.",
    },
    variants: {
      // `<scope>`: the first scope of the operation's (src/http/operation.ts `scopes`) the credential lacks.
      scope: "This credential lacks the scope <scope>, which this operation needs; ask the school's administrator for a credential with it.",
    },
  },
  NOT_FOUND: { status: 404, when: "no such route" },
  COURSE_NOT_FOUND: {
    status: 404,
    when: "the course id does not exist in the school",
    example: { message: 'No course with id "crs_404" exists in this school.' },
  },
  WEBHOOK_NOT_FOUND: {
    status: 404,
    when: "the registration does not exist or no longer exists in the school (a second delete of the same id included), or a replayed `Idempotency-Key` whose registration was deleted",
    example: { message: 'No webhook registration with id "wh_404" exists in this school.' },
  },
  METHOD_NOT_ALLOWED: { status: 405, when: "known path, other method (`allow` lists the methods)" },
  EVENT_NOT_FOUND: { status: 404, when: "the event is not retained (7 days) or was never addressed to this registration" },
  WEBHOOK_LIMIT_REACHED: {
    status: 409,
    when: `the school already has ${MAX_WEBHOOKS} registrations`,
    message: `This school already has ${MAX_WEBHOOKS} webhook registrations; delete one (DELETE /v3/webhooks/{id}) before creating another.`,
  },
  WEBHOOK_DISABLED: { status: 409, when: "test, resend or recover on a disabled registration" },
  PORTAL_SESSION_LIMIT_REACHED: {
    status: 409,
    when: `minting a link: the school already has ${MAX_LIVE_PORTAL_SESSIONS} live portal sessions (revoke them with \`DELETE /v3/portal-sessions\`), or stores ${MAX_STORED_PORTAL_SESSIONS.toLocaleString("en-US")} session rows (a live link counting twice; rows go a day after their end or revocation)`,
    message: `This school already has ${MAX_LIVE_PORTAL_SESSIONS} live portal sessions, or ${MAX_STORED_PORTAL_SESSIONS.toLocaleString("en-US")} stored ones (kept a day after they end or are revoked); revoke live ones (DELETE /v3/portal-sessions) and wait for ended ones to be removed.`,
  },
  CURSOR_EXPIRED: {
    status: 410,
    when: "`GET /v3/events` with a cursor older than the 7-day retention (restart with `since`; `details[0]` names the change cursor to resume from)",
    message:
      "This cursor is older than the 7-day retention of events; read again from an instant with `since`, and read the change query from the change cursor in `details`.",
  },
  PRECONDITION_FAILED: { status: 412, when: "`If-Match` names another version than the course's current one" },
  IDEMPOTENCY_KEY_MISMATCH: { status: 422, when: "an `Idempotency-Key` reused with a different body" },
  RATE_LIMITED: { status: 429, when: "the key (or client IP) exceeded its rate limit; `Retry-After` says when to retry" },
  EVENT_QUOTA_EXCEEDED: {
    status: 429,
    when: `a course write whose events and stored rows would take the school past its daily quota of write bytes (${DEFAULT_EVENT_BYTES_PER_DAY.toLocaleString("en-US")} bytes per UTC day unless the operator set another); \`Retry-After\` says when the next UTC day starts; nothing was written; reads keep working`,
    example: {
      message: `This write would take the school past its quota of ${DEFAULT_EVENT_BYTES_PER_DAY.toLocaleString("en-US")} bytes of events and stored data per UTC day; nothing was written. Course writes resume at 00:00 UTC, in 3600 s (Retry-After); reads keep working.`,
    },
  },
  SCHOOL_MOVING: {
    status: 503,
    when: "a course write while an operator moves the school to another database shard (seconds); `Retry-After` says when to retry; reads keep working",
    message:
      "This school's data is being moved to another database shard: course writes are paused for a few seconds, reads keep working; retry after the Retry-After delay.",
  },
  PAYLOAD_TOO_LARGE: {
    status: 413,
    when: `the body is over ${MAX_BODY_BYTES} bytes (1 MiB)`,
    message: `The body is larger than ${MAX_BODY_BYTES} bytes (1 MiB).`,
  },
  UNSUPPORTED_MEDIA_TYPE: {
    status: 415,
    when: "a body that is not `application/json`",
    message: "Send the body as JSON with `content-type: application/json`.",
  },
  SERVICE_UNAVAILABLE: {
    status: 503,
    when: "`GET /healthz`: a database of the deployment did not answer its probe (`details` names each)",
    message: "A database of this deployment did not answer; see details.",
  },
  INTERNAL_ERROR: {
    status: 500,
    when: "a bug; the message never carries a stack or SQL",
    example: { message: "An unexpected error occurred. Quote request id req_01K4A8Z1M2N3P4Q5R6S7T8V9W0 when reporting it." },
  },
} as const satisfies Record<string, ErrorEntry>;

/** An error code of the contract. */
export type ErrorCode = keyof typeof ERRORS;

/** Every error code, in the catalogue's order. */
export const ERROR_CODES = Object.keys(ERRORS) as [ErrorCode, ...ErrorCode[]];
