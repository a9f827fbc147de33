/**
 * The request schemas of the course listing (docs/reference.md § "GET /v3/courses", § "POST
 * /v3/courses:search"): the GET query string, the include flags of GET /v3/courses/{id} and
 * the search body. Each filter's rule is written once (`FILTER_RULES`) and documents both
 * its GET parameter and its search field; the document declares a query parameter by what
 * it means (`limit` an integer), src/lib/fields.ts reads it from the query string.
 */
import { z } from "zod";
import { changeCursorSchema } from "../lib/change-cursor";
import {
  bodyIdListSchema,
  bodyIntegerSchema,
  idSchema,
  instantSchema,
  queryBooleanSchema,
  queryIdListSchema,
  queryIntegerSchema,
  textSchema,
} from "../lib/fields";
import { ID_RE } from "../lib/ids";
import { GET_MAX_IDS, MAX_PAGE, MAX_PAGE_SIZE, SEARCH_MAX_IDS } from "../lib/limits";
import { MAX_CURSOR_CHARS } from "./page-cursor";

/** Sortable fields of `POST /v3/courses:search`. */
const SORT_FIELDS = ["startDateTime", "endDateTime", "name", "classroom", "createdAt", "updatedAt"] as const;

/** The id-list filters (their GET repetitions are joined). */
export const ID_LIST_PARAMS = ["groupId", "studentId", "professorId", "trainingId"] as const;

/** What each filter does, for its GET parameter and its search field alike. */
const FILTER_RULES = {
  courseStartDateTime: "Only courses with `startDateTime >= value`.",
  courseEndDateTime: "Only courses with `endDateTime <= value` (with `courseStartDateTime`: courses that start and end between the two).",
  absencesSent: "`true`: only courses whose absences were sent; `false` (default): no filter.",
  absencesNotSent:
    "`true`: only courses whose absences were not sent; `false` (default): no filter. Both `absencesSent` and `absencesNotSent` true: every course.",
  groupId: "Courses attached to at least one of these groups.",
  studentId: "Courses in which at least one of these students is enrolled.",
  professorId: "Courses to which at least one of these professors is assigned (co-teachers included).",
  trainingId: "Courses that belong to one of these trainings.",
  courseId: "Only these courses.",
  archived: "`true`: archived courses only; `false`: active courses only; omitted: both.",
  classroom: "Exact classroom name (1–200 characters).",
  creatorId: "Id of the course's creator.",
  name: "Case- and accent-insensitive substring of the course name (1–200 characters); `%` and `_` match literally.",
  createdAt: "Deprecated: accepted, ignored (validated as an instant, filters nothing; the contract keeps it for old clients).",
  updatedAt: "Deprecated: accepted, ignored (validated as an instant, filters nothing; the contract keeps it for old clients).",
  professorSignatureMissing:
    "`true`: courses where at least one assigned professor has not signed; `false`: courses where no assigned professor is unsigned (courses without professors included); omitted: no filter.",
  page: "Page number, from 1. Not with `cursor`.",
  cursor:
    "The `pagination.nextCursor` of the previous page: the page that follows that page's last course in the listing's order, stable under concurrent writes (a course that exists unchanged throughout a walk by cursor comes exactly once). Valid only with the filters and sort it was answered for; not with `page`.",
  limit: "Items per page.",
  includeStudents: "Embed `students` (`[{ id, firstName, lastName, email }]`) in each course. Default false.",
  includeTeachers: "Embed `teachers` (`[{ id, firstName, lastName, email, coTeacher, signed }]`) in each course. Default false.",
  includeSurveyTemplates: "Embed `surveyTemplates` (`[{ id, name }]`) in each course. Default false.",
  includeTraining: "Embed `training` (`{ id, name }` or `null`) in each course. Default false.",
  sort: "Sort keys, applied in order, then `id` ascending. Default: `startDateTime` ascending. `name` and `classroom` sort case- and accent-insensitively; `null` sorts first in `asc`, last in `desc`.",
} as const;

type Filter = keyof typeof FILTER_RULES;

/** Example ids of each id list. */
const ID_EXAMPLES = {
  groupId: ["grp_1", "grp_7"],
  studentId: ["stu_1", "stu_2"],
  professorId: ["prf_4", "prf_9"],
  trainingId: ["trn_3"],
  courseId: ["crs_1", "crs_2"],
} as const;

