/**
 * The one filter model of the course listing (docs/reference.md § "GET /v3/courses" and
 * § "POST /v3/courses:search").
 *
 * The GET query string (`parseListQuery`) and the search body (`parseSearchBody`) both
 * parse into a `CourseQuery`, the only input of the query builder (src/courses/query.ts),
 * so a filter cannot behave differently in the two operations.
 */
import type { z } from "zod";
import { parseBodyWith } from "../http/body";
import { ApiError } from "../http/errors";
import { collectQuery, parseQueryWith } from "../http/request";
import { decodeChangeCursor } from "../lib/change-cursor";
import { splitIds } from "../lib/fields";
import { GET_MAX_IDS, MAX_PAGE_SIZE, SEARCH_MAX_IDS } from "../lib/limits";
import { fold } from "../lib/text";
import { changesQuerySchema, ID_LIST_PARAMS, includeQuerySchema, listQuerySchema, type SortKey, searchBodySchema } from "./filter-schemas";
import { decodePageCursor, encodePageCursor, fingerprint } from "./page-cursor";
import { type PageKey, sortKeys, sortValuesFit } from "./sort";

/** Related data to embed in each course record (the `include*` flags). */
export interface Includes {
  students: boolean;
  teachers: boolean;
  surveyTemplates: boolean;
  training: boolean;
}

/**
 * A parsed, validated listing request. Instants are ms since the epoch; id lists are
 * deduplicated (an empty list means "no filter").
 */
export interface CourseQuery {
  courseStartDateTime?: number;
  courseEndDateTime?: number;
  absencesSent: boolean;
  absencesNotSent: boolean;
  groupId: string[];
  studentId: string[];
  professorId: string[];
  trainingId: string[];
  /** Search only (and GET /v3/courses/{id} internally). */
  courseId: string[];
  archived?: boolean;
  classroom?: string;
  creatorId?: string;
  name?: string;
  /** Validated and accepted, currently ignored (docs/reference.md). */
  createdAt?: number;
  updatedAt?: number;
  professorSignatureMissing?: boolean;
  /** The page's number: the one asked for, or with `after` the cursor's (its place in the walk). */
  page: number;
  limit: number;
  include: Includes;
  sort: SortKey[];
  /** Keyset paging (`cursor`): the page starts after this row instead of at an offset. */
  after?: PageKey;
}

/** A parsed change query (docs/reference.md § "GET /v3/courses/changes"). */
export interface ChangesQuery {
  /** Changes after this number (the cursor `chg_<after>`); 0: from the school's first change. */
  after: number;
  limit: number;
  include: Includes;
}

/** Parsed parameter values by name (both operations), before defaults. */
type ParsedFields = z.output<typeof searchBodySchema>;

const unique = (ids: string[] | undefined) => [...new Set(ids ?? [])];

/** A CourseQuery from parsed fields, with the contract's defaults for everything left out. */
export function toCourseQuery(p: ParsedFields): CourseQuery {
  return {
    courseStartDateTime: p.courseStartDateTime,
    courseEndDateTime: p.courseEndDateTime,
    absencesSent: p.absencesSent ?? false,
    absencesNotSent: p.absencesNotSent ?? false,
    groupId: unique(p.groupId),
    studentId: unique(p.studentId),
    professorId: unique(p.professorId),
    trainingId: unique(p.trainingId),
    courseId: unique(p.courseId),
    archived: p.archived,
    classroom: p.classroom,
    creatorId: p.creatorId,
    name: p.name,
    createdAt: p.createdAt,
    updatedAt: p.updatedAt,
    professorSignatureMissing: p.professorSignatureMissing,
    page: p.page ?? 1,
    limit: p.limit ?? MAX_PAGE_SIZE,
    include: {
      students: p.includeStudents ?? false,
      teachers: p.includeTeachers ?? false,
      surveyTemplates: p.includeSurveyTemplates ?? false,
      training: p.includeTraining ?? false,
    },
    sort: p.sort ?? [],
  };
}

/**
 * Parses the query string of GET /v3/courses into a CourseQuery.
 *
 * @throws ApiError 400 UNKNOWN_PARAMETER, TOO_MANY_IDS (an id list over 100, pointing to
 *   POST /v3/courses:search) or INVALID_PARAMETER (every malformed value in `details`).
 */
