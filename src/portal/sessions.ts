/**
 * Portal sessions in D1 (docs/reference.md § "Portal sessions"): minting a `ps_` token for a school,
 * revoking all of a school's tokens, pruning ended ones. A token is stored only as its
 * SHA-256 hash, with its school, its end and its read-only flag; src/http/auth.ts resolves
 * it on each request.
 */
import type { D1Timer } from "../http/context";
import { randomCredential, sha256Hex } from "../lib/crypto";

/** How long an expired session's row is kept, in ms: for a day its 401 says why. */
const ENDED_RETENTION_MS = 24 * 60 * 60 * 1000;

/** A new portal session, as POST /v3/portal-sessions answers it (before the URL is added). */
export interface NewPortalSession {
  /** The token (`ps_…`); only its hash is stored. */
  token: string;
  /** ms since the epoch. */
  expiresAt: number;
  readOnly: boolean;
}

/**
 * Mints a token for `schoolId` and stores its hash (one D1 write, on the primary).
 *
 * @param expiresInSeconds the session's length (the operation validated it: 60–604800).
 * @param now ms since the epoch.
 */
export async function createPortalSession(
  d1: D1Database,
  timed: D1Timer,
  schoolId: string,
  opts: { expiresInSeconds: number; readOnly: boolean },
  now = Date.now(),
): Promise<NewPortalSession> {
  const token = randomCredential("ps_");
  const expiresAt = now + opts.expiresInSeconds * 1000;
  const tokenHash = await sha256Hex(token);
  await timed(() =>
    d1
      .prepare("INSERT INTO portal_sessions (token_hash, school_id, created_at, expires_at, read_only) VALUES (?, ?, ?, ?, ?)")
      .bind(tokenHash, schoolId, now, expiresAt, opts.readOnly ? 1 : 0)
      .run(),
  );
  return { token, expiresAt, readOnly: opts.readOnly };
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
 * Deletes the sessions that expired more than a day ago (the cron sweep, by the expiry
 * index). Until then the 401 of an ended token says why it no longer works; a revoked
 * session goes once it would have expired.
 *
 * @returns the number of rows deleted.
 */
export async function prunePortalSessions(d1: D1Database, now = Date.now()): Promise<number> {
  const r = await d1
    .prepare("DELETE FROM portal_sessions WHERE expires_at <= ?")
    .bind(now - ENDED_RETENTION_MS)
    .run();
  return r.meta.changes ?? 0;
}
