/**
 * The SchoolHub's SQLite schema (its own Durable Object storage, not D1), applied in the
 * hub's constructor before any call reaches the object, and the pruning of its log.
 * The hub keeps registrations (and their tombstones), the school's ordered event log with
 * the registrations each event is addressed to, and idempotency keys; each registration's
 * queue and attempt log live in its courier (courier/storage.ts).
 */
import { RETENTION_MS } from "../../lib/limits";
import { applyMigrations } from "../platform/sqlite-migrations";

/** Rows one pruning statement deletes at most: an alarm's work stays bounded. */
export const PRUNE_CHUNK = 1_000;

/** Schema migrations, applied in order; `meta.schema_version` records how many ran. Append, never edit. */
const MIGRATIONS: string[][] = [
  [
    // Registrations. A deleted one keeps its row (deleted_at set, secrets and header values
    // erased) as a tombstone: its id is never reused and a second delete finds nothing.
    // `version` grows at every change (`enabled_version`: the one of the last enable, older
    // failure reports are ignored; `disables` counts the disables, so that a courier that
    // missed one still ends its queue `skipped`); `courier_version` is the newest config its courier
    // acknowledged; `acked_seq` its acknowledged cursor into `events`; `courier` its state
    // (COURIER_NONE / _OPEN / _CLOSED).
    `CREATE TABLE webhooks (
       id TEXT PRIMARY KEY,
       url TEXT NOT NULL,
       events TEXT NOT NULL,
       description TEXT,
       filter TEXT,
       headers TEXT NOT NULL DEFAULT '{}',
       max_per_second INTEGER,
       secret TEXT NOT NULL,
       previous_secret TEXT,
       previous_expires_at INTEGER,
       enabled INTEGER NOT NULL DEFAULT 1,
       disabled_reason TEXT,
       disabled_at INTEGER,
       created_at INTEGER NOT NULL,
       updated_at INTEGER NOT NULL,
       deleted_at INTEGER,
       version INTEGER NOT NULL DEFAULT 1,
       enabled_version INTEGER NOT NULL DEFAULT 1,
       disables INTEGER NOT NULL DEFAULT 0,
       courier_version INTEGER NOT NULL DEFAULT 0,
       acked_seq INTEGER NOT NULL DEFAULT 0,
       courier INTEGER NOT NULL DEFAULT 0
     )`,
    // The school's event log, in acceptance order (`seq`); publish is idempotent by `id`.
    // `body` is the exact JSON a registration receives and the feed returns.
    `CREATE TABLE events (
       seq INTEGER PRIMARY KEY AUTOINCREMENT,
       id TEXT NOT NULL UNIQUE,
       type TEXT NOT NULL,
       body TEXT NOT NULL,
       created_at INTEGER NOT NULL
     )`,
    `CREATE INDEX events_created ON events (created_at)`,
    // Which registrations each event is addressed to (subscription and filter at acceptance;
    // `skipped`: the registration was disabled then). A courier's hand-overs read it by cursor.
    `CREATE TABLE targets (
       webhook_id TEXT NOT NULL,
       seq INTEGER NOT NULL,
       skipped INTEGER NOT NULL DEFAULT 0,
       PRIMARY KEY (webhook_id, seq)
     ) WITHOUT ROWID`,
    `CREATE INDEX targets_seq ON targets (seq)`,
    // Idempotency keys of POST /v3/webhooks (hub/idempotency.ts): the first answer, 24 h.
    `CREATE TABLE idempotency_keys (
       key TEXT PRIMARY KEY,
       request_hash TEXT NOT NULL,
       status INTEGER NOT NULL,
       body TEXT NOT NULL,
       location TEXT,
       created_at INTEGER NOT NULL
     )`,
    `CREATE INDEX idempotency_keys_created ON idempotency_keys (created_at)`,
  ],
  [
    // The feed's `eventType` filter reads each type's events in log order (hub/feed.ts).
    `CREATE INDEX events_type ON events (type, seq)`,
    // Ids of tombstones pruned after the retention: an id is never reused (`registrations.create`).
    `CREATE TABLE deleted_ids (id TEXT PRIMARY KEY) WITHOUT ROWID`,
  ],
  // The id of the API key that created each registration (`createdBy`); null for older rows.
  [`ALTER TABLE webhooks ADD COLUMN created_by TEXT`],
];

/** `webhooks.courier`: nothing was ever handed to the registration's courier. */
export const COURIER_NONE = 0;
/** `webhooks.courier`: its courier may hold state (a hand-over or a call was made). */
export const COURIER_OPEN = 1;
/** `webhooks.courier`: the registration is deleted and its courier confirmed closed. */
export const COURIER_CLOSED = 2;

/** Applies pending MIGRATIONS (synchronous; call it in the constructor). */
export function migrate(sql: SqlStorage): void {
  applyMigrations(sql, MIGRATIONS);
}

/**
 * Deletes at most PRUNE_CHUNK events accepted before the retention at `now` (ms), with their
 * targets, and idempotency keys older than `keyTtlMs`.
 *
 * @returns whether more remain to prune (the caller comes back soon).
 */
export function pruneLog(sql: SqlStorage, now: number, keyTtlMs: number): boolean {
  const cutoff = now - RETENTION_MS;
  const last = sql
    .exec<{ seq: number | null }>(`SELECT MAX(seq) AS seq FROM (SELECT seq FROM events WHERE created_at < ? ORDER BY seq LIMIT ?)`, cutoff, PRUNE_CHUNK)
    .one().seq;
  let more = false;
  if (last !== null) {
    const gone = sql.exec(`DELETE FROM events WHERE seq <= ? AND created_at < ?`, last, cutoff).rowsWritten;
    // At most PRUNE_CHUNK events × MAX_WEBHOOKS targets: bounded too.
    sql.exec(`DELETE FROM targets WHERE seq <= ?`, last);
    more = gone >= PRUNE_CHUNK;
  }
  const keys = sql.exec(
    `DELETE FROM idempotency_keys WHERE key IN (SELECT key FROM idempotency_keys WHERE created_at <= ? LIMIT ?)`,
    now - keyTtlMs,
    PRUNE_CHUNK,
  ).rowsWritten;
  return more || keys >= PRUNE_CHUNK;
}

/** Whether anything is left to prune one day (events, idempotency keys or tombstones). */
export function hasRetained(sql: SqlStorage): boolean {
  return (
    sql.exec(`SELECT 1 FROM events LIMIT 1`).toArray().length > 0 ||
    sql.exec(`SELECT 1 FROM idempotency_keys LIMIT 1`).toArray().length > 0 ||
    sql.exec(`SELECT 1 FROM webhooks WHERE deleted_at IS NOT NULL LIMIT 1`).toArray().length > 0
  );
}
