/**
 * Authentication and scope (docs/reference.md § "Conventions", § "Portal sessions"):
 * `Authorization: Bearer <credential>`: an API key `sk_…` (every operation of its school), or
 * a portal session token `ps_…`, only on operations declaring `portalTokens`
 * (src/http/operation.ts), a read-only one only on their GETs and those declaring
 * `readOnlyTokens` (else 403 FORBIDDEN); a link's token (minted by POST /v3/portal-sessions,
 * not yet redeemed) only on the operation declaring `portalLinks`, the redeem (else 401),
 * where a redeemed session's token gets 403. Both kinds are stored as SHA-256 hashes in the
 * directory and belong to one school, whose shard the same query reads. The scope lives in
 * the operations' declarations, never in paths: this module only compares.
 */
import { sha256Hex } from "../lib/crypto";
import { API_KEY_PATTERN, PORTAL_TOKEN_PATTERN } from "../lib/ids";
import { formatInstant } from "../lib/time";
import type { RequestContext } from "./context";
import { ApiError, errors } from "./errors";

const BEARER_RE = new RegExp(`^Bearer\\s+(${API_KEY_PATTERN}|${PORTAL_TOKEN_PATTERN})\\s*$`);

/** Where to get a new portal token, for the 401 messages of ended sessions. */
const NEW_LINK = "ask your school's administrator for a new portal link";

/**
 * The well-formed credential of a request's `Authorization` header (an `sk_` key or a `ps_`
 * token), or `undefined`. No D1 read: the rate limiter counts by it before anyone knows
 * whether it exists.
 */
export function bearerCredential(request: Request): string | undefined {
  return BEARER_RE.exec(request.headers.get("authorization") ?? "")?.[1];
}

/** A well-formed credential's kind: a portal session token (`ps_…`) or an API key. */
export const credentialKind = (credential: string): "key" | "portal" => (credential.startsWith("ps_") ? "portal" : "key");

/** A header that names the Bearer scheme and something after it (well-formed or not). */
const BEARER_SCHEME_RE = /^Bearer\s+\S/;

/**
 * The request's credential, hashed, and its kind.
 *
 * @throws ApiError 401 when missing or malformed: with the catalogue's `scheme` message when
 *   the header is present but lacks `Bearer ` or a credential after it (docs/reference.md §
 *   Authentication), else the default one.
 */
async function credentialOf(request: Request): Promise<{ kind: "key" | "portal"; hash: string }> {
  const credential = bearerCredential(request);
  if (credential === undefined) {
    const header = request.headers.get("authorization");
    throw header !== null && !BEARER_SCHEME_RE.test(header) ? errors.wrongScheme() : errors.unauthorized();
  }
  return { kind: credentialKind(credential), hash: await sha256Hex(credential) };
}

/**
 * The SHA-256 hex of the request's API key, for the course operations (which take API keys
 * only and send their shard's query together with the directory's check). A portal token is
 * resolved here instead, one D1 query, and refused.
 *
 * @throws ApiError 401 UNAUTHORIZED when the header is missing or malformed, or the token
 *   unknown, expired or revoked; 403 FORBIDDEN for a valid portal token.
 */
export async function apiKeyHash(request: Request, directory: D1Database, rc: RequestContext): Promise<string> {
  const { kind, hash } = await credentialOf(request);
  if (kind === "key") return hash;
  await schoolOfPortalToken(request, directory, rc, hash);
  // Only an operation declared with `portalTokens` gets here, and such an operation must
  // resolve its credential with `authenticate`.
  throw new Error("an operation that resolves API keys in its own statements cannot take portal tokens");
}

/** Where a school's course data lives, as the directory says (docs/reference.md § Database shards). */
export interface SchoolPlace {
  schoolId: string;
  /** The school's name (GET /v3/school). */
  name: string;
  /** The D1 binding of the school's shard (`SHARD_0`, …). */
  shard: string;
  /** Whether a move runs: its course writes answer 503 SCHOOL_MOVING. */
  moving: boolean;
}

/** The directory's columns of a school, joined to a credential's row. */
const PLACE_COLUMNS = "s.name AS name, s.shard AS shard, s.state AS state";

/**
 * Resolves an API key's hash to its school and the school's shard: one directory query, on
 * the primary, so that a key minted a moment ago works at once and a revoked one is refused
 * at once (docs/reference.md § Conventions).
 *
 * @throws ApiError 401 UNAUTHORIZED for unknown or revoked keys.
 */
export async function schoolOfKey(directory: D1Database, rc: RequestContext, keyHash: string): Promise<SchoolPlace> {
  const row = await rc.db(() =>
    directory
      .prepare(`SELECT k.school_id, k.id, ${PLACE_COLUMNS} FROM api_keys k JOIN schools s ON s.id = k.school_id WHERE k.key_hash = ? AND k.revoked_at IS NULL`)
      .bind(keyHash)
      .first<{ school_id: string; id: string; name: string; shard: string; state: string }>(),
  );
  verifiedSchool(rc, row?.school_id, row?.id ?? null);
  return placeOf(rc, row!);
}

