/**
 * The SchoolHub's SQLite schema (its own Durable Object storage, not D1), applied in the
 * hub's constructor before any call reaches the object, the pruning of its log and when the
 * next pruning is due. Every statement the alarm runs reads through an index or a primary
 * key, a bounded number of rows (docs/architecture.md § Bounded work and storage).
 * The hub keeps registrations (and their tombstones), the school's ordered event log with
 * the registrations each event is addressed to, and idempotency keys; each registration's
 * queue and attempt log live in its courier (courier/storage.ts).
 */
import { RETENTION_MS } from "../../lib/limits";
import { applyMigrations } from "../platform/sqlite-migrations";
import { pruneSpans } from "./change-spans";
import { accrueMissed } from "./missed";

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
  [
    // A tombstone's addressed events: `forgotten` 0 while its `targets` rows remain (the alarm
    // deletes them, `pruneDeleted`), 1 once they are gone; live registrations stay 0.
    `ALTER TABLE webhooks ADD COLUMN forgotten INTEGER NOT NULL DEFAULT 0`,
    // The alarm's reads of registrations, each through one of these (tombstones accumulate for
    // 7 days): the live ones (`deleted_at IS NULL`) and the oldest tombstone; tombstones still
    // being forgotten, or old enough to prune; couriers by state (closes to retry).
    `CREATE INDEX webhooks_deleted ON webhooks (deleted_at)`,
    `CREATE INDEX webhooks_forgetting ON webhooks (forgotten, deleted_at)`,
    `CREATE INDEX webhooks_courier ON webhooks (courier, deleted_at)`,
    // A tombstone keeps only what the deregistration promise needs (docs/reference.md § DELETE):
    // tombstones made before `tombstone` erased these too lose them now, once.
    `UPDATE webhooks SET url = '', events = '[]', description = NULL, filter = NULL, created_by = NULL WHERE deleted_at IS NOT NULL`,
  ],
  [
    // The id of the API key behind each registration's last change by a request (POST,
    // PATCH, rotation: `updatedBy`), so that a revoked key's changes can be found. Rows
    // stored before it: their creator, the only key known to have changed them.
    `ALTER TABLE webhooks ADD COLUMN updated_by TEXT`,
    `UPDATE webhooks SET updated_by = created_by WHERE deleted_at IS NULL AND created_by IS NOT NULL`,
  ],
  // The first failed attempt of a registration's failure streak once its courier's
  // `webhook.failing` notice is accepted, cleared by `webhook.recovered` (`failingSince`).
  [`ALTER TABLE webhooks ADD COLUMN failing_since INTEGER`],
  [
    // Each registration's `ordering` (docs/reference.md § "Event delivery", ordering): a new one
    // is stored with the value it was given (`course` by default); those stored before read
    // `none`, the delivery they had (a PATCH opts in).
    `ALTER TABLE webhooks ADD COLUMN ordering TEXT NOT NULL DEFAULT 'none'`,
  ],
  [
    // How deliveries are signed (`v1`: `secret` is a `whsec_` secret; `v1a`: `secret` and
    // `previous_secret` are `whsk_` ed25519 private keys, `public_key` the current one's
    // `whpk_` public key, answered), and what they carry (`full` or `thin`).
    `ALTER TABLE webhooks ADD COLUMN signature_scheme TEXT NOT NULL DEFAULT 'v1'`,
    `ALTER TABLE webhooks ADD COLUMN public_key TEXT`,
    `ALTER TABLE webhooks ADD COLUMN payload TEXT NOT NULL DEFAULT 'full'`,
  ],
  [
    // What the retention dropped unsent, per registration (hub/missed.ts): `total` ever,
    // `pending` and the range not yet acknowledged by its courier; gone with its tombstone.
    `CREATE TABLE missed (
       webhook_id TEXT PRIMARY KEY,
       total INTEGER NOT NULL,
       pending INTEGER NOT NULL,
       from_at TEXT,
       to_at TEXT,
       change INTEGER
     ) WITHOUT ROWID`,
    `CREATE TRIGGER missed_forgotten AFTER UPDATE OF forgotten ON webhooks WHEN NEW.forgotten = 1
     BEGIN DELETE FROM missed WHERE webhook_id = NEW.id; END`,
    // Per day of acceptance, the log positions and change numbers it holds (hub/change-spans.ts).
    `CREATE TABLE change_spans (day INTEGER PRIMARY KEY, first_seq INTEGER NOT NULL, last_seq INTEGER NOT NULL, min_change INTEGER, max_change INTEGER)`,
  ],
  [
    // A DELETE erases the registration's stored answers (they hold its secret) in its own
    // step, through this index (`eraseAnswers` of hub/idempotency.ts); those of registrations
    // deleted before it are erased now.
    `CREATE INDEX idempotency_keys_location ON idempotency_keys (location)`,
    `UPDATE idempotency_keys SET status = 404, body = '', location = NULL WHERE location IN (SELECT '/v3/webhooks/' || id FROM webhooks WHERE deleted_at IS NOT NULL)`,
  ],
  // The scopes of the API key that created each registration (docs/reference.md § Scopes):
  // what its deliveries may carry (hub/courier-config.ts). Those stored before: every scope
  // of that time, as every key had.
  [`ALTER TABLE webhooks ADD COLUMN scopes TEXT NOT NULL DEFAULT 'courses:read courses:write students:read webhooks:read webhooks:write events:read portal'`],
];

