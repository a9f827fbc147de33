/**
 * Course reads: one page of courses of a school in one batch on its shard, with the shard's
 * word that it holds the school (docs/reference.md § Database shards). Records come out of
 * SQLite as their final JSON text (src/courses/record.ts) and go to the client as is.
 */
import type { DbSession } from "../db/client";
import { heldQuery } from "../db/shards";
import { encodeChangeCursor } from "../lib/change-cursor";
import type { ChangesQuery, CourseQuery } from "./filters";
import { type CourseRow, selectCourseChanges, selectCoursePage, selectLastChange } from "./query";

/** What a read on a shard found: whether the shard holds the school (read in the same batch), and the read's value. */
export interface ShardRead<T> {
  held: boolean;
  value: T;
}

/**
 * A page: its courses (`record`: the JSON text of each, in order), whether another page
 * exists, and the school's change cursor as of the page (`chg_0` before its first change).
 */
export interface CoursePage {
  rows: CourseRow[];
  hasMore: boolean;
  changesCursor: string;
}

/**
 * Reads one page of `schoolId`'s courses, the school's last change number and whether the
 * shard holds the school, in one `db.batch` in the session (a read session: possibly a
 * replica, at least as fresh as the client's bookmark; one batch is one snapshot, so the
 * cursor is the page's). For `readOnShard` of src/courses/session.ts.
 */
export async function readCoursePage(session: DbSession, schoolId: string, q: CourseQuery): Promise<ShardRead<CoursePage>> {
  const { db } = session;
  const [held, rows, last] = await db.batch([heldQuery(db, schoolId), selectCoursePage(db, { schoolId }, q), selectLastChange(db, { schoolId })]);
  return {
    held: held[0]?.held === 1,
    value: { rows: rows.slice(0, q.limit), hasMore: rows.length > q.limit, changesCursor: encodeChangeCursor(last[0]?.seq ?? 0) },
  };
}

/** A page of the change query: its courses' records in change order, the cursor after its last, and whether more follow. */
export interface ChangesPage {
  records: string[];
  nextCursor: string;
  hasMore: boolean;
}

/**
 * Reads one page of the change query (docs/reference.md § "GET /v3/courses/changes") and
 * whether the shard holds the school, in one `db.batch` in the session. `nextCursor` is the
 * cursor of the page's last change, or of `q.after` when the page is empty.
 */
export async function readCourseChanges(session: DbSession, schoolId: string, q: ChangesQuery): Promise<ShardRead<ChangesPage>> {
  const { db } = session;
  const [held, rows] = await db.batch([heldQuery(db, schoolId), selectCourseChanges(db, { schoolId }, q)]);
  const page = rows.slice(0, q.limit);
  return {
    held: held[0]?.held === 1,
    value: { records: page.map((r) => r.record), nextCursor: encodeChangeCursor(page.at(-1)?.changeSeq ?? q.after), hasMore: rows.length > q.limit },
  };
}
