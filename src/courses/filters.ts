/**
 * The one filter model of the course listing (API.md § "GET /v3/courses" and
 * § "POST /v3/courses:search").
 *
 * The GET query string (`parseListQuery`) and the search body (`parseSearchBody`) both
 * parse into a `CourseQuery`, the only input of the query builder (src/courses/query.ts),
 * so a filter cannot behave differently in the two operations.
 */
import { z } from "zod";
import { ApiError, type ErrorDetail } from "../http/errors";
import { ID_RE } from "../lib/ids";
import { closestName, jsonPath } from "../lib/text";
import { parseInstant, repairQueryInstant } from "../lib/time";

/** Max ids per list in a GET query string (beyond: 400 TOO_MANY_IDS). */
export const GET_MAX_IDS = 100;
/** Max ids per list in a search body (beyond: 400 VALIDATION_ERROR). */
export const SEARCH_MAX_IDS = 10_000;
/** Max `page`: keeps `(page - 1) * limit` a safe SQLite integer. */
export const MAX_PAGE = 1_000_000;

/** Sortable fields of `POST /v3/courses:search`. */
export const SORT_FIELDS = ["startDateTime", "endDateTime", "name", "classroom", "createdAt", "updatedAt"] as const;
export type SortField = (typeof SORT_FIELDS)[number];
/** One sort key; keys apply in order, then `id` ascending. */
export interface SortKey {
  field: SortField;
  order: "asc" | "desc";
}

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
  /** Validated and accepted, currently ignored (API.md). */
  createdAt?: number;
  updatedAt?: number;
  professorSignatureMissing?: boolean;
  page: number;
  limit: number;
  include: Includes;
  sort: SortKey[];
}

/** The id-list parameters. */
export const ID_LIST_PARAMS = ["groupId", "studentId", "professorId", "trainingId"] as const;
/** Include flags, by parameter name. */
export const INCLUDE_PARAMS = {
  includeStudents: "students",
  includeTeachers: "teachers",
  includeSurveyTemplates: "surveyTemplates",
  includeTraining: "training",
} as const satisfies Record<string, keyof Includes>;

/** Every parameter of GET /v3/courses, in the contract's order. */
export const LIST_PARAMS = [
  "courseStartDateTime",
  "courseEndDateTime",
  "absencesSent",
  "absencesNotSent",
  ...ID_LIST_PARAMS,
  "archived",
  "classroom",
  "creatorId",
  "name",
  "createdAt",
  "updatedAt",
  "professorSignatureMissing",
  "page",
  "limit",
  ...(Object.keys(INCLUDE_PARAMS) as (keyof typeof INCLUDE_PARAMS)[]),
] as const;

/** Every field of the search body: the GET parameters plus `courseId` and `sort`. */
export const SEARCH_FIELDS = [...LIST_PARAMS, "courseId", "sort"] as const;

// ---------------------------------------------------------------------------------------
// Value schemas shared by both operations.

const idString = z.string().regex(ID_RE, "must be an id of 1–64 characters [A-Za-z0-9_-]");
const text200 = z.string().min(1, "must not be empty").max(200, "must be at most 200 characters");

/** Splits a comma-separated id list: items trimmed, empty items dropped. */
export function splitIds(value: string): string[] {
  return value
    .split(",")
    .map((s) => s.trim())
    .filter((s) => s.length > 0);
}

const instantFrom = (repair: boolean) =>
  z.string().transform((raw, ctx) => {
    const ms = parseInstant(repair ? repairQueryInstant(raw) : raw);
    if (ms === undefined) {
      ctx.addIssue({
        code: "custom",
        message: "must be an ISO 8601 instant with a zone, e.g. 2026-09-07T08:00:00Z or 2026-09-07T10:00:00+02:00",
      });
      return z.NEVER;
    }
    return ms;
  });

// ---------------------------------------------------------------------------------------
// GET query string.

