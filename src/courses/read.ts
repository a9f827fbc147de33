/**
 * Course reads: the API key lookup and one page of courses in exactly one D1 round trip
 * (`db.batch`), whatever the filters and includes (DESIGN.md § "Invariants").
 */
import { and, eq, isNull } from "drizzle-orm";
import { getDb } from "../db/client";
import { apiKeys } from "../db/schema";
import type { RequestContext } from "../http/context";
import { errors } from "../http/errors";
import { type CourseQuery, toCourseQuery } from "./filters";
import { type CourseRow, selectCoursePage } from "./query";
import { toCourseRecord } from "./record";
import { type CourseRecord, courseNotFound } from "./schemas";

/**
 * Runs the key lookup and the page statement in one `db.batch`.
 *
 * @returns the records of the page and whether another page exists.
 * @throws ApiError 401 UNAUTHORIZED when the key is unknown or revoked.
 */
export async function readCoursePage(
  d1: D1Database,
  rc: RequestContext,
  keyHash: string,
  q: CourseQuery,
): Promise<{ records: CourseRecord[]; hasMore: boolean }> {
  const db = getDb(d1);
  const [keyRows, rows] = await rc.db(() =>
    db.batch([
      db
        .select({ schoolId: apiKeys.schoolId })
        .from(apiKeys)
        .where(and(eq(apiKeys.keyHash, keyHash), isNull(apiKeys.revokedAt))),
      selectCoursePage(db, { keyHash }, q),
    ]),
  );
  if (keyRows.length === 0) throw errors.unauthorized();
  const page = (rows as CourseRow[]).slice(0, q.limit);
  return { records: page.map(toCourseRecord), hasMore: rows.length > q.limit };
}

/**
 * Reads one course of the key's school (one D1 round trip).
 *
 * @throws ApiError 404 COURSE_NOT_FOUND, 401 UNAUTHORIZED.
 */
export async function readCourse(d1: D1Database, rc: RequestContext, keyHash: string, id: string, include: CourseQuery["include"]): Promise<CourseRecord> {
  const q: CourseQuery = { ...toCourseQuery({ courseId: [id], limit: 1 }), include };
  const { records } = await readCoursePage(d1, rc, keyHash, q);
  if (records.length === 0) throw courseNotFound(id);
  return records[0]!;
}
