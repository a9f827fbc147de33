/**
 * The bodies of the course writes (docs/reference.md § "POST /v3/courses — create a course · PATCH /v3/courses/{id} — change one"):
 * one set of field schemas, all optional for PATCH, three of them required for POST.
 */
import { z } from "zod";
import { parseBodyWith } from "../http/body";
import { idSchema, instantSchema, professorAssignmentSchema, textSchema, uniqueProfessors } from "../lib/fields";

/**
 * Max items of `groupIds`, `studentIds` and `surveyTemplateIds` in a write body. A course is
 * read back as one row with its lists and includes embedded as JSON, and each of its events
 * carries it whole: with every list full of 64-character ids and the four includes, that row
 * and each outbox row stay well under D1's 2,000,000-byte limit on a string or row
 * (https://developers.cloudflare.com/d1/platform/limits/). test/courses/d1-limits.test.ts checks it at
 * this bound.
 */
export const MAX_LIST = 1_000;
/**
 * Max professors of a course. A write publishes one `course.professor_signed` event per
 * professor who signs, each carrying the course: 100 events of at most ~75 KB keep a write's
 * D1 batch and hub call a few megabytes (10,000 would be a gigabyte).
 */
export const MAX_PROFESSORS = 100;

const instant = instantSchema().meta({
  description: "ISO 8601 instant with a zone (`Z` or `±hh:mm`); stored to the millisecond and written back in UTC.",
  example: "2026-09-07T10:00:00+02:00",
});

const idList = (what: string, example: string[]) =>
  z
    .array(idSchema)
    .max(MAX_LIST)
    .transform((ids) => [...new Set(ids)].sort())
    .meta({
      description: `Ids of the ${what} (at most ${MAX_LIST}; duplicates dropped). Sent, it replaces the whole list; every id must exist in the school.`,
      example,
    });

const professorsSchema = z
  .array(professorAssignmentSchema)
  .max(MAX_PROFESSORS)
  .superRefine(uniqueProfessors)
  .transform((list) => [...list].sort((a, b) => (a.professorId < b.professorId ? -1 : 1)))
  .meta({
    description: `The assigned professors (at most ${MAX_PROFESSORS}, each once). Sent, it replaces the whole list; every id must exist in the school.`,
  });

const fields = {
  name: textSchema({ trim: true }).meta({ description: "Course name, 1–200 characters (trimmed).", example: "Algèbre linéaire" }),
  startDateTime: instant,
  endDateTime: instant.meta({
    description: "ISO 8601 instant with a zone; must be after `startDateTime` (else 400 INVALID_DATE_RANGE).",
    example: "2026-09-07T12:00:00+02:00",
  }),
  classroom: textSchema({ trim: true }).nullable().meta({ description: "Classroom name (1–200 characters); `null` clears it.", example: "B204" }),
  creatorId: idSchema.nullable().meta({ description: "Id of the course's creator; `null` clears it.", example: "usr_12" }),
  trainingId: idSchema.nullable().meta({ description: "Id of a training of the school; `null` clears it.", example: "trn_3" }),
  groupIds: idList("groups", ["grp_1", "grp_7"]),
  studentIds: idList("enrolled students", ["stu_1", "stu_2"]),
  professors: professorsSchema,
  surveyTemplateIds: idList("survey templates", ["svt_2"]),
};

/** Every write field, optional (PATCH changes only the fields sent). */
const optionalFields = z.strictObject(fields).partial();

/** POST /v3/courses body: `name`, `startDateTime`, `endDateTime` required. */
export const createCourseSchema = optionalFields.required({ name: true, startDateTime: true, endDateTime: true }).meta({
  id: "CourseCreate",
  description:
    "A new course: `name`, `startDateTime` and `endDateTime` are required. Unknown fields, `__proto__`, `constructor` and `prototype` included at any depth, are a 400 UNKNOWN_PARAMETER.",
  example: {
    name: "Algèbre linéaire",
    startDateTime: "2026-12-01T08:00:00+01:00",
    endDateTime: "2026-12-01T10:00:00+01:00",
    classroom: "B204",
    groupIds: ["grp_1"],
    professors: [{ professorId: "prf_4", coTeacher: false, signed: false }],
  },
});

/** PATCH /v3/courses/{id} body: every field optional, plus `archived` and `absencesSent`. */
export const patchCourseSchema = optionalFields
  .extend({
    archived: z
      .boolean()
      .optional()
      .meta({ description: "Archive (`true`, publishes `course.archived`) or restore (`false`, publishes `course.unarchived`)." }),
    absencesSent: z.boolean().optional().meta({ description: "Mark absences as sent (false → true publishes `course.absences_sent`)." }),
  })
  .meta({
    id: "CoursePatch",
    description:
      "The fields to change; only the fields sent change, a list sent replaces the whole list, `null` clears `classroom`, `creatorId`, `trainingId`. Unknown fields, `__proto__`, `constructor` and `prototype` included at any depth, are a 400 UNKNOWN_PARAMETER.",
    example: { archived: true, professors: [{ professorId: "prf_4", signed: true }] },
  });

/** A patch: the fields sent, validated (instants in ms, lists sorted and deduplicated). */
export type CoursePatch = z.output<typeof patchCourseSchema>;

/** A parsed POST body: a patch with `name`, `startDateTime` and `endDateTime`. */
export type CourseInput = z.output<typeof createCourseSchema>;

/** Parses a POST body. @throws ApiError 400 VALIDATION_ERROR / UNKNOWN_PARAMETER. */
export function parseCreateBody(body: unknown): CourseInput {
  return parseBodyWith(createCourseSchema, body);
}

/** Parses a PATCH body. @throws ApiError 400 VALIDATION_ERROR / UNKNOWN_PARAMETER. */
export function parsePatchBody(body: unknown): CoursePatch {
  return parseBodyWith(patchCourseSchema, body);
}