/** Records the school's place in the request's context. */
function placeOf(rc: RequestContext, row: { school_id: string; name: string; shard: string; state: string }): SchoolPlace {
  const place = { schoolId: row.school_id, name: row.name, shard: row.shard, moving: row.state !== "active" };
  rc.shard = place.shard;
  return place;
}

/**
 * The verdict of a credential lookup: every lookup ends here, so that the request's context
 * learns its school (the log line) and that its credential is valid (the rate limit then
 * counts that credential by itself, src/http/rate-limit.ts).
 *
 * @param schoolId the school the lookup found for the request's credential, `undefined` for none.
 * @param keyId the id of the API key behind the credential (`RequestContext.keyId`).
 * @returns `schoolId`.
 * @throws ApiError 401 UNAUTHORIZED when `schoolId` is `undefined`.
 */
function verifiedSchool(rc: RequestContext, schoolId: string | undefined, keyId: string | null): string {
  if (schoolId === undefined) throw errors.unauthorized();
  rc.schoolId = schoolId;
  rc.keyId = keyId;
  return schoolId;
}

/**
 * Resolves a portal token's hash (one D1 query) and checks it against the operation being
 * served (`rc.portalTokens`) and the request's method. Within the operation's scope, the
 * session is recorded in `rc.portalSession` (the router sends it as response headers), the
 * read-only check included.
 *
 * @returns the token's school and its shard.
 * @throws ApiError 401 UNAUTHORIZED (unknown, expired or revoked token; a link's token outside
 *   the redeem), 403 FORBIDDEN (an operation that takes API keys only, a change with a
 *   read-only token, a session token on the redeem).
 */
async function schoolOfPortalToken(request: Request, directory: D1Database, rc: RequestContext, tokenHash: string): Promise<SchoolPlace> {
  const row = await rc.db(() =>
    directory
      .prepare(
        `SELECT p.school_id, p.expires_at, p.read_only, p.revoked_at, p.key_id, p.link, ${PLACE_COLUMNS} FROM portal_sessions p JOIN schools s ON s.id = p.school_id WHERE p.token_hash = ?`,
      )
      .bind(tokenHash)
      .first<{
        school_id: string;
        expires_at: number;
        read_only: number;
        revoked_at: number | null;
        key_id: string | null;
        link: number;
        name: string;
        shard: string;
        state: string;
      }>(),
  );
  if (!row) throw errors.unauthorized();
  // Only the holder of the token learns why it no longer works: say so, the portal shows it.
  if (row.revoked_at !== null)
    throw new ApiError("UNAUTHORIZED", `This portal session was revoked, or its link was used already (a link opens once); ${NEW_LINK}.`);
  if (row.expires_at <= Date.now()) throw new ApiError("UNAUTHORIZED", `This portal session ended at ${formatInstant(row.expires_at)}; ${NEW_LINK}.`);
  // A link's token is no bearer until redeemed: before the school is recorded, so that the
  // rate limit does not count it as a verified credential.
  if (row.link === 1 && !rc.portalLinks) throw errors.linkToken();
  verifiedSchool(rc, row.school_id, row.key_id);
  if (row.link !== 1 && rc.portalLinks) {
    throw new ApiError("FORBIDDEN", "This portal session is open already: only a portal link's token (from POST /v3/portal-sessions) is redeemed.");
  }
  if (!rc.portalTokens) {
    throw new ApiError(
      "FORBIDDEN",
      "Portal session tokens can call only the webhook operations (/v3/webhooks…, /v3/events, /v3/event-types), GET /v3/school and the redeem; use an API key for this one.",
    );
  }
  const readOnly = row.read_only === 1;
  rc.portalSession = { expiresAt: row.expires_at, readOnly, tokenHash };
  if (readOnly && request.method !== "GET" && !rc.readOnlyTokens) {
    throw new ApiError("FORBIDDEN", "This portal session is read-only: it can read the webhooks, their deliveries and statistics, and change nothing.");
  }
  return placeOf(rc, row);
}

/**
 * The school of the request's credential and its shard (header check + one directory query
 * on the primary), in the scope of the operation being served: API
 * keys everywhere, portal tokens where the declaration allows.
 *
 * @throws ApiError 401 UNAUTHORIZED (missing, malformed, unknown, expired or revoked), 403
 *   FORBIDDEN (a valid portal token outside its scope).
 */
export async function authenticatePlace(request: Request, directory: D1Database, rc: RequestContext): Promise<SchoolPlace> {
  const { kind, hash } = await credentialOf(request);
  return kind === "key" ? schoolOfKey(directory, rc, hash) : schoolOfPortalToken(request, directory, rc, hash);
}

/** `authenticatePlace`'s school id, for the operations that do not read a shard. */
export async function authenticate(request: Request, directory: D1Database, rc: RequestContext): Promise<string> {
  return (await authenticatePlace(request, directory, rc)).schoolId;
}
