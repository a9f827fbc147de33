/**
 * A school's daily quota of event bytes (docs/reference.md § "Event quota"): each course
 * write adds the bytes of the events it publishes to the school's row of the UTC day
 * (`event_bytes`, src/db/shard-schema.ts) in the write's own batch; the row's CHECK refuses a
 * total over the quota, which rolls the batch back whole. D1 runs a batch as one transaction
 * on the shard's primary, one at a time, so concurrent writes cannot both pass the quota.
 * The cron prunes the days before today.
 */
import { type SQL, sql } from "drizzle-orm";
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
 * The statement that counts a write's event bytes, for the write's own batch: adds `bytes` to
 * the school's row of the UTC day of `at`, when `guard` holds (the write's compare-and-set:
 * a write that lost its race is not counted), and stores `bytesPerDay` as the row's quota.
 * Over it, the row's CHECK fails the statement and so the batch (`isQuotaRefusal`).
 *
 * @param bytes UTF-8 bytes of the write's event bodies (an SQL expression when part of them
 *   is known only in the batch, e.g. the `changeCursor` it takes).
 * @param at the write's instant by the Worker's clock (ms since the epoch).
 */
export function countEventBytes(schoolId: string, bytes: number | SQL, bytesPerDay: number, at: number, guard: SQL): SQL {
  return sql`INSERT INTO event_bytes (school_id, day, bytes, quota) SELECT ${schoolId}, ${utcDay(at)}, ${bytes}, ${bytesPerDay} WHERE ${guard}
    ON CONFLICT (school_id, day) DO UPDATE SET bytes = bytes + excluded.bytes, quota = excluded.quota`;
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
