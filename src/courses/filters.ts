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
import { changesQuerySchema, ID_LIST_PARAMS, includeQuerySchema, listQuerySchema, type SortKey, searchBodySchema } from "./filter-schemas";

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
  page: number;
  limit: number;
  include: Includes;
  sort: SortKey[];
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
  return toCourseQuery(parseQueryWith(listQuerySchema, raw));
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
  return toCourseQuery(parseBodyWith(searchBodySchema, body, "The search body must be a JSON object."));
}
