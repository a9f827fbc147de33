/**
 * The one filter model of the course listing (API.md § "GET /v3/courses" and
 * § "POST /v3/courses:search").
 *
 * The GET query string (`parseListQuery`) and the search body (`parseSearchBody`) both
 * parse into a `CourseQuery`, the only input of the query builder (src/courses/query.ts),
 * so a filter cannot behave differently in the two operations.
 */
import { z } from "zod";
import { bodyHazards, MAX_BODY_LIST } from "../http/body";
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
// Value schemas shared by both operations. Their `.meta()` documents them in the OpenAPI
// document (src/openapi/document.ts), which describes each schema by its INPUT shape.

const idString = z.string().regex(ID_RE, "must be an id of 1–64 characters [A-Za-z0-9_-]");
const text200 = z.string().min(1, "must not be empty").max(200, "must be at most 200 characters");

/**
 * What each filter does (API.md § "GET /v3/courses"), shared by the GET parameters and the
 * search body fields so both operations document one rule.
 */
export const FILTER_RULES = {
  courseStartDateTime: "Only courses with `startDateTime >= value`.",
  courseEndDateTime: "Only courses with `endDateTime <= value` (with `courseStartDateTime`: courses that start and end between the two).",
  absencesSent: "`true`: only courses whose absences were sent; `false` (default): no filter.",
  absencesNotSent: "`true`: only courses whose absences were not sent; `false` (default): no filter. Both `absencesSent` and `absencesNotSent` true: every course.",
  groupId: "Courses attached to at least one of these groups.",
  studentId: "Courses in which at least one of these students is enrolled.",
  professorId: "Courses to which at least one of these professors is assigned (co-teachers included).",
  trainingId: "Courses that belong to one of these trainings.",
  courseId: "Only these courses.",
  archived: "`true`: archived courses only; `false`: active courses only; omitted: both.",
  classroom: "Exact classroom name (1–200 characters).",
  creatorId: "Id of the course's creator.",
  name: "Case- and accent-insensitive substring of the course name (1–200 characters); `%` and `_` match literally.",
  createdAt: "Validated and accepted, currently ignored.",
  updatedAt: "Validated and accepted, currently ignored.",
  professorSignatureMissing:
    "`true`: courses where at least one assigned professor has not signed; `false`: courses where no assigned professor is unsigned (courses without professors included); omitted: no filter.",
  page: "Page number, from 1.",
  limit: "Items per page.",
  includeStudents: "Embed `students` (`[{ id, firstName, lastName, email }]`) in each course. Default false.",
  includeTeachers: "Embed `teachers` (`[{ id, firstName, lastName, email, coTeacher, signed }]`) in each course. Default false.",
  includeSurveyTemplates: "Embed `surveyTemplates` (`[{ id, name }]`) in each course. Default false.",
  includeTraining: "Embed `training` (`{ id, name }` or `null`) in each course. Default false.",
  sort: "Sort keys, applied in order, then `id` ascending. Default: `startDateTime` ascending. `name` and `classroom` sort case- and accent-insensitively; `null` sorts first in `asc`, last in `desc`.",
} as const satisfies Record<(typeof LIST_PARAMS)[number] | "courseId" | "sort", string>;

/** Example ids of each id list. */
const ID_EXAMPLES = {
  groupId: ["grp_1", "grp_7"],
  studentId: ["stu_1", "stu_2"],
  professorId: ["prf_4", "prf_9"],
  trainingId: ["trn_3"],
  courseId: ["crs_1", "crs_2"],
} as const;

/** `FILTER_RULES[name]` as zod metadata, with an optional example. */
const rule = (name: keyof typeof FILTER_RULES, extra: Record<string, unknown> = {}) => ({ description: FILTER_RULES[name], ...extra });

/** Splits a comma-separated id list: items trimmed, empty items dropped. */
export function splitIds(value: string): string[] {
  return value
    .split(",")
    .map((s) => s.trim())
    .filter((s) => s.length > 0);
}

/** How an instant is written, for the document. */
const INSTANT_TEXT = "ISO 8601 instant with a zone (`Z` or `±hh:mm`), e.g. `2026-09-07T08:00:00Z` or `2026-09-07T10:00:00+02:00`; without a zone it is a 400.";
const QUERY_PLUS_TEXT = " In a query string, a `+` that arrived as a space before `hh:mm` is read as `+`.";

