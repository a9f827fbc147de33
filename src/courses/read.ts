/**
 * Course reads: the API key lookup and one page of courses in exactly one D1 round trip
 * (`db.batch`), whatever the filters and includes (docs/architecture.md § "Invariants"). Records come
 * out of SQLite as their final JSON text (src/courses/record.ts) and go to the client as is.
 */
import { and, eq, isNull } from "drizzle-orm";
import type { DbSession } from "../db/client";
import { apiKeys } from "../db/schema";
import { verifiedSchool } from "../http/auth";
import type { RequestContext } from "../http/context";
import { type CourseQuery, toCourseQuery } from "./filters";
import { type CourseRow, selectCoursePage } from "./query";
import { courseNotFound } from "./schemas";

/**
 * Runs the key lookup and the page statement in one `db.batch`, in the request's D1 session
 * (a read session: possibly a replica, at least as fresh as the client's bookmark).
 *
 * @returns the page's courses (`record`: the JSON text of each course record, in order) and
 *   whether another page exists.
 * @throws ApiError 401 UNAUTHORIZED when the key is unknown or revoked.
 */
export async function readCoursePage(
  session: DbSession,
  rc: RequestContext,
  keyHash: string,
  q: CourseQuery,
): Promise<{ rows: CourseRow[]; hasMore: boolean }> {
  const { db } = session;
  const [keyRows, rows] = await rc.db(() =>
    db.batch([
      db
        .select({ schoolId: apiKeys.schoolId, keyId: apiKeys.id })
        .from(apiKeys)
        .where(and(eq(apiKeys.keyHash, keyHash), isNull(apiKeys.revokedAt))),
      selectCoursePage(db, { keyHash }, q),
    ]),
  );
  verifiedSchool(rc, keyRows[0]?.schoolId, keyRows[0]?.keyId ?? null);
  return { rows: rows.slice(0, q.limit), hasMore: rows.length > q.limit };
}

/**
 * Reads one course of the key's school (one D1 round trip).
 *
 * @returns its version and the JSON text of its record.
 * @throws ApiError 404 COURSE_NOT_FOUND, 401 UNAUTHORIZED.
 */
export async function readCourse(session: DbSession, rc: RequestContext, keyHash: string, id: string, include: CourseQuery["include"]): Promise<CourseRow> {
  const q: CourseQuery = { ...toCourseQuery({ courseId: [id], limit: 1 }), include };
  const { rows } = await readCoursePage(session, rc, keyHash, q);
  if (rows.length === 0) throw courseNotFound(id);
  return rows[0]!;
}
