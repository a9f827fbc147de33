/**
 * Course reads: one page of courses of a school in one batch on its shard, with the shard's
 * word that it holds the school (docs/reference.md § Database shards). Records come out of
 * SQLite as their final JSON text (src/courses/record.ts) and go to the client as is.
 */
import type { DbSession } from "../db/client";
import { heldQuery } from "../db/shards";
import type { CourseQuery } from "./filters";
import { type CourseRow, selectCoursePage } from "./query";

/** What a read on a shard found: whether the shard holds the school (read in the same batch), and the read's value. */
export interface ShardRead<T> {
  held: boolean;
  value: T;
}

/** A page: its courses (`record`: the JSON text of each, in order) and whether another page exists. */
export interface CoursePage {
  rows: CourseRow[];
  hasMore: boolean;
}

/**
 * Reads one page of `schoolId`'s courses and whether the shard holds the school, in one
 * `db.batch` in the session (a read session: possibly a replica, at least as fresh as the
 * client's bookmark). For `readOnShard` of src/courses/session.ts.
 */
export async function readCoursePage(session: DbSession, schoolId: string, q: CourseQuery): Promise<ShardRead<CoursePage>> {
  const { db } = session;
  const [held, rows] = await db.batch([heldQuery(db, schoolId), selectCoursePage(db, { schoolId }, q)]);
  return { held: held[0]?.held === 1, value: { rows: rows.slice(0, q.limit), hasMore: rows.length > q.limit } };
}
