/**
 * The course operations (docs/reference.md § "GET /v3/courses" … § "POST /v3/courses — create a course · PATCH /v3/courses/{id} — change one"), each
 * declared once: the router and the OpenAPI document are built from these declarations.
 *
 * Reads answer with one round trip of latency on a warm isolate: the directory's check of
 * the key and the page's batch on the school's shard go out together (src/courses/
 * session.ts); a request that fails validation checks the key first, so 401 comes before 400.
 * Writes commit the rows and the outbox in one batch, then hand the events to the school's
 * hub through `publish` (injected by src/api.ts: the events layer sits above courses).
 */
import type { IRequest } from "itty-router";
import { z } from "zod";
import { parseEventBytesPerDay } from "../db/event-quota";
import { findKey, isKeyConflict, type KeyRow, keyStatements, requestHash, type StoredResponse } from "../db/idempotency";
import { apiKeyHash, schoolOfKey } from "../http/auth";
import { readJson } from "../http/body";
import type { D1Timer, RequestContext } from "../http/context";
import { ApiError } from "../http/errors";
import {
  BOOKMARK_HEADER,
  bookmarkHeaderSchema,
  bookmarkResponseHeader,
  idempotencyKeyHeaderSchema,
  ifMatchHeaderSchema,
  readIdempotencyKey,
  readIfMatch,
} from "../http/headers";
import { type ErrorCodes, type HeaderDoc, locationHeader, type Operation } from "../http/operation";
import { pathParam } from "../http/request";
import { replayedHeader, storedAnswer, success, successRaw } from "../http/respond";
import { ID_RE } from "../lib/ids";
import { DEFAULT_EVENT_BYTES_PER_DAY } from "../lib/limits";
import { changesQuerySchema, includeQuerySchema, listQuerySchema, searchBodySchema } from "./filter-schemas";
import { type CourseQuery, nextPageCursor, parseChangesQuery, parseIncludeQuery, parseListQuery, parseSearchBody, toCourseQuery } from "./filters";
import { readCourseChanges, readCoursePage } from "./read";
import {
  COURSE_EXAMPLE,
  COURSE_WITH_INCLUDES,
  type CourseEvent,
  courseChangesResponseSchema,
  courseIdParams,
  courseListResponseSchema,
  courseNotFound,
  courseResponseSchema,
} from "./schemas";
import { forgettingRefused, inWriteSession, needStudentScope, parseAuthenticated, readOnShard, sessionHeaders } from "./session";
import { createCourseSchema, parseCreateBody, parsePatchBody, patchCourseSchema } from "./write-schemas";
import { createCourse, patchCourse } from "./writes";

/**
 * Hands a committed write's events to the school's hub (`publishEvents` of
 * src/events/outbox.ts; `shard` holds the school's outbox); never throws: what it cannot
 * publish the outbox sweep does.
 */
export type PublishEvents = (env: Env, shard: D1Database, schoolId: string, events: CourseEvent[], timed: D1Timer) => Promise<unknown>;

/** Reads a page of the key's school on its shard and answers it, with the cursor of the next page (`null` on the last). */
function answerPage(req: IRequest, env: Env, rc: RequestContext, keyHash: string, q: CourseQuery): Promise<Response> {
  return readOnShard(
    req,
    env,
    rc,
    keyHash,
    (s, schoolId) => readCoursePage(s, schoolId, q),
    ({ rows, hasMore, changesCursor }) => {
      const last = rows.at(-1);
      const nextCursor = hasMore && last ? nextPageCursor(q, last) : null;
      return successRaw(`[${rows.map((r) => r.record).join(",")}]`, { pagination: { page: q.page, limit: q.limit, hasMore, nextCursor, changesCursor } });
    },
  );
}

/** Reads one course of the key's school on its shard and answers it (404 when the school has no such course). */
function answerOne(req: IRequest, env: Env, rc: RequestContext, keyHash: string, q: CourseQuery, id: string): Promise<Response> {
  return readOnShard(
    req,
    env,
    rc,
    keyHash,
    (s, schoolId) => readCoursePage(s, schoolId, q),
    ({ rows: [course] }) => {
      if (!course) throw courseNotFound(id);
      // The ETag names the bare record's version; a response with includes is another representation.
      const bare = !Object.values(q.include).some(Boolean);
      return successRaw(course.record, { headers: bare ? etagOf(course.version) : {} });
    },
  );
}

