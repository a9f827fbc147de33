/**
 * Course routes (API.md). Reads — GET /v3/courses, POST /v3/courses:search,
 * GET /v3/courses/{id} — answer with exactly one D1 round trip (`db.batch`), the API key
 * lookup included. Writes — POST /v3/courses, PATCH /v3/courses/{id} — commit the rows and
 * the outbox in one batch, then publish the events to the school's hub.
 */
import { and, eq, isNull } from "drizzle-orm";
import type { IRequest } from "itty-router";
import { getDb } from "../db/client";
import { apiKeys } from "../db/schema";
import type { Env } from "../env";
import { publishEvents } from "../events/outbox";
import { apiKeyHash, authenticate, schoolOfKey } from "../http/auth";
import { readJson } from "../http/body";
import type { RequestContext } from "../http/context";
import { ApiError, errors } from "../http/errors";
import { pathId, success } from "../http/respond";
import { ID_RE } from "../lib/ids";
import { collectQuery, type CourseQuery, parseIncludeQuery, parseListQuery, parseSearchBody, toCourseQuery } from "./filters";
import { selectCoursePage, type CourseRow } from "./query";
import { toCourseRecord, type CourseRecord } from "./record";
import { createCourse, parseCreateBody, parsePatchBody, patchCourse } from "./writes";

/**
 * Runs the key lookup and the page statement in one `db.batch`.
 *
 * @returns the records of the page and whether another page exists.
 * @throws ApiError 401 UNAUTHORIZED when the key is unknown or revoked.
 */
export async function readCoursePage(
  env: Env,
  rc: RequestContext,
  keyHash: string,
  q: CourseQuery,
): Promise<{ records: CourseRecord[]; hasMore: boolean }> {
  const db = getDb(env.DB);
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
 * Validates a request, answering 401 before 400: when parsing fails, the key is checked
 * first (an extra round trip on the error path only).
 */
async function parseAuthenticated<T>(env: Env, rc: RequestContext, keyHash: string, parse: () => T | Promise<T>): Promise<T> {
  try {
    return await parse();
  } catch (err) {
    if (err instanceof ApiError) await schoolOfKey(env, rc, keyHash);
    throw err;
  }
}

async function answerPage(env: Env, rc: RequestContext, keyHash: string, q: CourseQuery): Promise<Response> {
  const { records, hasMore } = await readCoursePage(env, rc, keyHash, q);
  return success(records, { pagination: { page: q.page, limit: q.limit, hasMore } });
}

/** GET /v3/courses */
export async function listCourses(req: IRequest, env: Env, _exec: ExecutionContext, rc: RequestContext): Promise<Response> {
  const keyHash = await apiKeyHash(req);
  const q = await parseAuthenticated(env, rc, keyHash, () => parseListQuery(new URL(req.url).searchParams));
  return answerPage(env, rc, keyHash, q);
}

/** POST /v3/courses:search */
export async function searchCourses(req: IRequest, env: Env, _exec: ExecutionContext, rc: RequestContext): Promise<Response> {
  const keyHash = await apiKeyHash(req);
  const q = await parseAuthenticated(env, rc, keyHash, async () => {
    const params = new URL(req.url).searchParams;
    if ([...params.keys()].length > 0) {
      throw new ApiError(400, "UNKNOWN_PARAMETER", "POST /v3/courses:search takes its parameters in the JSON body, not the query string.", [...new Set(params.keys())].map((parameter) => ({ parameter, message: "move it into the JSON body" })));
    }
    return parseSearchBody(await readJson(req));
  });
  return answerPage(env, rc, keyHash, q);
}

/**
 * Reads one course of the key's school (one D1 round trip).
 *
 * @throws ApiError 404 COURSE_NOT_FOUND, 401 UNAUTHORIZED.
 */
export async function readCourse(env: Env, rc: RequestContext, keyHash: string, id: string, include: CourseQuery["include"]): Promise<CourseRecord> {
  const q: CourseQuery = { ...toCourseQuery({ courseId: [id], limit: 1 }), include };
  const { records } = await readCoursePage(env, rc, keyHash, q);
  if (records.length === 0) throw errors.courseNotFound(id);
  return records[0]!;
}

/** GET /v3/courses/{id} */
export async function getCourse(req: IRequest, env: Env, _exec: ExecutionContext, rc: RequestContext): Promise<Response> {
  const keyHash = await apiKeyHash(req);
  const id = pathId(req);
  const include = await parseAuthenticated(env, rc, keyHash, () => parseIncludeQuery(new URL(req.url).searchParams));
  if (!ID_RE.test(id)) {
    await schoolOfKey(env, rc, keyHash);
    throw errors.courseNotFound(id);
  }
  return success(await readCourse(env, rc, keyHash, id, include));
}

/**
 * POST /v3/courses → 201 with the course and `location`. Answers after the events are in
 * the outbox and (when the hub is reachable) accepted by the school's hub.
 */
export async function postCourse(req: IRequest, env: Env, _exec: ExecutionContext, rc: RequestContext): Promise<Response> {
  const schoolId = await authenticate(req, env, rc);
  rejectQuery(req);
  const input = parseCreateBody(await readJson(req));
  const timed = rc.db.bind(rc);
  const { course, events } = await createCourse(env.DB, schoolId, input, timed);
  await publishEvents(env, schoolId, events, timed);
  return success(course, { status: 201, headers: { location: `/v3/courses/${course.id}` } });
}

/** PATCH /v3/courses/{id} → 200 with the course (unchanged, without events, for a no-op). */
export async function patchCourseRoute(req: IRequest, env: Env, _exec: ExecutionContext, rc: RequestContext): Promise<Response> {
  const schoolId = await authenticate(req, env, rc);
  rejectQuery(req);
  const id = pathId(req);
  const patch = parsePatchBody(await readJson(req));
  if (!ID_RE.test(id)) throw errors.courseNotFound(id);
  const timed = rc.db.bind(rc);
  const { course, events } = await patchCourse(env.DB, schoolId, id, patch, timed);
  await publishEvents(env, schoolId, events, timed);
  return success(course);
}

function rejectQuery(req: IRequest): void {
  const params = new URL(req.url).searchParams;
  collectQuery(params, []);
}