export function parseListQuery(params: URLSearchParams): CourseQuery {
  const raw = collectQuery(params, Object.keys(listQuerySchema.shape), ID_LIST_PARAMS);
  const tooMany = ID_LIST_PARAMS.filter((k) => raw[k] !== undefined && splitIds(raw[k]).length > GET_MAX_IDS);
  if (tooMany.length > 0) {
    throw new ApiError(
      "TOO_MANY_IDS",
      `${tooMany.join(", ")} lists more than ${GET_MAX_IDS} ids; send long id lists with POST /v3/courses:search (up to ${SEARCH_MAX_IDS} per list).`,
      tooMany.map((parameter) => ({ parameter, message: `more than ${GET_MAX_IDS} ids` })),
    );
  }
  const p = parseQueryWith(listQuerySchema, raw);
  return withCursor(toCourseQuery(p), p, "parameter");
}

/** Parses the query string of GET /v3/courses/{id} (include flags only). */
export function parseIncludeQuery(params: URLSearchParams): Includes {
  const raw = collectQuery(params, Object.keys(includeQuerySchema.shape));
  return toCourseQuery(parseQueryWith(includeQuerySchema, raw)).include;
}

/**
 * Parses the query string of GET /v3/courses/changes: `after` (a change cursor; none: from
 * the first change), then `limit` and the include flags as the listing reads them.
 *
 * @throws ApiError 400 UNKNOWN_PARAMETER, INVALID_PARAMETER (a malformed cursor included).
 */
export function parseChangesQuery(params: URLSearchParams): ChangesQuery {
  const { after, ...listing } = parseQueryWith(changesQuerySchema, collectQuery(params, Object.keys(changesQuerySchema.shape)));
  const { limit, include } = toCourseQuery(listing);
  // The schema admitted only cursors that decode.
  return { after: after === undefined ? 0 : decodeChangeCursor(after)!, limit, include };
}

/**
 * Parses a POST /v3/courses:search body (already JSON-decoded) into a CourseQuery.
 *
 * @throws ApiError 400 VALIDATION_ERROR (JSON paths in `details`; 10,001 ids included) or
 *   UNKNOWN_PARAMETER.
 */
export function parseSearchBody(body: unknown): CourseQuery {
  const p = parseBodyWith(searchBodySchema, body, "The search body must be a JSON object.");
  return withCursor(toCourseQuery(p), p, "path");
}

/**
 * What a page cursor must match: the filters and sort of `q`, canonical (id lists sorted,
 * the absences pair as the one filter it means, the name folded, the sort as `sortKeys`),
 * without what does not choose the courses or their order (page, limit, includes, the
 * ignored `createdAt`/`updatedAt`).
 */
function queryFingerprint(q: CourseQuery): string {
  const { page: _page, limit: _limit, include: _include, after: _after, createdAt: _c, updatedAt: _u, absencesSent, absencesNotSent, name, sort, ...rest } = q;
  const filters = Object.entries(rest).map(([k, v]) => [k, Array.isArray(v) ? [...v].sort() : v]);
  return fingerprint([filters, absencesSent === absencesNotSent ? null : absencesSent, name === undefined ? null : fold(name), sortKeys(sort)]);
}

/**
 * `q` with the request's `cursor` applied: the page starts after the cursor's row and takes
 * its number from it.
 *
 * @param as how `details` name the field: a query `parameter` (GET) or a body `path` (search).
 * @throws ApiError 400 INVALID_PARAMETER when `page` comes with it, when it is not a cursor
 *   of this API, or when it was answered for other filters or another sort.
 */
function withCursor(q: CourseQuery, p: { page?: number; cursor?: string }, as: "parameter" | "path"): CourseQuery {
  if (p.cursor === undefined) return q;
  const refuse = (message: string, detail: string, field = "cursor") =>
    new ApiError("INVALID_PARAMETER", message, [as === "parameter" ? { parameter: field, message: detail } : { path: field, message: detail }]);
  if (p.page !== undefined) throw refuse("Give `cursor` or `page`, not both: a cursor names its page.", "not with cursor", "page");
  const c = decodePageCursor(p.cursor);
  if (!c)
    throw refuse("`cursor` is not a cursor of this listing: pass the `pagination.nextCursor` of a previous page.", "must be a nextCursor of this listing");
  if (c.query !== queryFingerprint(q) || !sortValuesFit(q.sort, c.values)) {
    throw refuse(
      "`cursor` was answered for other filters or another sort: send it with the filters and sort of the page that answered it, or start again without it.",
      "must be sent with the filters and sort it was answered for",
    );
  }
  return { ...q, page: c.page, after: { values: c.values, id: c.id } };
}

/**
 * The `pagination.nextCursor` of a page of `q` whose last course is `last`: its id and its
 * sort-key values (`sortValues`, the JSON array text the page statement selects).
 */
export function nextPageCursor(q: CourseQuery, last: { id: string; sortValues: string }): string {
  return encodePageCursor({ query: queryFingerprint(q), page: q.page + 1, id: last.id, values: JSON.parse(last.sortValues) as unknown[] });
}
