/**
 * The events feed (docs/reference.md § "Events feed: GET /v3/events"): the school's log read by
 * position, in acceptance order, each item the exact body a registration receives. Reading
 * on from a page's position returns every later event once, with no gap, across restarts:
 * positions are the log's `seq`. Synchronous SQL on the hub's storage.
 */

import { utf8Bytes } from "../../lib/batches";
import { FEED_PAGE_BYTES, MAX_WAITING_POLLS, RETENTION_MS, WOKEN_FEED_PAGE_BYTES } from "../../lib/limits";
import type { Platform } from "../platform/platform";
import { resumeCursorAfter } from "./change-spans";

/** Where a reader is: after `seq`, an event accepted at `at` (ms; for the retention check). */
interface FeedPosition {
  seq: number;
  at: number;
}

/** One page: the raw bodies, where to read on, and whether more follow already. */
export interface FeedPage {
  bodies: string[];
  next: FeedPosition;
  hasMore: boolean;
}

/** The position just before the first event accepted at or after `since` (ms); the head when none is. */
function positionAt(sql: SqlStorage, since: number, now: number): FeedPosition {
  const first = sql.exec<{ seq: number }>(`SELECT seq FROM events WHERE created_at >= ? ORDER BY created_at, seq LIMIT 1`, since).toArray()[0];
  if (first) return { seq: first.seq - 1, at: since };
  return head(sql, now);
}

/** The position after the newest event (`at` its acceptance, or `now` for an empty log). */
function head(sql: SqlStorage, now: number): FeedPosition {
  const last = sql.exec<{ seq: number; created_at: number }>(`SELECT seq, created_at FROM events ORDER BY seq DESC LIMIT 1`).toArray()[0];
  return last ? { seq: last.seq, at: last.created_at } : { seq: 0, at: now };
}

/** The oldest retained position: before the oldest event. */
function tail(sql: SqlStorage, now: number): FeedPosition {
  const first = sql.exec<{ seq: number; created_at: number }>(`SELECT seq, created_at FROM events ORDER BY seq LIMIT 1`).toArray()[0];
  return first ? { seq: first.seq - 1, at: first.created_at } : { seq: 0, at: now };
}

/** The statement of one type's events after a position (exported for its query-plan test): ?1 type, ?2 after seq, ?3 at most. */
export const FEED_TYPE_SQL = `SELECT seq FROM events WHERE type = ?1 AND seq > ?2 ORDER BY seq LIMIT ?3`;

/** A row of the log as a page reads it. */
type FeedRow = { seq: number; body: string; created_at: number };

/**
 * Up to `limit` events after `from`, of `types` (`null`: every type), in log order, and no more
 * than `maxBytes` of bodies (the first event always). With a type filter, each type is
 * read through the index `events_type` (at most `limit` + 1 each, so a rare type never scans
 * the log), and `next` passes over the events of other types read on the way, so a reader
 * never reads them again. Rows are read one at a time: none past the page's end but one
 * (`hasMore`).
 */
