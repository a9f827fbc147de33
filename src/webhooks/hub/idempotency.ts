/**
 * Idempotency keys of POST /v3/webhooks, kept in the hub's own SQLite (docs/reference.md §
 * "Conventions": idempotent creation). The hub looks a key up, creates the registration and
 * stores the answer in one synchronous step (`transactionSync`), so two racing requests with
 * one key are serialized by the object: the second finds the first one's answer. Keys are
 * honoured for 24 h (the D1 rule of src/db/idempotency.ts); expired rows are deleted at the
 * next lookup. The table is in hub/storage.ts; the alarm prunes it.
 */
import { IDEMPOTENCY_TTL_MS } from "../../db/idempotency";
import type { StoredAnswer } from "../../http/respond";

/** A request's key and the hash of its body (`requestHash`). */
export interface IdempotencyInput {
  key: string;
  hash: string;
}

/**
 * What a key says about a request: nothing yet, the stored answer, another body, or an answer
 * erased because the registration it created was deleted (`eraseAnswers`).
 */
export type KeyLookup = { kind: "new" } | { kind: "replay"; answer: StoredAnswer } | { kind: "mismatch" } | { kind: "erased" };

/** `status` of a key whose answer was erased: its registration was deleted. */
const ERASED = 404;

/**
 * Looks `input.key` up; a key older than 24 h is deleted and counts as new. Synchronous: call it in the
 * same step as the creation and `storeKey`.
 *
 * @param now ms since the epoch.
 */
export function lookupKey(sql: SqlStorage, input: IdempotencyInput, now: number): KeyLookup {
  const row = sql
    .exec<{ request_hash: string; status: number; body: string; location: string | null; created_at: number }>(
      `SELECT request_hash, status, body, location, created_at FROM idempotency_keys WHERE key = ?`,
      input.key,
    )
    .toArray()[0];
  if (!row) return { kind: "new" };
  if (row.created_at <= now - IDEMPOTENCY_TTL_MS) {
    // Expired (its answer holds a secret): gone now, and the alarm prunes the others.
    sql.exec(`DELETE FROM idempotency_keys WHERE key = ?`, input.key);
    return { kind: "new" };
  }
  if (row.request_hash !== input.hash) return { kind: "mismatch" };
  if (row.status === ERASED) return { kind: "erased" };
  return { kind: "replay", answer: { status: row.status, body: row.body, location: row.location } };
}

/** Stores the first answer of `input.key` (same synchronous step as the creation). */
export function storeKey(sql: SqlStorage, input: IdempotencyInput, answer: StoredAnswer, now: number): void {
  sql.exec(
    `INSERT INTO idempotency_keys (key, request_hash, status, body, location, created_at) VALUES (?, ?, ?, ?, ?, ?)`,
    input.key,
    input.hash,
    answer.status,
    answer.body,
    answer.location,
    now,
  );
}

/**
 * Erases the stored answers whose `location` is `location` (a deleted registration's): the body
 * (the record and its secret) and the location go, the key and its body hash stay, so that a
 * replay answers 404 instead of the deleted registration or a new one. Through the index
 * `idempotency_keys_location` (hub/storage.ts); same synchronous step as the DELETE.
 */
export function eraseAnswers(sql: SqlStorage, location: string): void {
  sql.exec(`UPDATE idempotency_keys SET status = ?, body = '', location = NULL WHERE location = ?`, ERASED, location);
}
