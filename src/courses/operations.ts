/**
 * The course operations (API.md § "GET /v3/courses" … § "PATCH /v3/courses/{id}"), each
 * declared once: the router and the OpenAPI document are built from these declarations.
 *
 * Reads answer with exactly one D1 round trip, the API key lookup included (src/courses/
 * read.ts); a request that fails validation checks the key first, so 401 comes before 400.
 * Writes commit the rows and the outbox in one batch, then hand the events to the school's
 * hub through `publish` (injected by src/api.ts: the events layer sits above courses).
 */
import type { IRequest } from "itty-router";
import { apiKeyHash, authenticate, schoolOfKey } from "../http/auth";
import type { D1Timer, RequestContext } from "../http/context";
import { ApiError } from "../http/errors";
import { type ErrorCodes, locationHeader, type Operation } from "../http/operation";
import { pathParam, readJson, rejectQuery } from "../http/request";
import { success } from "../http/respond";
import { ID_RE } from "../lib/ids";
import { includeQuerySchema, listQuerySchema, searchBodySchema } from "./filter-schemas";
import { type CourseQuery, parseIncludeQuery, parseListQuery, parseSearchBody } from "./filters";
import { readCourse, readCoursePage } from "./read";
import {
  COURSE_EXAMPLE,
  COURSE_WITH_INCLUDES,
  type CourseEvent,
  courseIdParams,
  courseListResponseSchema,
  courseNotFound,
  courseResponseSchema,
} from "./schemas";
import { createCourseSchema, parseCreateBody, parsePatchBody, patchCourseSchema } from "./write-schemas";
import { createCourse, patchCourse } from "./writes";

/**
 * Hands a committed write's events to the school's hub (`publishEvents` of
 * src/events/outbox.ts); never throws: what it cannot publish the outbox sweep does.
 */
export type PublishEvents = (env: Env, schoolId: string, events: CourseEvent[], timed: D1Timer) => Promise<unknown>;

/** Validates a request, answering 401 before 400: when parsing fails, the key is checked first (an extra round trip on the error path only). */
async function parseAuthenticated<T>(env: Env, rc: RequestContext, keyHash: string, parse: () => T | Promise<T>): Promise<T> {
  try {
    return await parse();
  } catch (err) {
    if (err instanceof ApiError) await schoolOfKey(env.DB, rc, keyHash);
    throw err;
  }
}

async function answerPage(env: Env, rc: RequestContext, keyHash: string, q: CourseQuery): Promise<Response> {
  const { records, hasMore } = await readCoursePage(env.DB, rc, keyHash, q);
  return success(records, { pagination: { page: q.page, limit: q.limit, hasMore } });
}

const queryOf = (req: IRequest) => new URL(req.url).searchParams;

/** The 400 codes of a course write (POST and PATCH), in the order the first missing kind is told. */
const WRITE_400_CODES: ErrorCodes = [
  "VALIDATION_ERROR",
  "UNKNOWN_PARAMETER",
  "INVALID_JSON",
  "INVALID_DATE_RANGE",
  "STUDENTS_NOT_FOUND",
  "GROUPS_NOT_FOUND",
  "PROFESSORS_NOT_FOUND",
  "TRAINING_NOT_FOUND",
  "SURVEY_TEMPLATES_NOT_FOUND",
];

const TAG = { name: "Courses", description: "Courses: list, search, read, create, change." };