const queryBoolean = z
  .string()
  .refine((v) => ["true", "false", "1", "0"].includes(v), "must be one of true, false, 1, 0")
  .transform((v) => v === "true" || v === "1");

const queryInteger = (min: number, max: number) =>
  z
    .string()
    .regex(/^\d{1,9}$/, `must be an integer from ${min} to ${max}`)
    .transform(Number)
    .refine((n) => n >= min && n <= max, `must be an integer from ${min} to ${max}`);

const queryIdList = z
  .string()
  .transform(splitIds)
  .pipe(z.array(idString));

const listQuerySchema = z.strictObject({
  courseStartDateTime: instantFrom(true).optional(),
  courseEndDateTime: instantFrom(true).optional(),
  absencesSent: queryBoolean.optional(),
  absencesNotSent: queryBoolean.optional(),
  groupId: queryIdList.optional(),
  studentId: queryIdList.optional(),
  professorId: queryIdList.optional(),
  trainingId: queryIdList.optional(),
  archived: queryBoolean.optional(),
  classroom: text200.optional(),
  creatorId: idString.optional(),
  name: text200.optional(),
  createdAt: instantFrom(true).optional(),
  updatedAt: instantFrom(true).optional(),
  professorSignatureMissing: queryBoolean.optional(),
  page: queryInteger(1, MAX_PAGE).optional(),
  limit: queryInteger(1, 100).optional(),
  includeStudents: queryBoolean.optional(),
  includeTeachers: queryBoolean.optional(),
  includeSurveyTemplates: queryBoolean.optional(),
  includeTraining: queryBoolean.optional(),
});

type ParsedFields = Partial<{
  courseStartDateTime: number;
  courseEndDateTime: number;
  absencesSent: boolean;
  absencesNotSent: boolean;
  groupId: string[];
  studentId: string[];
  professorId: string[];
  trainingId: string[];
  courseId: string[];
  archived: boolean;
  classroom: string;
  creatorId: string;
  name: string;
  createdAt: number;
  updatedAt: number;
  professorSignatureMissing: boolean;
  page: number;
  limit: number;
  includeStudents: boolean;
  includeTeachers: boolean;
  includeSurveyTemplates: boolean;
  includeTraining: boolean;
  sort: SortKey[];
}>;

const unique = (ids: string[] | undefined) => [...new Set(ids ?? [])];

function toCourseQuery(p: ParsedFields): CourseQuery {
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
    limit: p.limit ?? 100,
    include: {
      students: p.includeStudents ?? false,
      teachers: p.includeTeachers ?? false,
      surveyTemplates: p.includeSurveyTemplates ?? false,
      training: p.includeTraining ?? false,
    },
    sort: p.sort ?? [],
  };
}

/** Builds the 400 UNKNOWN_PARAMETER error (API.md § "Conventions"). */
export function unknownParameterError(
  unknown: string[],
  accepted: readonly string[],
  where: "parameter" | "path",
): ApiError {
  const hints = unknown.map((name) => {
    const close = closestName(name, accepted);
    return close ? `"${name}" (did you mean "${close}"?)` : `"${name}"`;
  });
  const what = where === "parameter" ? "query parameter" : "body field";
  return new ApiError(
    400,
    "UNKNOWN_PARAMETER",
    `Unknown ${what}${unknown.length > 1 ? "s" : ""} ${hints.join(", ")}. Accepted: ${accepted.join(", ")}.`,
    unknown.map((name) => {
      const close = closestName(name, accepted);
      const message = close ? `unknown; did you mean "${close}"?` : "unknown";
      return where === "parameter" ? { parameter: name, message } : { path: name, message };
    }),
  );
}

/**
 * Reads a query string against an allowed parameter set: rejects unknown names (400
 * UNKNOWN_PARAMETER) and repeated non-list parameters (400 INVALID_PARAMETER). Repeated id
 * lists (`groupId=a&groupId=b`) are joined.
 */
