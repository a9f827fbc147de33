/**
 * A school's daily quota of write bytes (docs/reference.md § "Event quota"): each course
 * write adds the bytes of the events it publishes and of the rows it stores to the school's
 * row of the UTC day (`event_bytes`, src/db/shard-schema.ts) in the write's own batch; the
 * row's CHECK refuses a total over the quota, which rolls the batch back whole. D1 runs a batch as one transaction
 * on the shard's primary, one at a time, so concurrent writes cannot both pass the quota.
 * The cron prunes the days before today.
 */
import { type SQL, sql } from "drizzle-orm";
import { utf8Bytes } from "../lib/batches";
import { DEFAULT_EVENT_BYTES_PER_DAY } from "../lib/limits";
import { DAY_MS, utcDay } from "../lib/time";

/** The last `EVENT_BYTES_PER_DAY` read and its value: a deployment's var is read once per isolate. */
let lastRead: { text: string | undefined; bytes: number } | null = null;

/**
 * Reads `EVENT_BYTES_PER_DAY`: a positive whole number of bytes; missing or malformed → the
 * default, 100,000,000 (a malformed value is logged, once per isolate and value).
 */
export function parseEventBytesPerDay(text: string | undefined): number {
  if (lastRead !== null && lastRead.text === text) return lastRead.bytes;
  let bytes = DEFAULT_EVENT_BYTES_PER_DAY;
  if (text !== undefined && /^\d{1,15}$/.test(text.trim()) && Number(text) > 0) bytes = Number(text);
  else if (text !== undefined) console.warn(`EVENT_BYTES_PER_DAY "${text}" is malformed; using ${DEFAULT_EVENT_BYTES_PER_DAY} bytes.`);
  lastRead = { text, bytes };
  return bytes;
}

/**
 * Where a school's move starts reading `event_bytes` at `now` (ms): after yesterday's key, so
 * it copies and checks today's count only — past days are the cron's to prune, on each shard
 * on its own time, and must not make the two copies differ (src/db/move.ts).
 */
export const eventBytesMoveStart = (now: number): string => JSON.stringify([utcDay(now) - 1]);

/** Whole seconds from `ms` (ms since the epoch) to the start of the next UTC day: 1 to 86,400. */
export const secondsToNextUtcDay = (ms: number): number => Math.ceil(((utcDay(ms) + 1) * DAY_MS - ms) / 1000);

/**
 * How many bytes of a shard's pages one byte of row values takes, per kind of row a course
 * write stores, indexes included (docs/operations.md § "Deployment settings (wrangler vars)"): measured
 * with SQLite's page count over the shard's migrations (a course row with 1,000 students, and
 * 3,000 courses of 3, ids of 26 and 64 characters: 7.8–9.2 for a course row and its 14 indexes
 * and name trigrams, 3.2–3.7 for a relation row and its 2 or 3 copies, 1.0–1.5 for a record
 * part), rounded up.
 */
export const STORED_FACTOR = { course: 10, relation: 4, part: 2 } as const;

/** Bytes of one row's values as `storedBytes` counts them: UTF-8 of each text, 8 a number, 1 a null. */
export const rowValueBytes = (values: readonly (string | number | null)[]): number =>
  values.reduce<number>((n, v) => n + (typeof v === "string" ? utf8Bytes(v) : v === null ? 1 : 8), 0);

/**
 * The statement that counts a write's bytes, for the write's own batch: adds `bytes` (its
 * events) and `stored` (the rows it writes) to the school's row of the UTC day of `at`, when
 * `guard` holds (the write's compare-and-set: a write that lost its race is not counted),
 * and stores `bytesPerDay` as the row's quota. Over it (`bytes + stored_bytes`), the row's
 * CHECK fails the statement and so the batch (`isQuotaRefusal`).
 *
 * @param bytes UTF-8 bytes of the write's event bodies (an SQL expression when part of them
 *   is known only in the batch, e.g. the `changeCursor` it takes).
 * @param stored bytes the write stores, at `STORED_FACTOR` (SQL when part of them, the
 *   record parts, is built in the batch).
 * @param at the write's instant by the Worker's clock (ms since the epoch).
 */
export function countEventBytes(schoolId: string, bytes: number | SQL, stored: number | SQL, bytesPerDay: number, at: number, guard: SQL): SQL {
  return sql`INSERT INTO event_bytes (school_id, day, bytes, stored_bytes, quota) SELECT ${schoolId}, ${utcDay(at)}, ${bytes}, ${stored}, ${bytesPerDay} WHERE ${guard}
    ON CONFLICT (school_id, day) DO UPDATE SET bytes = bytes + excluded.bytes, stored_bytes = stored_bytes + excluded.stored_bytes, quota = excluded.quota`;
}

/** Whether a failed write batch was refused by the quota (the CHECK of `event_bytes`). */
export const isQuotaRefusal = (err: unknown): boolean => err instanceof Error && /CHECK constraint failed: event_bytes_within_quota/.test(err.message);

/**
 * Deletes the counters of the oldest UTC day before that of `now` (the cron), through
 * `event_bytes_day_idx`: one day a run, so at most one counter per school of the shard in
 * one statement (the cron runs every minute: a day's counters are gone a minute after it).
 *
 * @returns the number of rows deleted.
 */
export async function pruneEventBytes(d1: D1Database, now = Date.now()): Promise<number> {
  const r = await d1.prepare("DELETE FROM event_bytes WHERE day = (SELECT min(day) FROM event_bytes) AND day < ?").bind(utcDay(now)).run();
  return r.meta.changes ?? 0;
}
