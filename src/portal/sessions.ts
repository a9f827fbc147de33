/**
 * Portal sessions in D1 (docs/reference.md § Portal sessions): minting a `ps_` token for a
 * school (at most 100 live and 1,000 stored per school), redeeming a link's token for a
 * session token (a link opens once; a session token is never redeemed), revoking all of a
 * school's tokens, pruning ended and revoked ones. A token is stored only as its
 * SHA-256 hash, with its school, its end, its read-only flag, its scopes and the id of the API key that
 * minted it (revoking the key revokes its sessions: src/db/api-keys.ts); src/http/auth.ts
 * resolves it on each request.
 */
import type { D1Timer } from "../http/context";
import { ApiError, errors } from "../http/errors";
import { randomCredential, sha256Hex } from "../lib/crypto";
import { PRUNE_ROWS } from "../lib/invocation-budget";
import { MAX_LIVE_PORTAL_SESSIONS, MAX_STORED_PORTAL_SESSIONS } from "../lib/limits";
import { formatScopes, type Scope, sessionScopes } from "../lib/scopes";

/** How long an expired or revoked session's row is kept, in ms: for a day its 401 says why. */
const ENDED_RETENTION_MS = 24 * 60 * 60 * 1000;

/** A new portal session, as POST /v3/portal-sessions answers it (before the URL is added). */
export interface NewPortalSession {
  /** The token (`ps_…`); only its hash is stored. */
  token: string;
  /** ms since the epoch. */
  expiresAt: number;
  readOnly: boolean;
  /** The session's scopes (docs/reference.md § Scopes). */
  scopes: Scope[];
}

/**
 * Mints a token for `schoolId` and stores its hash with `keyId`, the minting key (one D1
 * round trip, on the primary): the insert, the counts of the school's sessions and the key's
 * state are one batch, so the caps hold under concurrent mints and a key revoked meanwhile
 * mints nothing. The stored cap counts each live link twice (its row and the one its redeem
 * will add), so that a redeem never passes it.
 *
 * @param opts.expiresInSeconds the session's length (the operation validated it: 60–604800);
 *   `opts.scopes` the session's, at most the key's (the operation checked them).
 * @param now ms since the epoch.
 * @throws ApiError 409 PORTAL_SESSION_LIMIT_REACHED (100 live sessions, or 1,000 stored rows
 *   counting live links twice, already), 401
 *   UNAUTHORIZED (the key was revoked meanwhile).
 */
export async function createPortalSession(
  d1: D1Database,
  timed: D1Timer,
  schoolId: string,
  keyId: string | null,
  opts: { expiresInSeconds: number; readOnly: boolean; scopes: Scope[] },
  now = Date.now(),
): Promise<NewPortalSession> {
  const token = randomCredential("ps_");
  const expiresAt = now + opts.expiresInSeconds * 1000;
  const tokenHash = await sha256Hex(token);
  const live = "SELECT count(*) FROM portal_sessions WHERE school_id = ?1 AND expires_at > ?2 AND revoked_at IS NULL";
  const stored = `SELECT (SELECT count(*) FROM portal_sessions WHERE school_id = ?1)
    + (SELECT count(*) FROM portal_sessions WHERE school_id = ?1 AND expires_at > ?2 AND revoked_at IS NULL AND link = 1)`;
  const keyAlive = "(?3 IS NULL OR EXISTS (SELECT 1 FROM api_keys WHERE id = ?3 AND revoked_at IS NULL))";
  const [inserted, state] = await timed(() =>
    d1.batch<{ n?: number; alive?: number }>([
      d1
        .prepare(
          `INSERT INTO portal_sessions (token_hash, school_id, created_at, expires_at, read_only, key_id, link, scopes)
           SELECT ?4, ?1, ?2, ?5, ?6, ?3, 1, ?9 WHERE (${live}) < ?7 AND (${stored}) + 2 <= ?8 AND ${keyAlive} RETURNING 1 AS n`,
        )
        .bind(
          schoolId,
          now,
          keyId,
          tokenHash,
          expiresAt,
          opts.readOnly ? 1 : 0,
          MAX_LIVE_PORTAL_SESSIONS,
          MAX_STORED_PORTAL_SESSIONS,
          formatScopes(opts.scopes),
        ),
      d1.prepare(`SELECT ${keyAlive} AS alive`).bind(schoolId, now, keyId),
    ]),
  );
  if (inserted!.results.length === 0) throw state!.results[0]?.alive === 1 ? new ApiError("PORTAL_SESSION_LIMIT_REACHED") : errors.unauthorized();
  return { token, expiresAt, readOnly: opts.readOnly, scopes: opts.scopes };
}