/** `FILTER_RULES[name]` as zod metadata, with extra keywords (an example, a default). */
const rule = (name: Filter, extra: Record<string, unknown> = {}) => ({ description: FILTER_RULES[name], ...extra });

/** How an instant is written, for the document. */
const INSTANT_TEXT = "ISO 8601 instant with a zone (`Z` or `±hh:mm`), e.g. `2026-09-07T08:00:00Z` or `2026-09-07T10:00:00+02:00`; without a zone it is a 400.";
const QUERY_PLUS_TEXT = " In a query string, a `+` that arrived as a space before `hh:mm` is read as `+`.";

/** The filters the contract accepts and ignores (docs/reference.md § "GET /v3/courses"): marked `deprecated` in the document. */
const IGNORED_FILTERS: ReadonlySet<Filter> = new Set(["createdAt", "updatedAt"]);

/** An instant filter (`repair`: read from a query string): its rule, then how the value is written. */
const instantParam = (name: Filter, repair: boolean) =>
  instantSchema({ repair }).meta({
    example: "2026-09-07T08:00:00Z",
    description: `${FILTER_RULES[name]} ${INSTANT_TEXT}${repair ? QUERY_PLUS_TEXT : ""}`,
    ...(IGNORED_FILTERS.has(name) ? { deprecated: true } : {}),
  });

const text200 = textSchema();

// ---------------------------------------------------------------------------------------
// GET query string.

/** An integer query parameter, documented with its rule, range and default. */
const queryInteger = (name: "page" | "limit", max: number, fallback: number, example: number) =>
  queryIntegerSchema(1, max, fallback).meta({ description: `${FILTER_RULES[name]} An integer, minimum 1, maximum ${max}, default ${fallback}.`, example });

/** A comma-separated id list, or the parameter repeated; at most GET_MAX_IDS ids in all. */
const queryIdList = (name: keyof typeof ID_EXAMPLES) =>
  queryIdListSchema().meta({
    anyOf: [
      { type: "string", description: "Comma-separated ids." },
      { type: "array", items: { type: "string" }, description: `The parameter repeated (\`${name}=a&${name}=b\`), each an id or comma-separated ids.` },
    ],
    description: `${FILTER_RULES[name]} Comma-separated ids (items trimmed, empty items dropped), at most ${GET_MAX_IDS} in all (beyond: 400 TOO_MANY_IDS; send longer lists with POST /v3/courses:search); a repeated parameter adds to the list (\`${name}=${ID_EXAMPLES[name][0]}&${name}=…\`: an array in a generated client). An empty list is no filter.`,
    example: ID_EXAMPLES[name].join(","),
  });

/** A page cursor: checked against the query by src/courses/filters.ts (400 INVALID_PARAMETER). */
const cursorSchema = z
  .string()
  .min(1)
  .max(MAX_CURSOR_CHARS)
  .meta(rule("cursor", { example: "p1.WyI0ODkyYjhiYTA3MzI1OTE1IiwyLCJjcnNfMDFIWlg0IixbMTc4ODc2ODAwMDAwMF1d" }));

/** Boolean query flag with its rule. */
const flag = (name: Filter) => queryBooleanSchema.meta(rule(name, { example: true }));

/** The query string of GET /v3/courses. */
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
  creatorId: idSchema.meta(rule("creatorId", { example: "usr_12" })).optional(),
  name: text200.meta(rule("name", { example: "algebre" })).optional(),
  createdAt: instantParam("createdAt", true).optional(),
  updatedAt: instantParam("updatedAt", true).optional(),
  professorSignatureMissing: flag("professorSignatureMissing").optional(),
  page: queryInteger("page", MAX_PAGE, 1, 1).optional(),
  cursor: cursorSchema.optional(),
  limit: queryInteger("limit", MAX_PAGE_SIZE, MAX_PAGE_SIZE, 20).optional(),
  includeStudents: flag("includeStudents").optional(),
  includeTeachers: flag("includeTeachers").optional(),
  includeSurveyTemplates: flag("includeSurveyTemplates").optional(),
  includeTraining: flag("includeTraining").optional(),
});

