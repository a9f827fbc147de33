/**
 * The SchoolHub's SQLite schema (its own Durable Object storage, not D1), its migrations,
 * applied in the hub's constructor before any call reaches the object, and the retention of
 * its log.
 */

/** How long the delivery log and accepted events are kept, in ms (7 days). */
export const LOG_RETENTION_MS = 7 * 24 * 60 * 60 * 1000;

/**
 * Schema migrations, applied in order; `meta.schema_version` records how many ran.
 * Append, never edit.
 */
const MIGRATIONS: string[][] = [
  [
    `CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)`,
    // Registrations. A deleted one keeps its row (deleted_at set, secret erased) as a tombstone.
    `CREATE TABLE webhooks (
       id TEXT PRIMARY KEY,
       url TEXT NOT NULL,
       events TEXT NOT NULL,
       description TEXT,
       secret TEXT NOT NULL,
       created_at INTEGER NOT NULL,
       deleted_at INTEGER
     )`,
    // Accepted events, by id (publish is idempotent by event id); body = the exact bytes POSTed.
    `CREATE TABLE events (
       id TEXT PRIMARY KEY,
       type TEXT NOT NULL,
       body TEXT NOT NULL,
       created_at INTEGER NOT NULL
     )`,
    `CREATE INDEX events_created ON events (created_at)`,
    // The queue: one row per (event, registration) not yet succeeded or failed.
    `CREATE TABLE deliveries (
       id INTEGER PRIMARY KEY AUTOINCREMENT,
       event_id TEXT NOT NULL,
       webhook_id TEXT NOT NULL,
       attempts INTEGER NOT NULL DEFAULT 0,
       next_attempt_at INTEGER NOT NULL,
       created_at INTEGER NOT NULL,
       UNIQUE (event_id, webhook_id)
     )`,
    `CREATE INDEX deliveries_due ON deliveries (webhook_id, next_attempt_at, id)`,
    `CREATE INDEX deliveries_next ON deliveries (next_attempt_at)`,
    // The log: one row per attempt made.
    `CREATE TABLE attempts (
       id INTEGER PRIMARY KEY AUTOINCREMENT,
       webhook_id TEXT NOT NULL,
       event_id TEXT NOT NULL,
       event_type TEXT NOT NULL,
       attempt INTEGER NOT NULL,
       status TEXT NOT NULL,
       response_status INTEGER,
       error TEXT,
       attempted_at INTEGER NOT NULL,
       next_attempt_at INTEGER
     )`,
    `CREATE INDEX attempts_by_webhook ON attempts (webhook_id, attempted_at)`,
    `CREATE INDEX attempts_by_time ON attempts (attempted_at)`,
  ],
  [
    // The registration's courier (its sending Durable Object, see courier.ts):
    // COURIER_NONE never given an attempt, COURIER_OPEN may have been, COURIER_CLOSED closed
    // by the delete. A tombstone still COURIER_OPEN is a delete whose close is not confirmed.
    `ALTER TABLE webhooks ADD COLUMN courier INTEGER NOT NULL DEFAULT 0`,
  ],
  [
    // Idempotency keys of POST /v3/webhooks (src/webhooks/idempotency.ts): the first answer, 24 h.
    `CREATE TABLE idempotency_keys (
       key TEXT PRIMARY KEY,
       request_hash TEXT NOT NULL,
       status INTEGER NOT NULL,
       body TEXT NOT NULL,
       location TEXT,
       created_at INTEGER NOT NULL
     )`,
  ],
  [
    // The lifecycle (API.md § "PATCH", "Secret rotation", "Auto-disable"): enabled state,
    // the previous secret during a rotation's grace, the failure streak (first failed attempt
    // after the last success, ms) and `epoch`, bumped at each disable, which the courier uses
    // to refuse orders signed before it (courier.ts `hold`).
    `ALTER TABLE webhooks ADD COLUMN enabled INTEGER NOT NULL DEFAULT 1`,
    `ALTER TABLE webhooks ADD COLUMN disabled_reason TEXT`,
    `ALTER TABLE webhooks ADD COLUMN disabled_at INTEGER`,
    `ALTER TABLE webhooks ADD COLUMN updated_at INTEGER`,
    `UPDATE webhooks SET updated_at = created_at`,
    `ALTER TABLE webhooks ADD COLUMN previous_secret TEXT`,
    `ALTER TABLE webhooks ADD COLUMN previous_expires_at INTEGER`,
    `ALTER TABLE webhooks ADD COLUMN failing_since INTEGER`,
    `ALTER TABLE webhooks ADD COLUMN epoch INTEGER NOT NULL DEFAULT 0`,
    // The log's filters (GET …/deliveries) and resend/recover read through these indexes.
    // A `skipped` entry keeps the instant it was skipped in `attempted_at` (shown as null).
    `CREATE INDEX attempts_by_event ON attempts (webhook_id, event_id)`,
    `CREATE INDEX attempts_by_status ON attempts (webhook_id, status, attempted_at)`,
    `CREATE INDEX attempts_by_type ON attempts (webhook_id, event_type, attempted_at)`,
  ],
  [
    // GET …/stats (stats.ts) counts a registration's log by time and status from the index
    // alone; it replaces (webhook_id, attempted_at), whose queries it serves as well.
    `CREATE INDEX attempts_by_webhook_status ON attempts (webhook_id, attempted_at, status)`,
    `DROP INDEX IF EXISTS attempts_by_webhook`,
  ],
  [
    // Deliveries not attempted yet, by registration and queued time: the stats' `pending`
    // and the log's queued entries read a window of them, not the whole queue.
    `CREATE INDEX deliveries_unattempted ON deliveries (webhook_id, created_at) WHERE attempts = 0`,
  ],
];

/** `webhooks.courier`: no attempt was ever queued for the registration. */
export const COURIER_NONE = 0;
/** `webhooks.courier`: a delivery was queued, so its courier may have been used. */
export const COURIER_OPEN = 1;
/** `webhooks.courier`: the registration is deleted and its courier confirmed closed. */
export const COURIER_CLOSED = 2;

/** Applies pending MIGRATIONS (synchronous; call it in the constructor). */
export function migrate(sql: SqlStorage): void {
  sql.exec(`CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)`);
  const row = sql.exec<{ value: string }>(`SELECT value FROM meta WHERE key = 'schema_version'`).toArray()[0];
  let version = row ? Number(row.value) : 0;
  while (version < MIGRATIONS.length) {
    for (const statement of MIGRATIONS[version]!) sql.exec(statement);
    version += 1;
    sql.exec(`INSERT OR REPLACE INTO meta (key, value) VALUES ('schema_version', ?)`, String(version));
  }
}

/**
 * Drops log rows and finished events older than LOG_RETENTION_MS at `now` (ms), and
 * (defensively) queued deliveries whose event or active registration is missing.
 */
export function pruneLog(sql: SqlStorage, now: number): void {
  sql.exec(
    `DELETE FROM deliveries
     WHERE NOT EXISTS (SELECT 1 FROM events e WHERE e.id = deliveries.event_id)
        OR NOT EXISTS (SELECT 1 FROM webhooks w WHERE w.id = deliveries.webhook_id AND w.deleted_at IS NULL)`,
  );
  const cutoff = now - LOG_RETENTION_MS;
  sql.exec(`DELETE FROM attempts WHERE attempted_at < ?`, cutoff);
  sql.exec(`DELETE FROM events WHERE created_at < ? AND NOT EXISTS (SELECT 1 FROM deliveries d WHERE d.event_id = events.id)`, cutoff);
}