/** An instant read from a client (`repair`: from a query string, see `repairQueryInstant`), parsed to ms. */
export const instantFrom = (repair: boolean) =>
  z
    .string()
    .transform((raw, ctx) => {
      const ms = parseInstant(repair ? repairQueryInstant(raw) : raw);
      if (ms === undefined) {
        ctx.addIssue({
          code: "custom",
          message: "must be an ISO 8601 instant with a zone, e.g. 2026-09-07T08:00:00Z or 2026-09-07T10:00:00+02:00",
        });
        return z.NEVER;
      }
      return ms;
    })
    .meta({ format: "date-time", example: "2026-09-07T08:00:00Z", description: INSTANT_TEXT + (repair ? QUERY_PLUS_TEXT : "") });

/** An instant filter (`repair`: read from a query string): its rule, then how the value is written. */
const instantParam = (name: keyof typeof FILTER_RULES, repair: boolean) =>
  instantFrom(repair).meta({ description: `${FILTER_RULES[name]} ${INSTANT_TEXT}${repair ? QUERY_PLUS_TEXT : ""}` });

// ---------------------------------------------------------------------------------------
// GET query string.

/** `true`, `false`, `1` or `0` (API.md § "Conventions"); anything else is a 400. */
const queryBoolean = z
  .enum(["true", "false", "1", "0"], { error: "must be one of true, false, 1, 0" })
  .transform((v) => v === "true" || v === "1");

/** A string-encoded integer from `min` to `max` (decimal digits only), documented with its rule and default. */
const queryInteger = (name: "page" | "limit", min: number, max: number, fallback: number, example: string) =>
  z
    .string()
    .regex(/^\d{1,9}$/, `must be an integer from ${min} to ${max}`)
    .transform(Number)
    .refine((n) => n >= min && n <= max, `must be an integer from ${min} to ${max}`)
    .meta({
      description: `${FILTER_RULES[name]} A string-encoded integer (decimal digits), minimum ${min}, maximum ${max}, default ${fallback}.`,
      default: String(fallback),
      example,
    });

/** A comma-separated id list (items trimmed, empty items dropped), at most GET_MAX_IDS ids. */
const queryIdList = (name: keyof typeof ID_EXAMPLES) =>
  z
    .string()
    .transform(splitIds)
    .pipe(z.array(idString))
    .meta({
      description: `${FILTER_RULES[name]} Comma-separated ids (items trimmed, empty items dropped; a repeated parameter adds to the list), at most ${GET_MAX_IDS} (beyond: 400 TOO_MANY_IDS; send longer lists with POST /v3/courses:search). An empty list is no filter.`,
      example: ID_EXAMPLES[name].join(","),
    });

/** Boolean query flag with its rule. */
const flag = (name: keyof typeof FILTER_RULES) => queryBoolean.meta(rule(name, { example: "true" }));

/** The query string of GET /v3/courses (exported for the OpenAPI document). */
export const listQuerySchema = z.strictObject({
  courseStartDateTime: instantParam("courseStartDateTime", true).optional(),
  courseEndDateTime: instantParam("courseEndDateTime", true).optional(),
  absencesSent: flag("absencesSent").optional(),
  absencesNotSent: flag("absencesNotSent").optional(),
  groupId: queryIdList("groupId").optional(),
  studentId: queryIdList("studentId").optional(),
  professorId: queryIdList("professorId").optional(),
  trainingId: queryIdList("trainingId").optional(),
  archived: flag("archived").optional(),
  classroom: text200.meta(rule("classroom", { example: "B204" })).optional(),
  creatorId: idString.meta(rule("creatorId", { example: "usr_12" })).optional(),
  name: text200.meta(rule("name", { example: "algebre" })).optional(),
  createdAt: instantParam("createdAt", true).optional(),
  updatedAt: instantParam("updatedAt", true).optional(),
  professorSignatureMissing: flag("professorSignatureMissing").optional(),
  page: queryInteger("page", 1, MAX_PAGE, 1, "1").optional(),
  limit: queryInteger("limit", 1, 100, 100, "20").optional(),
  includeStudents: flag("includeStudents").optional(),
  includeTeachers: flag("includeTeachers").optional(),
  includeSurveyTemplates: flag("includeSurveyTemplates").optional(),
  includeTraining: flag("includeTraining").optional(),
});