/** `webhooks.courier`: nothing was ever handed to the registration's courier. */
export const COURIER_NONE = 0;
/** `webhooks.courier`: its courier may hold state (a hand-over or a call was made). */
export const COURIER_OPEN = 1;
/** `webhooks.courier`: the registration is deleted and its courier confirmed closed. */
export const COURIER_CLOSED = 2;

/**
 * Applies pending MIGRATIONS (synchronous; call it in the constructor). `upTo`: only the first
 * `upTo` of them (tests build an older schema to test a later migration on).
 */
export function migrate(sql: SqlStorage, upTo = MIGRATIONS.length): void {
  applyMigrations(sql, MIGRATIONS.slice(0, upTo));
}

/**
 * Deletes the at most PRUNE_CHUNK oldest events accepted before the retention at `now` (ms),
 * with their targets, and at most PRUNE_CHUNK idempotency keys older than `keyTtlMs`. Each
 * statement reads through an index (`events_created`, `targets_seq`, `idempotency_keys_created`)
 * and the primary keys: the rows it deletes, never the rest of the log.
 *
 * @returns whether more remain to prune (the caller comes back soon).
 */
export function pruneLog(sql: SqlStorage, now: number, keyTtlMs: number): boolean {
  const seqs = sql
    .exec<{ seq: number }>(`SELECT seq FROM events WHERE created_at < ? ORDER BY created_at LIMIT ?`, now - RETENTION_MS, PRUNE_CHUNK)
    .toArray()
    .map((r) => r.seq);
  if (seqs.length > 0) {
    const list = JSON.stringify(seqs);
    // What goes unsent is summed for its registration's notice first (hub/missed.ts).
    accrueMissed(sql, list);
    sql.exec(`DELETE FROM events WHERE seq IN (SELECT value FROM json_each(?))`, list);
    // At most PRUNE_CHUNK events × MAX_WEBHOOKS targets: bounded too.
    sql.exec(`DELETE FROM targets WHERE seq IN (SELECT value FROM json_each(?))`, list);
  }
  pruneSpans(sql, now);
  const keys = sql.exec(
    `DELETE FROM idempotency_keys WHERE key IN (SELECT key FROM idempotency_keys WHERE created_at <= ? LIMIT ?)`,
    now - keyTtlMs,
    PRUNE_CHUNK,
  ).rowsWritten;
  return seqs.length >= PRUNE_CHUNK || keys >= PRUNE_CHUNK;
}

/**
 * When the next pruning is due (ms): the instant the oldest retained row passes its
 * retention — an event or a tombstone after RETENTION_MS, an idempotency key after
 * `keyTtlMs` — or 0 (now) while a tombstone's addressed events remain to be forgotten.
 * Three index lookups (`events_created`, `idempotency_keys_created`, `webhooks_forgetting`).
 *
 * @returns the instant, or `null` when nothing is retained (no alarm is owed).
 */
export function nextPruneAt(sql: SqlStorage, keyTtlMs: number): number | null {
  if (sql.exec(`SELECT 1 FROM webhooks WHERE forgotten = 0 AND deleted_at IS NOT NULL LIMIT 1`).toArray().length > 0) return 0;
  const oldest = sql
    .exec<{ event: number | null; key: number | null; tombstone: number | null }>(
      `SELECT (SELECT MIN(created_at) FROM events) AS event, (SELECT MIN(created_at) FROM idempotency_keys) AS key,
         (SELECT MIN(deleted_at) FROM webhooks WHERE forgotten = 1) AS tombstone`,
    )
    .one();
  // Pruned once strictly older than the retention (as the feed's CURSOR_EXPIRED), a key at its TTL.
  const due = [
    oldest.event === null ? null : oldest.event + RETENTION_MS + 1,
    oldest.key === null ? null : oldest.key + keyTtlMs,
    oldest.tombstone === null ? null : oldest.tombstone + RETENTION_MS + 1,
  ].filter((at): at is number => at !== null);
  return due.length > 0 ? Math.min(...due) : null;
}