/** The include flags alone: the query string of GET /v3/courses/{id}. */
export const includeQuerySchema = listQuerySchema.pick({
  includeStudents: true,
  includeTeachers: true,
  includeSurveyTemplates: true,
  includeTraining: true,
});

/**
 * The query string of GET /v3/courses/changes: `after`, then the listing's `limit` and
 * include flags (same rules, same defaults).
 */
export const changesQuerySchema = z.strictObject({
  after: changeCursorSchema
    .meta({
      description:
        "Answer the changes after this cursor: a `pagination.nextCursor` of this operation, the `pagination.changesCursor` of GET /v3/courses or POST /v3/courses:search, or an event's `changeCursor`. Omitted: from the school's first change. A cursor never expires. Anything else is a 400 INVALID_PARAMETER.",
      example: "chg_1042",
    })
    .optional(),
  ...listQuerySchema.pick({ limit: true, includeStudents: true, includeTeachers: true, includeSurveyTemplates: true, includeTraining: true }).shape,
});

// ---------------------------------------------------------------------------------------
// Search body.

/** Documented input shape of a search id list: the union reads as `string | unknown[]`. */
const bodyIdListShape = {
  anyOf: [
    { type: "array", items: { type: "string", pattern: ID_RE.source }, maxItems: SEARCH_MAX_IDS },
    { type: "string", description: "Comma-separated ids (items trimmed, empty items dropped)." },
  ],
};

const bodyIdList = (name: keyof typeof ID_EXAMPLES) =>
  bodyIdListSchema(SEARCH_MAX_IDS).meta({
    ...bodyIdListShape,
    description: `${FILTER_RULES[name]} An array of up to ${SEARCH_MAX_IDS} ids (a comma-separated string is accepted too). An empty list is no filter.`,
    example: ID_EXAMPLES[name],
  });

const sortKeySchema = z
  .strictObject({
    // Their messages are the catalogue's (src/http/request.ts `catalogueMessage`): "is required" when absent.
    field: z.enum(SORT_FIELDS),
    order: z.enum(["asc", "desc"]).default("asc"),
  })
  .meta({ id: "SortKey", description: "One sort key.", example: { field: "name", order: "asc" } });

/** One sort key; keys apply in order, then `id` ascending. */
export type SortKey = z.output<typeof sortKeySchema>;

const bodyFlag = (name: Filter) => z.boolean().meta(rule(name));

/**
 * The search body. Its fields are the GET parameters in the same order, then `courseId`
 * and `sort` (the order in which an UNKNOWN_PARAMETER message lists them).
 */
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
    archived: bodyFlag("archived").optional(),
    classroom: text200.meta(rule("classroom")).optional(),
    creatorId: idSchema.meta(rule("creatorId")).optional(),
    name: text200.meta(rule("name")).optional(),
    createdAt: instantParam("createdAt", false).optional(),
    updatedAt: instantParam("updatedAt", false).optional(),
    professorSignatureMissing: bodyFlag("professorSignatureMissing").optional(),
    page: bodyIntegerSchema(1, MAX_PAGE)
      .meta(rule("page", { default: 1 }))
      .optional(),
    cursor: cursorSchema.optional(),
    limit: bodyIntegerSchema(1, MAX_PAGE_SIZE)
      .meta(rule("limit", { default: MAX_PAGE_SIZE }))
      .optional(),
    includeStudents: bodyFlag("includeStudents").meta({ default: false }).optional(),
    includeTeachers: bodyFlag("includeTeachers").meta({ default: false }).optional(),
    includeSurveyTemplates: bodyFlag("includeSurveyTemplates").meta({ default: false }).optional(),
    includeTraining: bodyFlag("includeTraining").meta({ default: false }).optional(),
    courseId: bodyIdList("courseId").optional(),
    sort: z.array(sortKeySchema).max(SORT_FIELDS.length).meta(rule("sort")).optional(),
  })
  .meta({
    id: "CourseSearch",
    description:
      "Every GET /v3/courses parameter under the same name, typed as JSON, plus `courseId` and `sort`. Unknown fields, `__proto__`, `constructor` and `prototype` included at any depth, are a 400 UNKNOWN_PARAMETER.",
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
