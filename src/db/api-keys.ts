/**
 * API keys as operators manage them (docs/operations.md § "Operating the service"): the statements of
 * `npm run keys -- create | list | revoke` (scripts/keys.ts). They are import steps
 * (src/db/import-sql.ts), so that the same renderers write them for `wrangler d1 execute`
 * (literal) and for a D1 binding (bound, the tests). A key is stored only as its SHA-256
 * hash, with its id, the operator's label, its last 4 characters, its scopes
 * (src/lib/scopes.ts) and its expiry.
 *
 * Runs in Node and in workerd (Web Crypto only).
 */
import { randomCredential, sha256Hex } from "../lib/crypto";
import { mintId } from "../lib/ids";
import { formatScopes, SCOPES, type Scope, storedScopes } from "../lib/scopes";
import { terminalTextProblem } from "../lib/text";
import type { ImportStep } from "./import-sql";

/** The prefix of the keys operators mint (docs/reference.md § "Conventions": `sk_live_…`). */
const LIVE_KEY_PREFIX = "sk_live_";

/** Longest `--label`, in characters. */
const MAX_LABEL_LENGTH = 200;

/** Longest `--expires-in`: 3,650 days, in ms (a key meant to live longer does not expire). */
const MAX_EXPIRES_IN_MS = 3650 * 86_400_000;

/** ms per unit of `--expires-in`. */
const DURATION_UNITS: Record<string, number> = { d: 86_400_000, h: 3_600_000, m: 60_000 };

/**
 * Reads an `--expires-in` duration: a whole number followed by `d` (days), `h` (hours) or `m`
 * (minutes), e.g. `90d`, `12h`, `30m`; from 1 minute to 3,650 days.
 * @returns the duration in ms, or `{ problem }` saying why it is not one.
 */
export function parseExpiresIn(text: string): number | { problem: string } {
  const m = /^([1-9][0-9]{0,6})([dhm])$/.exec(text);
  const ms = m ? Number(m[1]) * DURATION_UNITS[m[2]!]! : Number.NaN;
  if (!(ms <= MAX_EXPIRES_IN_MS)) return { problem: `"${text}" is not a duration: a whole number and d, h or m (e.g. 90d, 12h, 30m), at most 3650d` };
  return ms;
}

/** A new key: the only moment its plaintext exists outside the operator's hands. */
export interface NewApiKey {
  /** `sk_live_` + 43 characters; printed once, never stored. */
  key: string;
  /** `key_…`, what operators name the key by. */
  id: string;
  schoolId: string;
  label: string | null;
  last4: string;
  /** ms since the epoch. */
  createdAt: number;
  /** Lowercase hex SHA-256 of `key`: what is stored. */
  hash: string;
  /** What the key may do (docs/reference.md § Scopes), in `SCOPES` order. */
  scopes: Scope[];
  /** ms since the epoch from which the key is refused (401); null: it does not expire. */
  expiresAt: number | null;
}

/** What a new key may do and until when: `newApiKey`'s grant. */
export interface KeyGrant {
  /** Absent: every scope (`SCOPES`). */
  scopes?: readonly Scope[];
  /** ms since the epoch; absent or null: the key does not expire. */
  expiresAt?: number | null;
}

/** A stored key as `list` shows it: never the key itself. */
export interface ApiKeyListing {
  id: string;
  label: string | null;
  /** null for a key stored before the last 4 characters were kept. */
  last4: string | null;
  /** ms since the epoch. */
  createdAt: number;
  /** ms since the epoch; null while the key works. */
  revokedAt: number | null;
  /** The stored scope names, in their stored order (every scope for keys stored before scopes). */
  scopes: string[];
  /** ms since the epoch from which the key is refused; null: it does not expire. */
  expiresAt: number | null;
}

/**
 * Why a label cannot be stored, or null when it can: 1–200 characters, no control,
 * bidirectional or zero-width character (`terminalTextProblem`: it is printed in a terminal's table).
 */
export function labelProblem(label: string): string | null {
  if (label.length === 0 || label.length > MAX_LABEL_LENGTH) return `must be 1 to ${MAX_LABEL_LENGTH} characters`;
  return terminalTextProblem(label);
}

/**
 * Mints a key for `schoolId` (not stored yet: see `insertKey`) with `grant`'s scopes (default:
 * every scope) and expiry (default: none).
 */
