/**
 * A WebhookCourier's SQLite schema (its own Durable Object storage), applied in its
 * constructor, and the pruning of its log. A courier keeps its registration's queue (one row
 * per event still to deliver), its attempt log, a copy of each event addressed to it (for
 * resend and recover) and, in its KV, its config, cursor, failure streak and closed flag.
 */
import { RETENTION_MS } from "../../lib/limits";
import { applyMigrations } from "../platform/sqlite-migrations";

/** Rows one pruning statement deletes at most: an alarm's work stays bounded. */
const PRUNE_CHUNK = 1_000;

/** Schema migrations, applied in order; `meta.schema_version` records how many ran. Append, never edit. */
const MIGRATIONS: string[][] = [
  [
    // Events addressed to the registration (the hub's log, a test event), by id.
    `CREATE TABLE events (
       id TEXT PRIMARY KEY,
       type TEXT NOT NULL,
       body TEXT NOT NULL,
       accepted_at INTEGER NOT NULL
     )`,
    `CREATE INDEX events_accepted ON events (accepted_at)`,
    // The queue: one row per event not yet succeeded or failed; `attempts` made so far.
    `CREATE TABLE queue (
       id INTEGER PRIMARY KEY AUTOINCREMENT,
       event_id TEXT NOT NULL UNIQUE,
       event_type TEXT NOT NULL,
       trigger TEXT NOT NULL,
       attempts INTEGER NOT NULL DEFAULT 0,
       next_attempt_at INTEGER NOT NULL,
       created_at INTEGER NOT NULL
     )`,
    `CREATE INDEX queue_due ON queue (next_attempt_at, id)`,
    `CREATE INDEX queue_unattempted ON queue (created_at) WHERE attempts = 0`,
    // The attempt log: one row per attempt made, or per event skipped while disabled
    // (`attempted_at` then holds when it was skipped, shown as null).
    `CREATE TABLE log (
       id INTEGER PRIMARY KEY AUTOINCREMENT,
       event_id TEXT NOT NULL,
       event_type TEXT NOT NULL,
       attempt INTEGER NOT NULL,
       status TEXT NOT NULL,
       trigger TEXT NOT NULL,
       url TEXT,
       response_status INTEGER,
       error TEXT,
       duration_ms INTEGER,
       response_body TEXT,
       attempted_at INTEGER NOT NULL,
       next_attempt_at INTEGER
     )`,
    `CREATE INDEX log_time ON log (attempted_at, status)`,
    `CREATE INDEX log_event ON log (event_id)`,
    `CREATE INDEX log_status ON log (status, attempted_at)`,
    `CREATE INDEX log_type ON log (event_type, attempted_at)`,
  ],
];

/** Applies pending MIGRATIONS (synchronous; call it in the constructor). */
export function migrate(sql: SqlStorage): void {
  applyMigrations(sql, MIGRATIONS);
}

/**
 * Deletes at most PRUNE_CHUNK log rows and PRUNE_CHUNK event copies older than the retention
 * at `now` (ms); an event still queued keeps its copy.
 *
 * @returns whether more remain (the caller comes back soon).
 */
export function pruneLog(sql: SqlStorage, now: number): boolean {
  const cutoff = now - RETENTION_MS;
  const log = sql.exec(
    `DELETE FROM log WHERE id IN (SELECT id FROM log WHERE attempted_at < ? ORDER BY attempted_at LIMIT ?)`,
    cutoff,
    PRUNE_CHUNK,
  ).rowsWritten;
  const events = sql.exec(
    `DELETE FROM events WHERE id IN (
       SELECT e.id FROM events e WHERE e.accepted_at < ? AND NOT EXISTS (SELECT 1 FROM queue q WHERE q.event_id = e.id)
       ORDER BY e.accepted_at LIMIT ?)`,
    cutoff,
    PRUNE_CHUNK,
  ).rowsWritten;
  return log >= PRUNE_CHUNK || events >= PRUNE_CHUNK;
}

/** Whether anything is left to prune one day (the log or event copies are not empty). */
export function hasRetained(sql: SqlStorage): boolean {
  return sql.exec(`SELECT 1 FROM log LIMIT 1`).toArray().length > 0 || sql.exec(`SELECT 1 FROM events LIMIT 1`).toArray().length > 0;
}