/** The course operations; `publish` hands a write's events to the hub. */
export function courseOperations(publish: PublishEvents): Operation<Env>[] {
  return [
    {
      method: "GET",
      path: "/v3/courses",
      operationId: "listCourses",
      tag: TAG,
      summary: "List the school's courses",
      description:
        "Archived and active courses alike, filtered, one page at a time. Order: `startDateTime` ascending, then `id` ascending. Every filter combines with AND. Unknown parameters are a 400 UNKNOWN_PARAMETER; a parameter given twice is a 400 INVALID_PARAMETER, except id lists, whose repetitions are joined.",
      request: { query: listQuerySchema },
      responses: {
        200: {
          description: "One page of courses.",
          schema: courseListResponseSchema,
          example: { status: "success", result: [COURSE_WITH_INCLUDES], pagination: { page: 1, limit: 20, hasMore: true } },
        },
        400: ["INVALID_PARAMETER", "UNKNOWN_PARAMETER", "TOO_MANY_IDS"],
      },
      async handler(req, env, _exec, rc) {
        const keyHash = await apiKeyHash(req);
        const q = await parseAuthenticated(env, rc, keyHash, () => parseListQuery(queryOf(req)));
        return answerPage(env, rc, keyHash, q);
      },
    },
    {
      method: "POST",
      path: "/v3/courses:search",
      operationId: "searchCourses",
      tag: TAG,
      summary: "Search courses (long id lists, sorting)",
      description:
        "The same listing as GET /v3/courses, with the parameters in a JSON body: id lists as arrays of up to 10,000 ids, `courseId` to restrict to given courses, and `sort`. A filter behaves exactly as its GET twin. The query string must be empty (400 UNKNOWN_PARAMETER).",
      request: { body: { schema: searchBodySchema, description: "Filters, page and sort; every field optional." } },
      responses: {
        200: {
          description: "One page of courses.",
          schema: courseListResponseSchema,
          example: { status: "success", result: [COURSE_EXAMPLE], pagination: { page: 1, limit: 10, hasMore: false } },
        },
        400: ["VALIDATION_ERROR", "UNKNOWN_PARAMETER", "INVALID_JSON"],
      },
      async handler(req, env, _exec, rc) {
        const keyHash = await apiKeyHash(req);
        const q = await parseAuthenticated(env, rc, keyHash, async () => {
          const names = [...new Set(queryOf(req).keys())];
          if (names.length > 0) {
            throw new ApiError(
              "UNKNOWN_PARAMETER",
              "POST /v3/courses:search takes its parameters in the JSON body, not the query string.",
              names.map((parameter) => ({ parameter, message: "move it into the JSON body" })),
            );
          }
          return parseSearchBody(await readJson(req));
        });
        return answerPage(env, rc, keyHash, q);
      },
    },
    {
      method: "POST",
      path: "/v3/courses",
      operationId: "createCourse",
      tag: TAG,
      summary: "Create a course",
      description:
        "Creates a course and publishes `course.created` (and `course.professor_signed` for each professor sent already signed). Referenced ids must exist in the school. Answers once the events are durably queued.",
      request: { body: { schema: createCourseSchema, description: "The new course." } },
      responses: {
        201: {
          description: "The course is created.",
          schema: courseResponseSchema,
          example: { status: "success", result: { ...COURSE_EXAMPLE, createdAt: COURSE_EXAMPLE.updatedAt } },
          headers: locationHeader(`/v3/courses/${COURSE_EXAMPLE.id}`),
        },
        400: {
          codes: WRITE_400_CODES,
          lead: "With several kinds of unknown references, the code is that of the first kind in this list's order and `details` lists every missing id.",
        },
      },
      async handler(req, env, _exec, rc) {
        const schoolId = await authenticate(req, env.DB, rc);
        rejectQuery(req);
        const input = parseCreateBody(await readJson(req));
        const timed = rc.db.bind(rc);
        const { course, events } = await createCourse(env.DB, schoolId, input, timed);
        await publish(env, schoolId, events, timed);
        return success(course, { status: 201, headers: { location: `/v3/courses/${course.id}` } });
      },
    },
    {
      method: "GET",
      path: "/v3/courses/{id}",
      operationId: "getCourse",
      tag: TAG,
      summary: "Get one course",
      description: "One course of the school, with the include flags of the list (the only query parameters accepted).",
      request: { params: courseIdParams, query: includeQuerySchema },
      responses: {
        200: { description: "The course.", schema: courseResponseSchema, example: { status: "success", result: COURSE_WITH_INCLUDES } },
        400: ["INVALID_PARAMETER", "UNKNOWN_PARAMETER"],
        404: ["COURSE_NOT_FOUND"],
      },
      async handler(req, env, _exec, rc) {
        const keyHash = await apiKeyHash(req);
        const id = pathParam(req);
        const include = await parseAuthenticated(env, rc, keyHash, () => parseIncludeQuery(queryOf(req)));
        if (!ID_RE.test(id)) {
          await schoolOfKey(env.DB, rc, keyHash);
          throw courseNotFound(id);
        }
        return success(await readCourse(env.DB, rc, keyHash, id, include));
      },
    },
    {
      method: "PATCH",
      path: "/v3/courses/{id}",
      operationId: "updateCourse",
      tag: TAG,
      summary: "Change a course",
      description:
        "Changes only the fields sent; a list sent replaces the whole list; `null` clears `classroom`, `creatorId`, `trainingId`. Publishes, in this order and only for what changed: `course.updated`, then `course.archived` / `course.unarchived`, `course.absences_sent` (false → true), one `course.professor_signed` per professor whose `signed` went false → true. A PATCH that changes nothing publishes nothing and leaves `updatedAt` unchanged.",
      request: { params: courseIdParams, body: { schema: patchCourseSchema, description: "The fields to change." } },
      responses: {
        200: {
          description: "The course after the change.",
          schema: courseResponseSchema,
          example: { status: "success", result: { ...COURSE_EXAMPLE, archived: true } },
        },
        400: { codes: WRITE_400_CODES, lead: "`INVALID_DATE_RANGE` also when only one end moves past the other." },
        404: ["COURSE_NOT_FOUND"],
      },
      async handler(req, env, _exec, rc) {
        const schoolId = await authenticate(req, env.DB, rc);
        rejectQuery(req);
        const id = pathParam(req);
        const patch = parsePatchBody(await readJson(req));
        if (!ID_RE.test(id)) throw courseNotFound(id);
        const timed = rc.db.bind(rc);
        const { course, events } = await patchCourse(env.DB, schoolId, id, patch, timed);
        await publish(env, schoolId, events, timed);
        return success(course);
      },
    },
  ];
}