function readFeed(sql: SqlStorage, from: FeedPosition, types: readonly string[] | null, limit: number, maxBytes: number): FeedPage {
  let rows: Iterable<FeedRow> = [];
  if (types === null) {
    rows = sql.exec<FeedRow>(`SELECT seq, body, created_at FROM events WHERE seq > ?1 ORDER BY seq LIMIT ?2`, from.seq, limit + 1);
  } else {
    const seqs = [...new Set(types)]
      .flatMap((type) => sql.exec<{ seq: number }>(FEED_TYPE_SQL, type, from.seq, limit + 1).toArray())
      .map((r) => r.seq)
      .sort((a, b) => a - b)
      .slice(0, limit + 1);
    if (seqs.length > 0) {
      rows = sql.exec<FeedRow>(`SELECT seq, body, created_at FROM events WHERE seq IN (SELECT value FROM json_each(?)) ORDER BY seq`, JSON.stringify(seqs));
    }
  }
  const bodies: string[] = [];
  let last: FeedRow | undefined;
  let bytes = 0;
  for (const row of rows) {
    const size = utf8Bytes(row.body);
    if (last && (bodies.length === limit || bytes + size > maxBytes)) return { bodies, next: { seq: last.seq, at: last.created_at }, hasMore: true };
    bytes += size;
    bodies.push(row.body);
    last = row;
  }
  if (last) return { bodies, next: { seq: last.seq, at: last.created_at }, hasMore: false };
  // Nothing matched: read on from the head, past events of other types.
  const newest =
    types === null
      ? null
      : sql.exec<{ seq: number; created_at: number }>(`SELECT seq, created_at FROM events WHERE seq > ? ORDER BY seq DESC LIMIT 1`, from.seq).toArray()[0];
  return { bodies: [], next: newest ? { seq: newest.seq, at: newest.created_at } : from, hasMore: false };
}

/** A position older than the retention (410 CURSOR_EXPIRED), with the change cursor to resume from (`resumeCursorAfter`). */
export interface FeedExpired {
  expired: true;
  resumeCursor: string;
}

/** What GET /v3/events asks the hub (`after` and `since` mutually exclusive; `waitMs` the long poll). */
export interface FeedQuery {
  after?: FeedPosition;
  since?: number;
  types: string[] | null;
  limit: number;
  waitMs: number;
}

/** The hub's feed readers: pages read, and long polls woken when events are accepted. */
export class FeedReaders {
  private readonly waiters = new Set<() => void>();

  constructor(
    private readonly sql: SqlStorage,
    private readonly platform: Platform,
  ) {}

  /**
   * Events after `after` (a position a previous page returned), or accepted at or after
   * `since` (ms), or from the oldest retained; of `types` (`null`: all); at most `limit`, and
   * at most FEED_PAGE_BYTES of bodies unless one event alone weighs more.
   * With `waitMs` > 0 and nothing to return, waits until an event is accepted (`wake`, no
   * polling) or the time is up — unless 100 readers of the school wait already: then `waitMs`
   * counts as 0 (docs/reference.md § Events feed). A woken reader's page holds at most
   * WOKEN_FEED_PAGE_BYTES of bodies (at least one event; `hasMore` when more follow).
   *
   * @returns the page, or `FeedExpired` for a position older than the 7-day retention.
   */
  async read(query: FeedQuery): Promise<FeedPage | FeedExpired> {
    const now = this.platform.now();
    let from: FeedPosition;
    if (query.after !== undefined) {
      if (query.after.at < now - RETENTION_MS) return { expired: true, resumeCursor: resumeCursorAfter(this.sql, query.after.seq) };
      from = query.after;
    } else from = query.since !== undefined ? positionAt(this.sql, query.since, now) : tail(this.sql, now);
    const deadline = now + (this.waiters.size >= MAX_WAITING_POLLS ? 0 : query.waitMs);
    for (let woken = false; ; woken = true) {
      const page = readFeed(this.sql, from, query.types, query.limit, woken ? WOKEN_FEED_PAGE_BYTES : FEED_PAGE_BYTES);
      const left = deadline - this.platform.now();
      if (page.bodies.length > 0 || left <= 0) {
        // An empty page leaves the reader at the head as of now: nothing before it is missed.
        if (page.bodies.length === 0) page.next = { seq: page.next.seq, at: Math.max(page.next.at, this.platform.now()) };
        return page;
      }
      from = page.next;
      await new Promise<void>((resolve) => {
        const wake = () => {
          timer.cancel();
          this.waiters.delete(wake);
          resolve();
        };
        const timer = this.platform.setTimer(wake, left);
        this.waiters.add(wake);
      });
    }
  }

  /** Wakes every waiting reader (events were accepted). */
  wake(): void {
    for (const wake of [...this.waiters]) wake();
  }
}