/**
 * The `ETag` response header naming a course's `version`, quoted (`"3"`): the one form of
 * GET, POST and PATCH (docs/reference.md § "POST /v3/courses — create a course · PATCH
 * /v3/courses/{id} — change one"), which PATCH's `If-Match` takes back.
 */
const etagOf = (version: number): { etag: string } => ({ etag: `"${version}"` });

/** The version a stored create answer (`StoredResponse.body`, the 201's envelope) names. */
const storedVersion = (body: string): number => (JSON.parse(body) as { result: { version: number } }).result.version;

/** The documented `ETag` of a response carrying a course (`when`: which responses carry it). */
const etagHeader = (when: string): Record<string, HeaderDoc> => ({
  ETag: {
    description: `The course's \`version\`, quoted (\`"3"\`): send it back in \`If-Match\` on PATCH, no GET needed. ${when}`,
    schema: { type: "string", pattern: '^"[0-9]+"$' },
    example: '"3"',
  },
});

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
  "INVALID_PARAMETER",
];

/** The 503 of a course write (docs/reference.md § Error codes). */
const MOVING = {
  codes: ["SCHOOL_MOVING"],
  lead: "Nothing was written and no event published: an operator is moving the school's data to another database shard, which pauses its course writes for a few seconds. Retry the same request after `Retry-After` seconds (with the same `Idempotency-Key`, if any). Reads keep working during the move.",
} satisfies { codes: ErrorCodes; lead: string };

/** The 429 of a course write besides the rate limit's (docs/reference.md § "Event quota"). */
const QUOTA = {
  codes: ["EVENT_QUOTA_EXCEEDED"],
  lead: `\`EVENT_QUOTA_EXCEEDED\`: nothing was written and no event published. The school's course writes published and stored their daily quota of bytes (events as delivered and rows stored with their indexes; the operator's \`EVENT_BYTES_PER_DAY\`, ${DEFAULT_EVENT_BYTES_PER_DAY.toLocaleString("en-US")} bytes by default, counted per UTC day); \`Retry-After\` is the seconds until the next UTC day, when writes are accepted again. Reads keep working, and an idempotent replay of a write already accepted still answers.`,
} satisfies { codes: ErrorCodes; lead: string };

/** When a course write's events are accepted (docs/reference.md § "POST /v3/courses — create a course · PATCH /v3/courses/{id} — change one"). */
const PUBLISHED_WHEN =
  "Answers once the course and its events are committed, normally after the school's event hub accepted the events; when the hub cannot be reached the write answers its 2xx all the same and its events are accepted later, normally within 90 s (a webhook deleted meanwhile does not receive them).";

/** The listing's 400 for a page cursor (docs/reference.md § "GET /v3/courses", `cursor`). */
const CURSOR_400 =
  "`INVALID_PARAMETER` for a `cursor` sent with `page`, one this API did not answer, or one answered for other filters or another sort (`details` names `page` or `cursor`).";

const TAG = { name: "Courses", description: "Courses: list, search, read, create, change." };

/** The course operations; `publish` hands a write's events to the hub. */
export function courseOperations(publish: PublishEvents): Operation<Env>[] {
  // Every one forgets the place of a credential the directory refuses (`forgettingRefused`).
  return declaredOperations(publish).map((op) => ({ ...op, handler: (req, env, exec, rc) => forgettingRefused(req, () => op.handler(req, env, exec, rc)) }));
}

