/**
 * A WebhookCourier's SQLite schema (its own Durable Object storage), applied in its
 * constructor, and the pruning of its log. A courier keeps its registration's queue (one row
 * per event still to deliver), its attempt log, a copy of each event addressed to it (for
 * resend and recover, with the number of its latest log entry) and, in its KV, its config,
 * cursor, failure streak and closed flag.
 */
import { RETENTION_MS } from "../../lib/limits";
import { applyMigrations } from "../platform/sqlite-migrations";
import { LATENCY_HOUR_MS } from "./latency";

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
  [
    // `requested`: resends and recovers of a queued delivery (an attempt in flight leaves it due).
    `ALTER TABLE queue ADD COLUMN requested INTEGER NOT NULL DEFAULT 0`,
    // `ended`: 'failed' or 'skipped' while the event's latest log entry is (what a recover
    // queues again, read through `events_ended`); the trigger keeps it, `enqueue` clears it.
    `ALTER TABLE events ADD COLUMN ended TEXT`,
    `UPDATE events SET ended = (SELECT l.status FROM log l WHERE l.event_id = events.id ORDER BY l.id DESC LIMIT 1)`,
    `UPDATE events SET ended = NULL WHERE ended NOT IN ('failed', 'skipped')`,
    `CREATE INDEX events_ended ON events (accepted_at) WHERE ended IS NOT NULL`,
    `CREATE TRIGGER log_ended AFTER INSERT ON log WHEN NEW.status IN ('failed', 'skipped')
     BEGIN UPDATE events SET ended = NEW.status WHERE id = NEW.event_id; END`,
  ],
  [
    // `last_attempt`: the number of the event's latest log entry (0: none). It outlives the
    // event's queue rows, so that the log numbers the event's entries 1, 2, … across a
    // resend or recover after its delivery ended (`queue.attempts` restarts with the row).
    `ALTER TABLE events ADD COLUMN last_attempt INTEGER NOT NULL DEFAULT 0`,
    `UPDATE events SET last_attempt = COALESCE((SELECT MAX(l.attempt) FROM log l WHERE l.event_id = events.id), 0)`,
  ],
  [
    // `bytes`: the queued event's body (UTF-8 bytes), so that a hand-over is taken only while
    // the queue is under its bound (queue.ts `QUEUE_MAX_BYTES`). Rows queued before count 0.
    `ALTER TABLE queue ADD COLUMN bytes INTEGER NOT NULL DEFAULT 0`,
    // A page of the delivery log is a merge of two index walks in its order (attempt-log.ts):
    // newest first by (attempted_at, id), also for one event.
    `CREATE INDEX log_at ON log (attempted_at)`,
    `CREATE INDEX log_event_at ON log (event_id, attempted_at)`,
    `DROP INDEX log_event`,
  ],
  [
    // A log entry is one attempt with its own outcome: a failed attempt that a retry follows
    // is `failed` with its `next_attempt_at` (it was `pending`), so that `status=failed` finds
    // it at once. A one-off pass over those rows, through `log_status`.
    `UPDATE log SET status = 'failed' WHERE status = 'pending'`,
    // `ended` still means the delivery ended: a failed entry with a retry due leaves it open.
    `DROP TRIGGER log_ended`,
    `CREATE TRIGGER log_ended AFTER INSERT ON log
       WHEN NEW.status = 'skipped' OR (NEW.status = 'failed' AND NEW.next_attempt_at IS NULL)
     BEGIN UPDATE events SET ended = NEW.status WHERE id = NEW.event_id; END`,
  ],
  [
    // Ordering per course (docs/reference.md § "Event delivery", ordering): `seq` is an event's
    // place in the hub's log (null for a test event and copies kept before it); a queue row
    // carries its event's `course` (`data.course.id`, null for other events and those without
    // `seq`) and `seq`. `held`: 1 while an earlier delivery of its course is queued — the
    // triggers keep exactly the first row of each course by `seq` unheld, on every insert
    // and delete (a resend or recover of an earlier event holds the head it passes). Both
    // probes go through `queue_course`; `queue_ready` walks the unheld in due order. Rows
    // queued before it have no course: never held.
    `ALTER TABLE events ADD COLUMN seq INTEGER`,
    `ALTER TABLE queue ADD COLUMN course TEXT`,
    `ALTER TABLE queue ADD COLUMN seq INTEGER`,
    `ALTER TABLE queue ADD COLUMN held INTEGER NOT NULL DEFAULT 0`,
    `CREATE INDEX queue_course ON queue (course, seq)`,
    `CREATE INDEX queue_ready ON queue (next_attempt_at, id) WHERE held = 0`,
    `CREATE TRIGGER queue_hold AFTER INSERT ON queue WHEN NEW.course IS NOT NULL
     BEGIN
       UPDATE queue SET held = 1 WHERE id = NEW.id AND EXISTS (SELECT 1 FROM queue p WHERE p.course = NEW.course AND p.seq < NEW.seq);
       UPDATE queue SET held = 1 WHERE held = 0 AND id = (SELECT p.id FROM queue p WHERE p.course = NEW.course AND p.seq > NEW.seq ORDER BY p.seq LIMIT 1);
     END`,
    `CREATE TRIGGER queue_release AFTER DELETE ON queue WHEN OLD.course IS NOT NULL AND OLD.held = 0
     BEGIN
       UPDATE queue SET held = 0 WHERE id = (SELECT p.id FROM queue p WHERE p.course = OLD.course ORDER BY p.seq LIMIT 1);
     END`,
  ],
  [
    // Held deliveries have bounds of their own, per course and per registration (course-hold.ts):
    // counted with their bytes, and a course's probed, through this covering partial index.
    `CREATE INDEX queue_held ON queue (course, bytes) WHERE held = 1`,
  ],
  [
    // Delivery latency (latency.ts): per UTC hour, two log-scale histograms of the succeeded
    // attempts sent in it, `delay` (acceptance to 2xx) and `duration`, as key → count; each
    // under 380 keys. Read and pruned in primary-key order. Attempts logged before it count none.
    `CREATE TABLE latency (
       hour INTEGER NOT NULL,
       kind TEXT NOT NULL,
       key INTEGER NOT NULL,
       n INTEGER NOT NULL,
       PRIMARY KEY (hour, kind, key)
     )`,
  ],
];

