/**
 * Authentication (API.md § "Conventions"): `Authorization: Bearer <api key>`, keys start
 * with `sk_`; a key belongs to exactly one school. Keys are stored only as SHA-256 hashes.
 */
import { sha256Hex } from "../lib/crypto";
import { API_KEY_PATTERN } from "../lib/ids";
import type { RequestContext } from "./context";
import { errors } from "./errors";

const BEARER_RE = new RegExp(`^Bearer\\s+(${API_KEY_PATTERN})\\s*$`);

/**
 * The credential the request presents (the token of a well-formed `Authorization: Bearer
 * <credential>`), not yet verified; `undefined` without one. The rate limit counts by it.
 */
export function bearerCredential(request: Request): string | undefined {
  return BEARER_RE.exec(request.headers.get("authorization") ?? "")?.[1];
}

/**
 * The SHA-256 hex of the request's API key.
 *
 * @throws ApiError 401 UNAUTHORIZED when the header is missing or malformed.
 */
export async function apiKeyHash(request: Request): Promise<string> {
  const credential = bearerCredential(request);
  if (credential === undefined) throw errors.unauthorized();
  return sha256Hex(credential);
}

/**
 * The verdict of a credential lookup: every lookup ends here, so that the request's context
 * learns its school (the log line) and that its credential is valid (the rate limit then
 * counts that credential by itself, src/http/rate-limit.ts).
 *
 * @param schoolId the school the lookup found for the request's credential, `undefined` for none.
 * @returns `schoolId`.
 * @throws ApiError 401 UNAUTHORIZED when `schoolId` is `undefined`.
 */
export function verifiedSchool(rc: RequestContext, schoolId: string | undefined): string {
  if (schoolId === undefined) throw errors.unauthorized();
  rc.schoolId = schoolId;
  return schoolId;
}

/**
 * Resolves a key hash to its school id with one D1 query.
 *
 * @throws ApiError 401 UNAUTHORIZED for unknown or revoked keys.
 */
export async function schoolOfKey(db: D1Database, rc: RequestContext, keyHash: string): Promise<string> {
  const row = await rc.db(() =>
    db.prepare("SELECT school_id FROM api_keys WHERE key_hash = ? AND revoked_at IS NULL").bind(keyHash).first<{ school_id: string }>(),
  );
  return verifiedSchool(rc, row?.school_id);
}

/**
 * Shorthand: the school of the request's API key (header check + one D1 query).
 *
 * @throws ApiError 401 UNAUTHORIZED.
 */
export async function authenticate(request: Request, db: D1Database, rc: RequestContext): Promise<string> {
  return schoolOfKey(db, rc, await apiKeyHash(request));
}