/** The course operations as declared, before `courseOperations` wraps their handlers. */
function declaredOperations(publish: PublishEvents): Operation<Env>[] {
  return [
    {
      method: "GET",
      path: "/v3/courses",
      operationId: "listCourses",
      scopes: ["courses:read"],
      tag: TAG,
      summary: "List the school's courses",
      description:
        "Archived and active courses alike, filtered, one page at a time: by `page` (an offset), or by `cursor` (`pagination.nextCursor` of the previous page), which neither skips nor repeats a course that stays unchanged while courses are written during the walk. Order: `startDateTime` ascending, then `id` ascending. Every filter combines with AND. Unknown parameters are a 400 UNKNOWN_PARAMETER; a parameter given twice is a 400 INVALID_PARAMETER, except id lists, whose repetitions are joined.",
      request: { query: listQuerySchema, headers: sessionHeaders },
      responses: {
        200: {
          description: "One page of courses.",
          schema: courseListResponseSchema,
          example: {
            status: "success",
            result: [COURSE_WITH_INCLUDES],
            pagination: {
              page: 1,
              limit: 20,
              hasMore: true,
              nextCursor: "p1.WyI0ODkyYjhiYTA3MzI1OTE1IiwyLCJjcnNfMDFIWlg0IixbMTc4ODc2ODAwMDAwMF1d",
              changesCursor: "chg_1042",
            },
          },
          headers: bookmarkResponseHeader,
        },
        400: { codes: ["INVALID_PARAMETER", "UNKNOWN_PARAMETER", "TOO_MANY_IDS"], lead: CURSOR_400 },
      },
      async handler(req, env, _exec, rc) {
        const keyHash = await apiKeyHash(req, env.DIRECTORY, rc);
        const q = await parseAuthenticated(env, rc, keyHash, () => parseListQuery(queryOf(req)));
        needStudentScope(rc, q);
        return answerPage(req, env, rc, keyHash, q);
      },
    },
    {
      method: "POST",
      path: "/v3/courses:search",
      operationId: "searchCourses",
      scopes: ["courses:read"],
      tag: TAG,
      summary: "Search courses (long id lists, sorting)",
      description:
        "The same listing as GET /v3/courses, with the parameters in a JSON body: id lists as arrays of up to 10,000 ids, `courseId` to restrict to given courses, and `sort`. A filter behaves exactly as its GET twin. The query string must be empty (400 UNKNOWN_PARAMETER).",
      request: { headers: sessionHeaders, body: { schema: searchBodySchema, description: "Filters, page and sort; every field optional." } },
      responses: {
        200: {
          description: "One page of courses.",
          schema: courseListResponseSchema,
          example: {
            status: "success",
            result: [COURSE_EXAMPLE],
            pagination: { page: 1, limit: 10, hasMore: false, nextCursor: null, changesCursor: "chg_1042" },
          },
          headers: bookmarkResponseHeader,
        },
        400: { codes: ["VALIDATION_ERROR", "UNKNOWN_PARAMETER", "INVALID_JSON", "INVALID_PARAMETER"], lead: CURSOR_400 },
      },
      async handler(req, env, _exec, rc) {
        const keyHash = await apiKeyHash(req, env.DIRECTORY, rc);
        // A key this isolate has not verified recently is checked alone, one small read,
        // before its body (up to 1 MiB) is parsed or sent to D1 (docs/reference.md § Conventions).
        if (!rc.credentialRecentlyVerified) await schoolOfKey(env.DIRECTORY, rc, keyHash);
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
        needStudentScope(rc, q);
        return answerPage(req, env, rc, keyHash, q);
      },
    },
    {
      method: "POST",
      path: "/v3/courses",
      operationId: "createCourse",
      scopes: ["courses:write"],
      tag: TAG,
      summary: "Create a course",
      description: `Creates a course and publishes \`course.created\` (and \`course.professor_signed\` for each professor sent already signed). Referenced ids must exist in the school. ${PUBLISHED_WHEN}`,
      request: {
        headers: z.object({ "Idempotency-Key": idempotencyKeyHeaderSchema, [BOOKMARK_HEADER]: bookmarkHeaderSchema }),
        body: { schema: createCourseSchema, description: "The new course." },
      },
      responses: {
        201: {
          description: "The course is created.",
          schema: courseResponseSchema,
          example: { status: "success", result: { ...COURSE_EXAMPLE, createdAt: COURSE_EXAMPLE.updatedAt } },
          headers: {
            ...locationHeader(`/v3/courses/${COURSE_EXAMPLE.id}`),
            ...etagHeader("A replay carries the version the stored answer names."),
            ...bookmarkResponseHeader,
            ...replayedHeader,
          },
        },
        400: {
          codes: WRITE_400_CODES,
          lead: "With several kinds of unknown references, the code is that of the first kind in this list's order and `details` lists every missing id. `INVALID_PARAMETER` for a malformed `x-d1-bookmark` or `Idempotency-Key`.",
        },
        422: { codes: ["IDEMPOTENCY_KEY_MISMATCH"], lead: "Nothing was written; use a new key for a new request." },
        429: QUOTA,
        503: MOVING,
      },
      async handler(req, env, _exec, rc) {
        return inWriteSession(req, env, rc, async (s, schoolId, shard) => {
          const key = readIdempotencyKey(req);
          const json = await readJson(req);
          const input = parseCreateBody(json);
          const timed = rc.db.bind(rc);
          const bytesPerDay = parseEventBytesPerDay(env.EVENT_BYTES_PER_DAY);
          if (key === undefined) {
            const { course, events } = await createCourse(s.d1, schoolId, input, bytesPerDay, timed);
            await publish(env, shard, schoolId, events, timed);
            return success(course, { status: 201, headers: { location: `/v3/courses/${course.id}`, ...etagOf(course.version) } });
          }
          // docs/reference.md § "Conventions" (idempotent creation): the answer is stored with the course.
          const hash = await requestHash(json);
          const replay = (row: KeyRow) => {
            if (row.requestHash !== hash)
              throw new ApiError(
                "IDEMPOTENCY_KEY_MISMATCH",
                "This Idempotency-Key was used with another body in the last 24 h; use a new key for a new request.",
              );
            return storedAnswer(row, true, etagOf(storedVersion(row.body)));
          };
          const found = await timed(() => findKey(s.d1, schoolId, key));
          if (found) return replay(found);
          let first: StoredResponse | undefined;
          try {
            const { course, events } = await createCourse(s.d1, schoolId, input, bytesPerDay, timed, Date.now(), (created) => {
              first = { status: 201, body: JSON.stringify({ status: "success", result: created }), location: `/v3/courses/${created.id}` };
              return keyStatements(schoolId, key, hash, first);
            });
            await publish(env, shard, schoolId, events, timed);
            return storedAnswer(first!, false, etagOf(course.version));
          } catch (err) {
            if (!isKeyConflict(err)) throw err;
            // A concurrent request with this key committed first: answer as it did (read on the primary).
            const winner = await timed(() => findKey(shard, schoolId, key));
            if (!winner) throw err;
            return replay(winner);
          }
        });
      },
    },
    // Before /v3/courses/{id}, which would take `changes` for an id.
    {
      method: "GET",
      path: "/v3/courses/changes",
      operationId: "listCourseChanges",
      scopes: ["courses:read"],
      tag: TAG,
      summary: "List the courses changed since a cursor",
      description:
        "The school's courses whose latest change follows `after`, in change order, each once, at its latest change, as the course record (with the include flags of the list). Every committed change of a course — a create, a PATCH that changes something, an import — takes the next number of the school's change sequence; a cursor names a position in it. Start from the `pagination.changesCursor` of a full sync's first page of GET /v3/courses (or an event's `changeCursor`), then follow `pagination.nextCursor` while `hasMore`. A cursor never expires and survives moves between shards: the answer costs what changed since, however old the cursor.",
      request: { query: changesQuerySchema, headers: sessionHeaders },
      responses: {
        200: {
          description: "The courses changed after the cursor.",
          schema: courseChangesResponseSchema,
          example: { status: "success", result: [COURSE_EXAMPLE], pagination: { nextCursor: "chg_1043", hasMore: false } },
          headers: bookmarkResponseHeader,
        },
        400: { codes: ["INVALID_PARAMETER", "UNKNOWN_PARAMETER"], lead: "`INVALID_PARAMETER` for an `after` that is not a cursor this API returned." },
      },
      async handler(req, env, _exec, rc) {
        const keyHash = await apiKeyHash(req, env.DIRECTORY, rc);
        const q = await parseAuthenticated(env, rc, keyHash, () => parseChangesQuery(queryOf(req)));
        needStudentScope(rc, q);
        return readOnShard(
          req,
          env,
          rc,
          keyHash,
          (s, schoolId) => readCourseChanges(s, schoolId, q),
          ({ records, nextCursor, hasMore }) => successRaw(`[${records.join(",")}]`, { pagination: { nextCursor, hasMore } }),
        );
      },
    },
    {
      method: "GET",
      path: "/v3/courses/{id}",
      operationId: "getCourse",
      scopes: ["courses:read"],
      tag: TAG,
      summary: "Get one course",
      description:
        'One course of the school, with the include flags of the list (the only query parameters accepted). Without include flags the response carries `ETag: "<version>"`, for `If-Match` on PATCH.',
      request: { params: courseIdParams, query: includeQuerySchema, headers: sessionHeaders },
      responses: {
        200: {
          description: "The course.",
          schema: courseResponseSchema,
          example: { status: "success", result: COURSE_WITH_INCLUDES },
          headers: { ...etagHeader("Only without include flags."), ...bookmarkResponseHeader },
        },
        400: ["INVALID_PARAMETER", "UNKNOWN_PARAMETER"],
        404: ["COURSE_NOT_FOUND"],
      },
      async handler(req, env, _exec, rc) {
        const keyHash = await apiKeyHash(req, env.DIRECTORY, rc);
        const id = pathParam(req);
        const include = await parseAuthenticated(env, rc, keyHash, () => parseIncludeQuery(queryOf(req)));
        needStudentScope(rc, { include });
        if (!ID_RE.test(id)) {
          await schoolOfKey(env.DIRECTORY, rc, keyHash);
          throw courseNotFound(id);
        }
        const q: CourseQuery = { ...toCourseQuery({ courseId: [id], limit: 1 }), include };
        return answerOne(req, env, rc, keyHash, q, id);
      },
    },
    {
      method: "PATCH",
      path: "/v3/courses/{id}",
      operationId: "updateCourse",
      scopes: ["courses:write"],
      tag: TAG,
      summary: "Change a course",
      description:
        "Changes only the fields sent; a list sent replaces the whole list; `null` clears `classroom`, `creatorId`, `trainingId`. Publishes, in this order and only for what changed: `course.updated`, then `course.archived` / `course.unarchived`, `course.absences_sent` (false → true), one `course.professor_signed` per professor whose `signed` went false → true. A PATCH that changes nothing publishes nothing and leaves `updatedAt` unchanged. " +
        PUBLISHED_WHEN,
      request: {
        params: courseIdParams,
        headers: z.object({ "If-Match": ifMatchHeaderSchema, [BOOKMARK_HEADER]: bookmarkHeaderSchema }),
        body: { schema: patchCourseSchema, description: "The fields to change." },
      },
      responses: {
        200: {
          description: "The course after the change.",
          schema: courseResponseSchema,
          example: { status: "success", result: { ...COURSE_EXAMPLE, archived: true, version: 4 } },
          headers: { ...etagHeader("The version after the change."), ...bookmarkResponseHeader },
        },
        400: {
          codes: WRITE_400_CODES,
          lead: "`INVALID_DATE_RANGE` also when only one end moves past the other. `INVALID_PARAMETER` for a malformed `If-Match` or `x-d1-bookmark`.",
        },
        404: ["COURSE_NOT_FOUND"],
        412: { codes: ["PRECONDITION_FAILED"], lead: "Nothing was written and no event published; read the course again and reapply the change." },
        429: QUOTA,
        503: MOVING,
      },
      async handler(req, env, _exec, rc) {
        return inWriteSession(req, env, rc, async (s, schoolId, shard) => {
          const id = pathParam(req);
          const ifMatch = readIfMatch(req);
          const patch = parsePatchBody(await readJson(req));
          if (!ID_RE.test(id)) throw courseNotFound(id);
          const timed = rc.db.bind(rc);
          const { course, events } = await patchCourse(s.d1, schoolId, id, patch, parseEventBytesPerDay(env.EVENT_BYTES_PER_DAY), timed, ifMatch);
          await publish(env, shard, schoolId, events, timed);
          return success(course, { headers: etagOf(course.version) });
        });
      },
    },
  ];
}