/** The tables a closed courier empties (`erase`). */
const TABLES = ["queue", "log", "events", "latency"] as const;

/**
 * Applies pending MIGRATIONS (synchronous; call it in the constructor). `upTo`: only the first
 * `upTo` of them (tests build an older schema to test a later migration on).
 */
export function migrate(sql: SqlStorage, upTo = MIGRATIONS.length): void {
  applyMigrations(sql, MIGRATIONS.slice(0, upTo));
}

/** Where a pruning of event copies goes on: after (accepted at, rowid); ms. */
export type PrunePosition = [number, number];

/** The start of the event copies, where a prune begins. */
export const PRUNE_START: PrunePosition = [Number.MIN_SAFE_INTEGER, 0];

/** When idle with a log to prune, the courier's alarm comes back after this long (ms). */
export const PRUNE_INTERVAL_MS = 60 * 60 * 1000;

/**
 * Deletes at most PRUNE_CHUNK log rows older than the retention at `now` (ms) and as many
 * latency histogram rows of hours wholly older than it, and reads at
 * most PRUNE_CHUNK event copies older than it after `from`, deleting those not queued (a
 * delivery still under way keeps its copy; the next pass, from the start, finds it again).
 *
 * @returns whether more remain (the caller comes back soon), and where the next run goes on.
 */
export function pruneLog(sql: SqlStorage, now: number, from: PrunePosition): { more: boolean; next: PrunePosition } {
  const cutoff = now - RETENTION_MS;
  const log = sql.exec(
    `DELETE FROM log WHERE id IN (SELECT id FROM log WHERE attempted_at < ? ORDER BY attempted_at LIMIT ?)`,
    cutoff,
    PRUNE_CHUNK,
  ).rowsWritten;
  const old = sql
    .exec<{ rid: number; accepted_at: number }>(
      `SELECT rowid AS rid, accepted_at FROM events WHERE accepted_at < ?1 AND (accepted_at, rowid) > (?2, ?3) ORDER BY accepted_at, rowid LIMIT ?4`,
      cutoff,
      from[0],
      from[1],
      PRUNE_CHUNK,
    )
    .toArray();
  const last = old.at(-1);
  if (last) {
    sql.exec(
      `DELETE FROM events WHERE rowid IN (SELECT value FROM json_each(?)) AND NOT EXISTS (SELECT 1 FROM queue q WHERE q.event_id = events.id)`,
      JSON.stringify(old.map((r) => r.rid)),
    );
  }
  // Histograms of hours wholly older than the retention, through the primary key.
  const latency = sql.exec(
    `DELETE FROM latency WHERE rowid IN (SELECT rowid FROM latency WHERE hour <= ? LIMIT ?)`,
    cutoff - LATENCY_HOUR_MS,
    PRUNE_CHUNK,
  ).rowsWritten;
  const full = old.length >= PRUNE_CHUNK;
  return { more: log >= PRUNE_CHUNK || latency >= PRUNE_CHUNK || full, next: full && last ? [last.accepted_at, last.rid] : PRUNE_START };
}

/** Whether anything is left to prune or erase one day (the log, event copies, queue or latency histograms are not empty). */
export function hasRetained(sql: SqlStorage): boolean {
  return TABLES.some((table) => sql.exec(`SELECT 1 FROM ${table} LIMIT 1`).toArray().length > 0);
}

/**
 * A closed courier's erasure, one bounded step at a time (docs/architecture.md § Invariants):
 * deletes at most PRUNE_CHUNK rows of each table (its log, event copies, queue, latency), until they
 * are empty and only the closed marker (in KV) and the empty schema are left.
 *
 * @returns whether more remain (the caller comes back soon).
 */
export function erase(sql: SqlStorage): boolean {
  let more = false;
  for (const table of TABLES) {
    more = sql.exec(`DELETE FROM ${table} WHERE rowid IN (SELECT rowid FROM ${table} LIMIT ?)`, PRUNE_CHUNK).rowsWritten >= PRUNE_CHUNK || more;
  }
  return more;
}
