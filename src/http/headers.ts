/**
 * Request headers of the contract (docs/reference.md § "Conventions", § "POST /v3/courses — create a course · PATCH /v3/courses/{id} — change one"):
 * `If-Match`, `x-d1-bookmark` and `Idempotency-Key`, each parsed in one place. A malformed
 * header is a 400 INVALID_PARAMETER whose `details` names the header (`parameter`).
 */
import { z } from "zod";
import { ApiError } from "./errors";
import type { HeaderDoc } from "./operation";

const invalidHeader = (name: string, message: string) =>
  new ApiError("INVALID_PARAMETER", `Invalid ${name} header: ${message}.`, [{ parameter: name, message }]);

/**
 * A parsed `If-Match`: `"*"` (any current version) or the strong entity-tags listed, their
 * opaque values unquoted. Weak tags (`W/"3"`) are kept out of `strong`: they never match
 * (RFC 9110 § 13.1.1: If-Match uses the strong comparison).
 */
export type IfMatch = "*" | { strong: readonly string[] };

const ENTITY_TAG = /^\s*(W\/)?"([\x21\x23-\x7e\x80-\xff]*)"\s*$/;

/**
 * Reads `If-Match`: absent → `undefined`.
 *
 * @throws ApiError 400 INVALID_PARAMETER naming `If-Match` when it is neither `*` nor a
 *   comma-separated list of quoted entity-tags.
 */
export function readIfMatch(request: Request): IfMatch | undefined {
  const raw = request.headers.get("if-match");
  if (raw === null) return undefined;
  if (raw.trim() === "*") return "*";
  const strong: string[] = [];
  for (const part of raw.split(",")) {
    const m = ENTITY_TAG.exec(part);
    if (!m) throw invalidHeader("If-Match", 'must be * or a comma-separated list of quoted versions, e.g. "3"');
    if (!m[1]) strong.push(m[2]!);
  }
  return { strong };
}

/** Whether `ifMatch` (absent: no precondition) admits the current entity-tag value `current`. */
export const ifMatchAdmits = (ifMatch: IfMatch | undefined, current: string): boolean =>
  ifMatch === undefined || ifMatch === "*" || ifMatch.strong.includes(current);

/** docs/reference.md § "Read consistency at the edge": 1–256 characters of `[0-9A-Za-z-]`. */
const BOOKMARK_RE = /^[0-9A-Za-z-]{1,256}$/;

/** The name of the bookmark header, in requests and responses. */
export const BOOKMARK_HEADER = "x-d1-bookmark";

/**
 * D1's session constraints (`first-primary`, `first-unconstrained`), which `withSession`
 * takes where a bookmark goes: not a client's to send, or any client could pin its reads
 * to the shard's primary (docs/reference.md § "Read consistency at the edge").
 */
const SESSION_CONSTRAINT_RE = /^first-/i;

/**
 * Reads the client's D1 bookmark: absent → `undefined`.
 *
 * @throws ApiError 400 INVALID_PARAMETER naming `x-d1-bookmark` when it is not 1–256
 *   characters of `[0-9A-Za-z-]`, or is a session constraint (`first-…`).
 */
export function readBookmark(request: Request): string | undefined {
  const raw = request.headers.get(BOOKMARK_HEADER);
  if (raw === null) return undefined;
  if (!BOOKMARK_RE.test(raw)) throw invalidHeader(BOOKMARK_HEADER, "must be 1–256 characters of [0-9A-Za-z-], as received in a response's x-d1-bookmark");
  if (SESSION_CONSTRAINT_RE.test(raw))
    throw invalidHeader(BOOKMARK_HEADER, "must be a bookmark received in a response's x-d1-bookmark, not a session constraint (first-…)");
  return raw;
}

/** docs/reference.md § "Idempotent creation": 1–255 printable ASCII characters. */
const IDEMPOTENCY_KEY_RE = /^[\x20-\x7e]{1,255}$/;

/**
 * Reads `Idempotency-Key`: absent → `undefined`.
 *
 * @throws ApiError 400 INVALID_PARAMETER naming `Idempotency-Key` when it is not 1–255
 *   printable ASCII characters.
 */
export function readIdempotencyKey(request: Request): string | undefined {
  const raw = request.headers.get("idempotency-key");
  if (raw === null) return undefined;
  if (!IDEMPOTENCY_KEY_RE.test(raw)) throw invalidHeader("Idempotency-Key", "must be 1–255 printable ASCII characters");
  return raw;
}

// ---------------------------------------------------------------------------------------
// The same headers for the document (src/openapi/document.ts reads an operation's
// `request.headers` object and its responses' `headers`).

/** The request header `If-Match`, documented. */
export const ifMatchHeaderSchema = z.string().optional().meta({
  description:
    'Optimistic concurrency: `*` (any version) or a comma-separated list of quoted versions (`"3"`, the `ETag` of GET, POST or PATCH of a course). When the course is at another version, nothing is written: 412 PRECONDITION_FAILED. Weak tags (`W/"3"`) never match; anything else is a 400 INVALID_PARAMETER.',
  example: '"3"',
});

/** The request header `x-d1-bookmark`, documented. */
export const bookmarkHeaderSchema = z.string().regex(BOOKMARK_RE).optional().meta({
  description:
    "The latest `x-d1-bookmark` this client received: the read is served from data at least as fresh as that response (its own writes included). Without it a read may be served by a replica a few seconds behind. 1–256 characters `[0-9A-Za-z-]`, not a D1 session constraint (`first-primary`, `first-unconstrained`, any value starting `first-`), else 400 INVALID_PARAMETER.",
  example: "00000085-0000024c-00004c6d-8e61117bf38d7adb71b934ebbf891683",
});

/** The request header `Idempotency-Key`, documented. */
export const idempotencyKeyHeaderSchema = z.string().regex(IDEMPOTENCY_KEY_RE).optional().meta({
  description:
    "1–255 printable ASCII characters. For 24 h, a request with the same key, school and body answers exactly as the first (status, body, `location`, plus `Idempotent-Replayed: true`) without writing again, also when two race; another body: 422 IDEMPOTENCY_KEY_MISMATCH.",
  example: "3f2b1c9e-import-2026-09-01",
});

/** `x-d1-bookmark` of a course response (docs/reference.md § "Read consistency at the edge"). */
export const bookmarkResponseHeader: Record<string, HeaderDoc> = {
  [BOOKMARK_HEADER]: {
    description: "The D1 session's bookmark after this request: send it back as `x-d1-bookmark` to read data at least this fresh.",
    schema: { type: "string", pattern: BOOKMARK_RE.source },
    example: "00000085-0000024c-00004c6d-8e61117bf38d7adb71b934ebbf891683",
  },
};