export function collectQuery(
  params: URLSearchParams,
  accepted: readonly string[],
  listNames: readonly string[] = ID_LIST_PARAMS,
): Record<string, string> {
  const out: Record<string, string> = {};
  const unknown: string[] = [];
  const repeated = new Set<string>();
  for (const [key, value] of params) {
    if (!accepted.includes(key)) {
      if (!unknown.includes(key)) unknown.push(key);
      continue;
    }
    if (key in out) {
      if (listNames.includes(key)) out[key] = `${out[key]},${value}`;
      else repeated.add(key);
      continue;
    }
    out[key] = value;
  }
  if (unknown.length > 0) throw unknownParameterError(unknown, accepted, "parameter");
  if (repeated.size > 0) {
    throw new ApiError(
      400,
      "INVALID_PARAMETER",
      `Parameter${repeated.size > 1 ? "s" : ""} ${[...repeated].join(", ")} given more than once.`,
      [...repeated].map((parameter) => ({ parameter, message: "given more than once; send it once" })),
    );
  }
  return out;
}

function zodDetails(error: z.ZodError, as: "parameter" | "path"): ErrorDetail[] {
  return error.issues.map((issue) => {
    if (as === "parameter") {
      // A query parameter is named alone; an item of an id list is told in the message.
      const [name, index] = issue.path;
      const message = typeof index === "number" ? `item ${index + 1}: ${issue.message}` : issue.message;
      return { parameter: name === undefined ? "$" : String(name), message };
    }
    return { path: jsonPath(issue.path), message: issue.message };
  });
}

/** Parses query parameters against a zod schema; 400 INVALID_PARAMETER lists every problem. */
export function parseQueryWith<T extends z.ZodType>(schema: T, raw: Record<string, string>): z.output<T> {
  const parsed = schema.safeParse(raw);
  if (!parsed.success) {
    const details = zodDetails(parsed.error, "parameter");
    throw new ApiError(
      400,
      "INVALID_PARAMETER",
      `Invalid query parameter${details.length > 1 ? "s" : ""}: ${details.map((d) => `${"parameter" in d ? d.parameter : d.path} ${d.message}`).join("; ")}.`,
      details,
    );
  }
  return parsed.data;
}

/**
 * Parses the query string of GET /v3/courses into a CourseQuery.
 *
 * @throws ApiError 400 UNKNOWN_PARAMETER, TOO_MANY_IDS (an id list over 100, pointing to
 *   POST /v3/courses:search) or INVALID_PARAMETER (every malformed value in `details`).
 */
export function parseListQuery(params: URLSearchParams): CourseQuery {
  const raw = collectQuery(params, LIST_PARAMS);
  const tooMany = ID_LIST_PARAMS.filter((k) => raw[k] !== undefined && splitIds(raw[k]).length > GET_MAX_IDS);
  if (tooMany.length > 0) {
    throw new ApiError(
      400,
      "TOO_MANY_IDS",
      `${tooMany.join(", ")} lists more than ${GET_MAX_IDS} ids; send long id lists with POST /v3/courses:search (up to ${SEARCH_MAX_IDS} per list).`,
      tooMany.map((parameter) => ({ parameter, message: `more than ${GET_MAX_IDS} ids` })),
    );
  }
  return toCourseQuery(parseQueryWith(listQuerySchema, raw));
}

/** The include flags alone (GET /v3/courses/{id}). */
const includeQuerySchema = listQuerySchema.pick({
  includeStudents: true,
  includeTeachers: true,
  includeSurveyTemplates: true,
  includeTraining: true,
});

/** Parses the query string of GET /v3/courses/{id} (include flags only). */
export function parseIncludeQuery(params: URLSearchParams): Includes {
  const raw = collectQuery(params, Object.keys(INCLUDE_PARAMS));
  return toCourseQuery(parseQueryWith(includeQuerySchema, raw)).include;
}

// ---------------------------------------------------------------------------------------
// Search body.

