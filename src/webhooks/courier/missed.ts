/**
 * The gaps of a registration's deliveries (docs/reference.md § "Missed events"): what was
 * dropped unsent, summed as one `Gap` — a count, the range of the events' `createdAt` and the
 * lowest change number among the course events. Read from the courier's event copies in SQL
 * (bounded lists of ids); the notice itself and test events never count (missed-notice.ts).
 */

import { decodeChangeCursor } from "../../lib/change-cursor";

/** Dropped deliveries summed: count, first and last `createdAt` (ISO), lowest change number (`null`: no course event). */
export type Gap = {
  missed: number;
  from: string;
  to: string;
  /** The lowest change number of a missed course event (0 for one without `changeCursor`: resume from the start); `null`: none. */
  change: number | null;
};

/** The notice's type: never counted as missed itself, so it cannot feed back. */
export const EVENTS_MISSED = "webhook.events_missed";

/**
 * The aggregate columns of a gap over event copies `e` (`body`, `type`). A course event's change
 * number is its `changeCursor` (`chg_<n>`) decoded; one stored without it counts 0.
 */
const GAP_COLUMNS = `COUNT(*) AS missed, MIN(e.body ->> '$.createdAt') AS "from", MAX(e.body ->> '$.createdAt') AS "to",
  MIN(CASE WHEN e.type LIKE 'course.%' THEN COALESCE(CAST(substr(e.body ->> '$.changeCursor', 5) AS INTEGER), 0) END) AS change`;
const COUNTED = `e.type NOT IN ('${EVENTS_MISSED}', 'webhook.test')`;

/** The gap of the event copies with ids `ids` (a bound list), or `null` when none counts. Primary-key reads. */
export function gapOfEvents(sql: SqlStorage, ids: readonly string[]): Gap | null {
  if (ids.length === 0) return null;
  return gapRow(sql.exec<Gap>(`SELECT ${GAP_COLUMNS} FROM events e WHERE e.id IN (SELECT value FROM json_each(?)) AND ${COUNTED}`, JSON.stringify(ids)).one());
}

/**
 * The gap of queue rows `ids` (a bound list) about to end skipped, with the gaps of any
 * `webhook.events_missed` notice among them folded back in (its gap goes on, uncounted again).
 */
export function gapOfQueued(sql: SqlStorage, ids: readonly number[]): Gap | null {
  if (ids.length === 0) return null;
  const list = JSON.stringify(ids);
  let gap = gapRow(
    sql
      .exec<Gap>(`SELECT ${GAP_COLUMNS} FROM queue q JOIN events e ON e.id = q.event_id WHERE q.id IN (SELECT value FROM json_each(?)) AND ${COUNTED}`, list)
      .one(),
  );
  const notices = sql.exec<{ body: string }>(
    `SELECT e.body FROM queue q JOIN events e ON e.id = q.event_id WHERE q.id IN (SELECT value FROM json_each(?)) AND e.type = '${EVENTS_MISSED}'`,
    list,
  );
  for (const { body } of notices) gap = mergeGaps(gap, gapOfNotice(body));
  return gap;
}

/** The gap a `webhook.events_missed` body reports (its `resumeCursor` is its lowest change number − 1). */
function gapOfNotice(body: string): Gap {
  const data = (JSON.parse(body) as { data: { from: string; to: string; missed: number; resumeCursor: string | null } }).data;
  const resume = data.resumeCursor === null ? undefined : decodeChangeCursor(data.resumeCursor);
  return { missed: data.missed, from: data.from, to: data.to, change: resume === undefined ? null : resume + 1 };
}

function gapRow(row: Gap): Gap | null {
  return row.missed > 0 ? { missed: row.missed, from: row.from, to: row.to, change: row.change === null ? null : Number(row.change) } : null;
}

/** Two gaps as one: counts added, the wider range, the lower change number. */
export function mergeGaps(a: Gap | null, b: Gap | null): Gap | null {
  if (a === null || b === null) return a ?? b;
  const change = a.change === null ? b.change : b.change === null ? a.change : Math.min(a.change, b.change);
  return { missed: a.missed + b.missed, from: a.from < b.from ? a.from : b.from, to: a.to > b.to ? a.to : b.to, change };
}
