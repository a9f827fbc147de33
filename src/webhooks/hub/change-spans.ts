/**
 * The change cursor a feed reader resumes from after `410 CURSOR_EXPIRED` (docs/reference.md
 * § "Events feed"; docs/architecture.md § "Where a mirror resumes"). Per day of acceptance the
 * hub keeps one row: the log positions it covers and the lowest and highest change number of
 * its course events. A reader at position p could have missed any event after p: the lowest
 * change number of the days that reach past p, minus 1, is never after one of them. Rows older
 * than SPAN_DAYS go: a position before the oldest row resumes from `chg_0`.
 */
import { decodeChangeCursor, encodeChangeCursor } from "../../lib/change-cursor";

const DAY_MS = 86_400_000;
/** Days of spans kept (rows: one per day with events). */
const SPAN_DAYS = 90;

/** An accepted event's change number: its `changeCursor` decoded for a course event (0 without one), else `null`. */
function changeOf(event: { type: string; changeCursor?: unknown }): number | null {
  if (!event.type.startsWith("course.")) return null;
  return (typeof event.changeCursor === "string" ? decodeChangeCursor(event.changeCursor) : undefined) ?? 0;
}

/**
 * Widens the span of the day of `now` (ms) by the events just stored at `seqs` (their log
 * positions, `events` with their types and cursors), inside the accept step. One upsert.
 */
export function noteSpan(sql: SqlStorage, seqs: readonly number[], events: readonly { type: string; changeCursor?: unknown }[], now: number): void {
  if (seqs.length === 0) return;
  const changes = events.map(changeOf).filter((n): n is number => n !== null);
  const lo = changes.length > 0 ? Math.min(...changes) : null;
  const hi = changes.length > 0 ? Math.max(...changes) : null;
  sql.exec(
    `INSERT INTO change_spans (day, first_seq, last_seq, min_change, max_change) VALUES (?1, ?2, ?3, ?4, ?5)
     ON CONFLICT (day) DO UPDATE SET first_seq = MIN(first_seq, ?2), last_seq = MAX(last_seq, ?3),
       min_change = COALESCE(MIN(min_change, ?4), min_change, ?4), max_change = COALESCE(MAX(max_change, ?5), max_change, ?5)`,
    Math.floor(now / DAY_MS),
    Math.min(...seqs),
    Math.max(...seqs),
    lo,
    hi,
  );
}

/** Drops the spans older than SPAN_DAYS at `now` (ms): at most one row a day, by its key. */
export function pruneSpans(sql: SqlStorage, now: number): void {
  sql.exec(`DELETE FROM change_spans WHERE day < ?`, Math.floor(now / DAY_MS) - SPAN_DAYS);
}

/**
 * The change cursor from which the change query returns every course whose event a reader
 * at log position `after` could have missed: the lowest change number of the spans reaching
 * past it, minus 1; the highest change number known when none of those has a course event
 * (nothing missed was a course change); `chg_0` when spans before `after` are gone (or were
 * never kept). At most SPAN_DAYS rows read.
 */
export function resumeCursorAfter(sql: SqlStorage, after: number): string {
  const row = sql
    .exec<{ first: number | null; lo: number | null; hi: number | null }>(
      `SELECT MIN(first_seq) AS first, MIN(CASE WHEN last_seq > ?1 THEN min_change END) AS lo, MAX(max_change) AS hi FROM change_spans`,
      after,
    )
    .one();
  if (row.first === null || row.first > after + 1) return encodeChangeCursor(0);
  if (row.lo !== null) return encodeChangeCursor(Math.max(0, row.lo - 1));
  return encodeChangeCursor(row.hi ?? 0);
}