const bodyIdList = z
  .union([z.string().transform(splitIds), z.array(z.unknown())], { error: "must be an array of ids or a comma-separated string" })
  .pipe(z.array(idString).max(SEARCH_MAX_IDS, `must list at most ${SEARCH_MAX_IDS} ids`));

const sortKeySchema = z.strictObject({
  field: z.enum(SORT_FIELDS, { error: `must be one of ${SORT_FIELDS.join(", ")}` }),
  order: z.enum(["asc", "desc"], { error: "must be asc or desc" }).default("asc"),
});

/** The search body schema (exported for the OpenAPI document). */
export const searchBodySchema = z.strictObject({
  courseStartDateTime: instantFrom(false).optional(),
  courseEndDateTime: instantFrom(false).optional(),
  absencesSent: z.boolean().optional(),
  absencesNotSent: z.boolean().optional(),
  groupId: bodyIdList.optional(),
  studentId: bodyIdList.optional(),
  professorId: bodyIdList.optional(),
  trainingId: bodyIdList.optional(),
  courseId: bodyIdList.optional(),
  archived: z.boolean().optional(),
  classroom: text200.optional(),
  creatorId: idString.optional(),
  name: text200.optional(),
  createdAt: instantFrom(false).optional(),
  updatedAt: instantFrom(false).optional(),
  professorSignatureMissing: z.boolean().optional(),
  page: z.number().int().min(1).max(MAX_PAGE).optional(),
  limit: z.number().int().min(1).max(100).optional(),
  includeStudents: z.boolean().optional(),
  includeTeachers: z.boolean().optional(),
  includeSurveyTemplates: z.boolean().optional(),
  includeTraining: z.boolean().optional(),
  sort: z.array(sortKeySchema).max(SORT_FIELDS.length).optional(),
});

/**
 * Validates a JSON value against a zod schema for a request body.
 *
 * @throws ApiError 400 UNKNOWN_PARAMETER when the only problems are unknown fields (paths
 *   in `details`), else 400 VALIDATION_ERROR with every problem's JSON path.
 */
export function parseBodyWith<T extends z.ZodType>(schema: T, body: unknown, accepted: readonly string[]): z.output<T> {
  const parsed = schema.safeParse(body);
  if (parsed.success) return parsed.data;
  const unknownIssues = parsed.error.issues.filter((i) => i.code === "unrecognized_keys");
  if (unknownIssues.length === parsed.error.issues.length) {
    const names = unknownIssues.flatMap((i) =>
      (i as { keys: string[] }).keys.map((k) => jsonPath([...i.path, k])),
    );
    throw unknownParameterError(names, accepted, "path");
  }
  const details: ErrorDetail[] = parsed.error.issues.flatMap((issue) => {
    if (issue.code === "unrecognized_keys") {
      return (issue as { keys: string[] }).keys.map((k) => ({
        path: jsonPath([...issue.path, k]),
        message: "unknown field",
      }));
    }
    return zodDetails(new z.ZodError([issue]), "path");
  });
  throw new ApiError(
    400,
    "VALIDATION_ERROR",
    `The body breaks the schema: ${details.map((d) => `${"path" in d ? d.path : d.parameter} ${d.message}`).join("; ")}.`,
    details,
  );
}

/**
 * Parses a POST /v3/courses:search body (already JSON-decoded) into a CourseQuery.
 *
 * @throws ApiError 400 VALIDATION_ERROR (JSON paths in `details`; 10,001 ids included) or
 *   UNKNOWN_PARAMETER.
 */
export function parseSearchBody(body: unknown): CourseQuery {
  if (typeof body !== "object" || body === null || Array.isArray(body)) {
    throw new ApiError(400, "VALIDATION_ERROR", "The search body must be a JSON object.", [
      { path: "$", message: "must be an object" },
    ]);
  }
  return toCourseQuery(parseBodyWith(searchBodySchema, body, SEARCH_FIELDS) as ParsedFields);
}