/** A redeemed session: the new token and its school (POST /v3/portal-sessions/redeem). */
export interface RedeemedPortalSession extends NewPortalSession {
  school: { id: string; name: string };
}

/**
 * Redeems the link whose token hashes to `tokenHash` (a link opens once): a new session token
 * (not a link) with the same school, read-only flag, scopes, expiry and minting key, and the link revoked, in
 * one D1 batch (one transaction: of two redeems of one link, one wins). Only a link's row
 * is redeemed (src/http/auth.ts refuses a session token before this).
 *
 * @param now ms since the epoch.
 * @throws ApiError 401 UNAUTHORIZED when the token was revoked, redeemed or expired meanwhile.
 */
export async function redeemPortalSession(d1: D1Database, timed: D1Timer, tokenHash: string, now = Date.now()): Promise<RedeemedPortalSession> {
  const token = randomCredential("ps_");
  const newHash = await sha256Hex(token);
  const [inserted] = await timed(() =>
    d1.batch<{ school_id: string; name: string; expires_at: number; read_only: number; scopes: string }>([
      d1
        .prepare(
          `INSERT INTO portal_sessions (token_hash, school_id, created_at, expires_at, read_only, key_id, link, scopes)
           SELECT ?1, school_id, ?2, expires_at, read_only, key_id, 0, scopes FROM portal_sessions
           WHERE token_hash = ?3 AND link = 1 AND revoked_at IS NULL AND expires_at > ?2
           RETURNING school_id, (SELECT name FROM schools WHERE id = school_id) AS name, expires_at, read_only, scopes`,
        )
        .bind(newHash, now, tokenHash),
      d1.prepare("UPDATE portal_sessions SET revoked_at = ?1 WHERE token_hash = ?2 AND revoked_at IS NULL").bind(now, tokenHash),
    ]),
  );
  const row = inserted!.results[0];
  if (!row)
    throw new ApiError("UNAUTHORIZED", "This portal link was used already or its session ended; ask your school's administrator for a new portal link.");
  return {
    token,
    expiresAt: row.expires_at,
    readOnly: row.read_only === 1,
    scopes: sessionScopes(row.scopes, row.read_only === 1),
    school: { id: row.school_id, name: row.name },
  };
}

/**
 * Revokes every token of `schoolId` that still works (one D1 statement): from then on each
 * answers 401.
 *
 * @returns how many tokens were still valid (neither expired nor revoked) and are now revoked.
 */
export async function revokePortalSessions(d1: D1Database, timed: D1Timer, schoolId: string, now = Date.now()): Promise<number> {
  const r = await timed(() =>
    d1.prepare("UPDATE portal_sessions SET revoked_at = ? WHERE school_id = ? AND expires_at > ? AND revoked_at IS NULL").bind(now, schoolId, now).run(),
  );
  return r.meta.changes ?? 0;
}

/**
 * Deletes the sessions that expired, or were revoked, more than a day ago (the cron sweep:
 * one batch of two statements, each by its index, expiry and revocation, each deleting at most
 * `PRUNE_ROWS`; the next run goes on). Until then the 401 of an ended token says why it no
 * longer works.
 *
 * @returns the number of rows deleted.
 */
export async function prunePortalSessions(d1: D1Database, now = Date.now()): Promise<number> {
  const before = now - ENDED_RETENTION_MS;
  const results = await d1.batch([
    d1
      .prepare(
        "DELETE FROM portal_sessions WHERE rowid IN (SELECT rowid FROM portal_sessions INDEXED BY portal_sessions_expires_idx WHERE expires_at <= ? LIMIT ?)",
      )
      .bind(before, PRUNE_ROWS),
    d1
      .prepare(
        "DELETE FROM portal_sessions WHERE rowid IN (SELECT rowid FROM portal_sessions INDEXED BY portal_sessions_revoked_idx WHERE revoked_at <= ? LIMIT ?)",
      )
      .bind(before, PRUNE_ROWS),
  ]);
  return results.reduce((n, r) => n + (r.meta.changes ?? 0), 0);
}
