/**
 * The events feed (API.md § "Events feed: GET /v3/events"): the school's log read by
 * position, in acceptance order, each item the exact body a registration receives. Reading
 * on from a page's position returns every later event once, with no gap, across restarts:
 * positions are the log's `seq`. Synchronous SQL on the hub's storage.
 */

/** Where a reader is: after `seq`, an event accepted at `at` (ms; for the retention check). */
export interface FeedPosition {
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
export function positionAt(sql: SqlStorage, since: number, now: number): FeedPosition {
  const first = sql.exec<{ seq: number }>(`SELECT seq FROM events WHERE created_at >= ? ORDER BY created_at, seq LIMIT 1`, since).toArray()[0];
  if (first) return { seq: first.seq - 1, at: since };
  return head(sql, now);
}

/** The position after the newest event (`at` its acceptance, or `now` for an empty log). */
export function head(sql: SqlStorage, now: number): FeedPosition {
  const last = sql.exec<{ seq: number; created_at: number }>(`SELECT seq, created_at FROM events ORDER BY seq DESC LIMIT 1`).toArray()[0];
  return last ? { seq: last.seq, at: last.created_at } : { seq: 0, at: now };
}

/** The oldest retained position: before the oldest event. */
export function tail(sql: SqlStorage, now: number): FeedPosition {
  const first = sql.exec<{ seq: number; created_at: number }>(`SELECT seq, created_at FROM events ORDER BY seq LIMIT 1`).toArray()[0];
  return first ? { seq: first.seq - 1, at: first.created_at } : { seq: 0, at: now };
}

/**
 * Up to `limit` events after `from`, of `types` (`null`: every type), in log order. With a
 * type filter, `next` passes over the events of other types read on the way, so a reader
 * never reads them again.
 */
export function readFeed(sql: SqlStorage, from: FeedPosition, types: readonly string[] | null, limit: number): FeedPage {
  const rows = sql
    .exec<{ seq: number; body: string; created_at: number }>(
      types === null
        ? `SELECT seq, body, created_at FROM events WHERE seq > ?1 ORDER BY seq LIMIT ?2`
        : `SELECT seq, body, created_at FROM events WHERE seq > ?1 AND type IN (SELECT value FROM json_each(?3)) ORDER BY seq LIMIT ?2`,
      from.seq,
      limit + 1,
      ...(types === null ? [] : [JSON.stringify(types)]),
    )
    .toArray();
  const page = rows.slice(0, limit);
  const last = page.at(-1);
  if (last) return { bodies: page.map((r) => r.body), next: { seq: last.seq, at: last.created_at }, hasMore: rows.length > limit };
  // Nothing matched: read on from the head, past events of other types.
  const newest =
    types === null
      ? null
      : sql.exec<{ seq: number; created_at: number }>(`SELECT seq, created_at FROM events WHERE seq > ? ORDER BY seq DESC LIMIT 1`, from.seq).toArray()[0];
  return { bodies: [], next: newest ? { seq: newest.seq, at: newest.created_at } : from, hasMore: false };
}
