/**
 * Idempotency keys of D1 writes (docs/reference.md § "Conventions": idempotent creation): the first
 * response of a request made with an `Idempotency-Key` is stored in the same D1 batch as
 * the rows it created, so a replay finds either nothing (nothing was written) or the whole
 * answer. Kept 24 h; the cron prunes older rows.
 *
 * Two racing requests with one key: both may find no row; both batches insert the key row,
 * the second fails on the primary key and rolls back whole (a D1 batch is one transaction),
 * and its request then replays the first one's row (`isKeyConflict`).
 */
import { type SQL, sql } from "drizzle-orm";
import type { StoredAnswer } from "../http/respond";
import { sha256Hex } from "../lib/crypto";
import { PRUNE_ROWS } from "../lib/invocation-budget";

/** How long a key is honoured (ms): 24 h. */
export const IDEMPOTENCY_TTL_MS = 24 * 60 * 60 * 1000;

/** A stored first response (status, exact body text, location). */
export type StoredResponse = StoredAnswer;

/** A stored key row: the first request's body hash and its response. */
export interface KeyRow extends StoredResponse {
  requestHash: string;
}

/** The hash a replay must match: SHA-256 hex of the request's JSON body, re-serialized. */
export const requestHash = (body: unknown): Promise<string> => sha256Hex(JSON.stringify(body));

/**
 * Reads the live row of `key` in `schoolId` (one statement), or `undefined`.
 *
 * @param now ms since the epoch; rows older than 24 h are ignored.
 */
export async function findKey(d1: D1Database, schoolId: string, key: string, now = Date.now()): Promise<KeyRow | undefined> {
  const row = await d1
    .prepare("SELECT request_hash, status, body, location FROM idempotency_keys WHERE school_id = ? AND key = ? AND created_at > ?")
    .bind(schoolId, key, now - IDEMPOTENCY_TTL_MS)
    .first<{ request_hash: string; status: number; body: string; location: string | null }>();
  return row ? { requestHash: row.request_hash, status: row.status, body: row.body, location: row.location } : undefined;
}

/**
 * The statements that record a first response, for the write's own batch: an expired row of
 * the key is removed, then the row is inserted (a live row makes the INSERT, and so the
 * batch, fail: see `isKeyConflict`).
 */
export function keyStatements(schoolId: string, key: string, hash: string, response: StoredResponse, now = Date.now()): SQL[] {
  return [
    sql`DELETE FROM idempotency_keys WHERE school_id = ${schoolId} AND key = ${key} AND created_at <= ${now - IDEMPOTENCY_TTL_MS}`,
    sql`INSERT INTO idempotency_keys (school_id, key, request_hash, status, body, location, created_at)
      VALUES (${schoolId}, ${key}, ${hash}, ${response.status}, ${response.body}, ${response.location}, ${now})`,
  ];
}

/** Whether a failed batch failed because another request recorded the same key first. */
export const isKeyConflict = (err: unknown): boolean => err instanceof Error && /UNIQUE constraint failed: idempotency_keys/.test(err.message);

/**
 * Deletes keys older than 24 h (the cron), at most `PRUNE_ROWS` in one statement through
 * `idempotency_keys_created_idx`; the next run goes on.
 *
 * @returns the number of rows deleted.
 */
export async function pruneIdempotencyKeys(d1: D1Database, now = Date.now()): Promise<number> {
  const r = await d1
    .prepare(
      "DELETE FROM idempotency_keys WHERE rowid IN (SELECT rowid FROM idempotency_keys INDEXED BY idempotency_keys_created_idx WHERE created_at <= ? LIMIT ?)",
    )
    .bind(now - IDEMPOTENCY_TTL_MS, PRUNE_ROWS)
    .run();
  return r.meta.changes ?? 0;
}