export async function newApiKey(schoolId: string, label: string | null, now = Date.now(), grant: KeyGrant = {}): Promise<NewApiKey> {
  const key = randomCredential(LIVE_KEY_PREFIX);
  const scopes = SCOPES.filter((s) => (grant.scopes ?? SCOPES).includes(s));
  return {
    key,
    id: mintId("key", now),
    schoolId,
    label,
    last4: key.slice(-4),
    createdAt: now,
    hash: await sha256Hex(key),
    scopes,
    expiresAt: grant.expiresAt ?? null,
  };
}

/**
 * Stores `k` if its school exists. Its rows (`RETURNING id`): one when stored, none when the
 * school is unknown (nothing written).
 */
export function insertKey(k: NewApiKey): ImportStep {
  return {
    kind: "command",
    sql: (v) =>
      `INSERT INTO api_keys (key_hash, school_id, created_at, id, label, last4, scopes, expires_at) SELECT ${v(k.hash)}, ${v(k.schoolId)}, ${v(k.createdAt)}, ${v(k.id)}, ${v(k.label)}, ${v(k.last4)}, ${v(formatScopes(k.scopes))}, ${v(k.expiresAt)} WHERE EXISTS (SELECT 1 FROM schools WHERE id = ${v(k.schoolId)}) RETURNING id`,
  };
}

/**
 * Reads the keys of `schoolId`, oldest first. Its rows: none when the school is unknown; one
 * with `id` null for a school without keys; else one per key (`school_id, id, label, last4,
 * created_at, revoked_at, scopes, expires_at`): read them with `keyListing`.
 */
export function listKeys(schoolId: string): ImportStep {
  return {
    kind: "command",
    sql: (v) =>
      `SELECT s.id AS school_id, k.id, k.label, k.last4, k.created_at, k.revoked_at, k.scopes, k.expires_at FROM schools s LEFT JOIN api_keys k ON k.school_id = s.id WHERE s.id = ${v(schoolId)} ORDER BY k.created_at, k.id`,
  };
}

/** A row of `listKeys`. */
export interface KeyListRow {
  school_id: string;
  id: string | null;
  label: string | null;
  last4: string | null;
  created_at: number | null;
  revoked_at: number | null;
  scopes: string | null;
  expires_at: number | null;
}

/** The rows of `listKeys` as listings; `null` when the school is unknown. */
export function keyListing(rows: readonly KeyListRow[]): ApiKeyListing[] | null {
  if (rows.length === 0) return null;
  return rows
    .filter((r) => r.id !== null)
    .map((r) => ({
      id: r.id!,
      label: r.label,
      last4: r.last4,
      createdAt: r.created_at!,
      revokedAt: r.revoked_at,
      scopes: storedScopes(r.scopes ?? ""),
      expiresAt: r.expires_at,
    }));
}

/**
 * Revokes the key `id` at `now` (a key revoked already keeps its first revocation). Its rows
 * (`RETURNING id, school_id, revoked_at`): none when no key has this id; `revoked_at` other
 * than `now` when it was revoked before. Revoking is for good: nothing un-revokes a key.
 * `npm run keys -- revoke` runs it in one batch with `revokeSessionsOfKey`
 * (docs/operations.md § Keys, logs).
 */
export function revokeKey(id: string, now = Date.now()): ImportStep {
  return {
    kind: "command",
    sql: (v) => `UPDATE api_keys SET revoked_at = coalesce(revoked_at, ${v(now)}) WHERE id = ${v(id)} RETURNING id, school_id, revoked_at`,
  };
}

/**
 * Revokes, at `now`, every live portal session minted with the key `id` or redeemed from one
 * (a redeemed session inherits its key id: docs/reference.md § Portal sessions). Its rows:
 * one per session revoked now. Sent in the same batch as `revokeKey`, so the key and its
 * sessions end in one commit.
 */
export function revokeSessionsOfKey(id: string, now = Date.now()): ImportStep {
  return {
    kind: "command",
    sql: (v) =>
      `UPDATE portal_sessions SET revoked_at = ${v(now)} WHERE key_id = ${v(id)} AND revoked_at IS NULL AND expires_at > ${v(now)} RETURNING 1 AS revoked`,
  };
}
