/**
 * Authentication and scope (docs/reference.md § "Conventions", § "Portal sessions"):
 * `Authorization: Bearer <credential>`: an API key `sk_…` or a portal session token `ps_…`,
 * the latter only on operations declaring `portalTokens` (src/http/operation.ts), a
 * read-only one on their GETs and `readOnlyTokens` ones (else 403); a link's token (minted by POST /v3/portal-sessions,
 * not yet redeemed) only on the operation declaring `portalLinks`, the redeem (else 401),
 * where a redeemed session's token gets 403. Both kinds are stored as SHA-256 hashes in the
 * directory and belong to one school, whose shard the same query reads, with their scopes
 * (docs/reference.md § Scopes): a credential without one the operation needs is 403 FORBIDDEN
 * as soon as it is resolved, before the operation touches a shard or an object. What each
 * operation takes lives in its declaration, never in paths: this module only compares.
 */
import { sha256Hex } from "../lib/crypto";
import { API_KEY_PATTERN, PORTAL_TOKEN_PATTERN } from "../lib/ids";
import { SCOPES, type Scope, sessionScopes, storedScopes } from "../lib/scopes";
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
  /** The credential's scopes (`RequestContext.scopes`). */
  scopes: readonly Scope[];
}

/** The directory's columns of a school, joined to a credential's row. */
const PLACE_COLUMNS = "s.name AS name, s.shard AS shard, s.state AS state";

/**
 * Resolves an API key's hash to its school and the school's shard: one directory query, on
 * the primary, so that a key minted a moment ago works at once and a revoked or expired one
 * is refused at once (docs/reference.md § Conventions), then checks the key's scopes against
 * the operation's (`rc.scopesNeeded`).
 *
 * @param now ms since the epoch: a key whose `expires_at` is not after it is refused.
 * @throws ApiError 401 UNAUTHORIZED for unknown, revoked or expired keys; 403 FORBIDDEN
 *   naming a scope the operation needs that the key lacks.
 */
export async function schoolOfKey(directory: D1Database, rc: RequestContext, keyHash: string, now = Date.now()): Promise<SchoolPlace> {
  const row = await rc.db(() =>
    directory
      .prepare(
        `SELECT k.school_id, k.id, k.scopes, k.expires_at, ${PLACE_COLUMNS} FROM api_keys k JOIN schools s ON s.id = k.school_id
         WHERE k.key_hash = ? AND k.revoked_at IS NULL AND (k.expires_at IS NULL OR k.expires_at > ?)`,
      )
      .bind(keyHash, now)
      .first<{ school_id: string; id: string; scopes: string; expires_at: number | null; name: string; shard: string; state: string }>(),
  );
  verifiedSchool(rc, row?.school_id, row?.id ?? null);
  rc.keyExpiresAt = row!.expires_at;
  rc.keyScopes = storedScopes(row!.scopes);
  return placeOf(rc, row!, rc.keyScopes);
}

/**
 * Records the credential's scopes and its school's place in the request's context, once the
 * scopes the operation needs are all the credential's.
 *
 * @throws ApiError 403 FORBIDDEN naming the first scope of `rc.scopesNeeded` missing from `scopes`.
 */
function placeOf(rc: RequestContext, row: { school_id: string; name: string; shard: string; state: string }, scopes: readonly Scope[]): SchoolPlace {
  rc.scopes = scopes;
  needScopes(rc);
  const place = { schoolId: row.school_id, name: row.name, shard: row.shard, moving: row.state !== "active", scopes };
  rc.shard = place.shard;
  return place;
}

/**
 * Adds `scopes` to those the request needs (`rc.scopesNeeded`) and, once the credential is
 * verified, checks them all: a request that needs more than its operation declares
 * (`includeStudents=true`: `students:read`) calls it before its work starts.
 *
 * @throws ApiError 403 FORBIDDEN naming the first needed scope the credential lacks.
 */
export function needScopes(rc: RequestContext, ...scopes: Scope[]): void {
  rc.scopesNeeded.push(...scopes);
  if (rc.scopes === undefined) return;
  const have = rc.scopes;
  const missing = rc.scopesNeeded.find((s) => !have.includes(s));
  if (missing !== undefined) throw errors.missingScope(missing);
}

/** Whether `scopes` hold every scope the request needs so far (a cached place's, before a shard read is sent with the check). */
export const coversNeeded = (rc: RequestContext, scopes: readonly Scope[]): boolean => rc.scopesNeeded.every((s) => scopes.includes(s));

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
        `SELECT p.school_id, p.expires_at, p.read_only, p.revoked_at, p.key_id, p.link, p.scopes,
         (SELECT k.scopes FROM api_keys k WHERE k.id = p.key_id) AS key_scopes, ${PLACE_COLUMNS} FROM portal_sessions p JOIN schools s ON s.id = p.school_id WHERE p.token_hash = ?`,
      )
      .bind(tokenHash)
      .first<{
        school_id: string;
        expires_at: number;
        read_only: number;
        revoked_at: number | null;
        key_id: string | null;
        link: number;
        scopes: string;
        key_scopes: string | null;
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
  // A read-only session has only the `:read` scopes of its list (docs/reference.md § Scopes).
  // A session minted before keys were recorded, or whose key row is gone: its key had every scope then.
  rc.keyScopes = row.key_scopes === null ? SCOPES : storedScopes(row.key_scopes);
  return placeOf(rc, row, sessionScopes(row.scopes, readOnly));
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