/** Parsed parameter values by name (both operations), before defaults. */
export type ParsedFields = Partial<{
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

/** Most unknown names an UNKNOWN_PARAMETER error lists (the rest are counted). */
const MAX_REPORTED_UNKNOWN = 20;
/** Longest unknown name quoted as it is (a longer one is cut, with `…`). */
const MAX_QUOTED_NAME = 100;

/**
 * Builds the 400 UNKNOWN_PARAMETER error (API.md § "Conventions"): the unknown names (at
 * most 20, each cut to 100 characters, the rest counted), a close match for each, and the
 * accepted names.
 */
export function unknownParameterError(
  unknown: string[],
  accepted: readonly string[],
  where: "parameter" | "path",
): ApiError {
  const listed = unknown.slice(0, MAX_REPORTED_UNKNOWN).map((name) => ({
    name: name.length > MAX_QUOTED_NAME ? `${name.slice(0, MAX_QUOTED_NAME)}…` : name,
    close: closestName(name, accepted),
  }));
  const hints = listed.map(({ name, close }) => (close ? `"${name}" (did you mean "${close}"?)` : `"${name}"`));
  const more = unknown.length - listed.length;
  const what = where === "parameter" ? "query parameter" : "body field";
  return new ApiError(
    400,
    "UNKNOWN_PARAMETER",
    `Unknown ${what}${unknown.length > 1 ? "s" : ""} ${hints.join(", ")}${more > 0 ? ` and ${more} more` : ""}. Accepted: ${accepted.join(", ")}.`,
    listed.map(({ name, close }) => {
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

/** The include flags alone: the query string of GET /v3/courses/{id} (exported for the OpenAPI document). */
export const includeQuerySchema = listQuerySchema.pick({
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

/** Documented input shape of a search id list: the union below reads as `string | unknown[]`. */
const bodyIdListShape = {
  anyOf: [
    { type: "array", items: { type: "string", pattern: ID_RE.source }, maxItems: SEARCH_MAX_IDS },
    { type: "string", description: "Comma-separated ids (items trimmed, empty items dropped)." },
  ],
};

const bodyIdList = (name: keyof typeof ID_EXAMPLES) =>
  z
    .union([z.string().transform(splitIds), z.array(z.unknown())], { error: "must be an array of ids or a comma-separated string" })
    // The count first: a 1 MiB comma-separated string splits into half a million items, and
    // judging each would be half a million issues.
    .pipe(z.array(z.unknown()).max(SEARCH_MAX_IDS, `must list at most ${SEARCH_MAX_IDS} ids`))
    .pipe(z.array(idString))
    .meta({
      ...bodyIdListShape,
      description: `${FILTER_RULES[name]} An array of up to ${SEARCH_MAX_IDS} ids (a comma-separated string is accepted too). An empty list is no filter.`,
      example: ID_EXAMPLES[name],
    });

const sortKeySchema = z
  .strictObject({
    field: z.enum(SORT_FIELDS, { error: `must be one of ${SORT_FIELDS.join(", ")}` }),
    order: z.enum(["asc", "desc"], { error: "must be asc or desc" }).default("asc"),
  })
  .meta({ id: "SortKey", description: "One sort key.", example: { field: "name", order: "asc" } });

const bodyFlag = (name: keyof typeof FILTER_RULES) => z.boolean().meta(rule(name));

/** The search body schema (exported for the OpenAPI document). */
export const searchBodySchema = z
  .strictObject({
    courseStartDateTime: instantParam("courseStartDateTime", false).optional(),
    courseEndDateTime: instantParam("courseEndDateTime", false).optional(),
    absencesSent: bodyFlag("absencesSent").optional(),
    absencesNotSent: bodyFlag("absencesNotSent").optional(),
    groupId: bodyIdList("groupId").optional(),
    studentId: bodyIdList("studentId").optional(),
    professorId: bodyIdList("professorId").optional(),
    trainingId: bodyIdList("trainingId").optional(),
    courseId: bodyIdList("courseId").optional(),
    archived: bodyFlag("archived").optional(),
    classroom: text200.meta(rule("classroom")).optional(),
    creatorId: idString.meta(rule("creatorId")).optional(),
    name: text200.meta(rule("name")).optional(),
    createdAt: instantParam("createdAt", false).optional(),
    updatedAt: instantParam("updatedAt", false).optional(),
    professorSignatureMissing: bodyFlag("professorSignatureMissing").optional(),
    page: z.number().int().min(1).max(MAX_PAGE).meta(rule("page", { default: 1 })).optional(),
    limit: z.number().int().min(1).max(100).meta(rule("limit", { default: 100 })).optional(),
    includeStudents: bodyFlag("includeStudents").meta({ default: false }).optional(),
    includeTeachers: bodyFlag("includeTeachers").meta({ default: false }).optional(),
    includeSurveyTemplates: bodyFlag("includeSurveyTemplates").meta({ default: false }).optional(),
    includeTraining: bodyFlag("includeTraining").meta({ default: false }).optional(),
    sort: z.array(sortKeySchema).max(SORT_FIELDS.length).meta(rule("sort")).optional(),
  })
  .meta({
    id: "CourseSearch",
    description: "Every GET /v3/courses parameter under the same name, typed as JSON, plus `courseId` and `sort`. Unknown fields, `__proto__`, `constructor` and `prototype` included at any depth, are a 400 UNKNOWN_PARAMETER.",
    example: {
      studentId: ["stu_1", "stu_2"],
      archived: false,
      courseStartDateTime: "2026-09-01T00:00:00+02:00",
      sort: [
        { field: "name", order: "asc" },
        { field: "startDateTime", order: "desc" },
      ],
      limit: 10,
      includeTeachers: true,
    },
  });

/** Most problems a VALIDATION_ERROR lists in `details` (and in its message, 10); the rest are counted. */
const MAX_REPORTED_PROBLEMS = 100;

/**
 * Validates a JSON value against a zod schema for a request body: the one place where every
 * body's fields are judged (search, course writes, webhooks).
 *
 * Besides the schema (`bodyHazards`, API.md § "Conventions"): a key `__proto__`,
 * `constructor` or `prototype` at any depth is an unknown field; a string with an unpaired
 * surrogate is invalid; a list of more than `MAX_BODY_LIST` items is invalid, judged before
 * the schema runs (which would otherwise report one issue per item).
 *
 * @throws ApiError 400 UNKNOWN_PARAMETER when the only problems are unknown fields (paths
 *   in `details`), else 400 VALIDATION_ERROR with the problems' JSON paths (at most 100 in
 *   `details`, 10 in `message`, the rest counted).
 */
export function parseBodyWith<T extends z.ZodType>(schema: T, body: unknown, accepted: readonly string[]): z.output<T> {
  const hazards = bodyHazards(body);
  const tooLong: ErrorDetail[] = hazards.longLists.map((path) => ({ path: jsonPath(path), message: `must list at most ${MAX_BODY_LIST} items` }));
  const parsed = tooLong.length > 0 ? undefined : schema.safeParse(body);
  if (parsed?.success && hazards.prototypeKeys.length === 0 && hazards.illFormed.length === 0) return parsed.data;
  const issues = parsed === undefined || parsed.success ? [] : parsed.error.issues;
  const unknown = [
    ...new Set([
      ...hazards.prototypeKeys.map(jsonPath),
      ...issues.flatMap((i) => (i.code === "unrecognized_keys" ? (i as { keys: string[] }).keys.map((k) => jsonPath([...i.path, k])) : [])),
    ]),
  ];
  const invalid: ErrorDetail[] = [
    ...tooLong,
    ...hazards.illFormed.map((path) => ({ path: jsonPath(path), message: "must be well-formed Unicode text (an unpaired surrogate such as \\ud800 has no UTF-8 form)" })),
    ...issues
      .filter((i) => i.code !== "unrecognized_keys")
      .slice(0, MAX_REPORTED_PROBLEMS)
      .flatMap((issue) => zodDetails(new z.ZodError([issue]), "path")),
  ];
  if (invalid.length === 0) throw unknownParameterError(unknown, accepted, "path");
  const found = unknown.length + invalid.length + Math.max(0, issues.filter((i) => i.code !== "unrecognized_keys").length - MAX_REPORTED_PROBLEMS);
  const details: ErrorDetail[] = [...unknown.map((path) => ({ path, message: "unknown field" })), ...invalid].slice(0, MAX_REPORTED_PROBLEMS);
  const more = (shown: number) => (found > shown ? ` (and ${found - shown} more)` : "");
  throw new ApiError(
    400,
    "VALIDATION_ERROR",
    `The body breaks the schema: ${details.slice(0, 10).map((d) => `${"path" in d ? d.path : d.parameter} ${d.message}`).join("; ")}${more(Math.min(10, details.length))}.`,
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
