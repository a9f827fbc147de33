/**
 * The course record and the course responses as zod schemas (docs/reference.md § "Course record"):
 * they generate the document's schemas (objects forbid undocumented fields), and the types
 * the code writes are their `z.infer`s. Also the shape of the events a course write
 * publishes (their documented bodies are built from it in src/events/schemas.ts).
 */
import { z } from "zod";
import { listEnvelope, paginationSchema, successEnvelope } from "../http/envelopes";
import { ApiError } from "../http/errors";
import { changeCursorSchema } from "../lib/change-cursor";
import { idSchema, instantOutSchema, opaqueIdSchema } from "../lib/fields";

/** The fields of a person (a student, a professor) as the API writes them. */
const personFields = {
  id: opaqueIdSchema,
  firstName: z.string(),
  lastName: z.string(),
  email: z.string().meta({ format: "email" }),
};

/** A student embedded by `includeStudents=true`. */
const studentRefSchema = z.strictObject(personFields).meta({
  id: "Student",
  description: "A student enrolled in the course.",
  example: { id: "stu_1", firstName: "Léa", lastName: "Martin", email: "lea.martin@example.org" },
});

/** A teacher embedded by `includeTeachers=true`. */
const teacherRefSchema = z
  .strictObject({
    ...personFields,
    coTeacher: z.boolean().meta({ description: "Assigned as co-teacher." }),
    signed: z.boolean().meta({ description: "Has signed the course's attendance sheet." }),
  })
  .meta({
    id: "Teacher",
    description: "A professor assigned to the course.",
    example: { id: "prf_4", firstName: "Karim", lastName: "Benali", email: "k.benali@example.org", coTeacher: false, signed: true },
  });

/** `{ id, name }` of a survey template or training. */
const namedRefSchema = z
  .strictObject({ id: opaqueIdSchema, name: z.string() })
  .meta({ id: "NamedRef", description: "A survey template or a training: `{ id, name }`.", example: { id: "trn_3", name: "BTS SIO" } });

/** Example course record (docs/reference.md § "Course record"). */
export const COURSE_EXAMPLE = {
  id: "crs_01K4A8Z1M2N3P4Q5R6S7T8V9W0",
  name: "Algèbre linéaire",
  startDateTime: "2026-09-07T08:00:00.000Z",
  endDateTime: "2026-09-07T10:00:00.000Z",
  classroom: "B204",
  creatorId: "usr_12",
  trainingId: "trn_3",
  groupIds: ["grp_1", "grp_7"],
  professorIds: ["prf_4", "prf_9"],
  archived: false,
  absencesSent: false,
  version: 3,
  createdAt: "2026-08-20T09:12:44.120Z",
  updatedAt: "2026-08-21T16:02:10.004Z",
} as const;

/** The example course with two include flags' fields. */
export const COURSE_WITH_INCLUDES = {
  ...COURSE_EXAMPLE,
  teachers: [
    { id: "prf_4", firstName: "Karim", lastName: "Benali", email: "k.benali@example.org", coTeacher: false, signed: true },
    { id: "prf_9", firstName: "Claire", lastName: "Moreau", email: "c.moreau@example.org", coTeacher: true, signed: false },
  ],
  training: { id: "trn_3", name: "BTS SIO" },
};

/**
 * The course record. `classroom`, `creatorId`, `trainingId` are `null` when absent;
 * `groupIds` and `professorIds` are sorted ascending (`[]` when empty). The include flags
 * add `students`, `teachers`, `surveyTemplates` (sorted by lastName, firstName, id / name,
 * id; names folded) and `training`.
 */
export const courseRecordSchema = z
  .strictObject({
    id: opaqueIdSchema.meta({ description: "The course id (`crs_…` when minted by the service).", example: COURSE_EXAMPLE.id }),
    name: z.string().min(1).max(200),
    startDateTime: instantOutSchema,
    endDateTime: instantOutSchema.meta({ description: "ISO 8601 instant, UTC, with milliseconds; after `startDateTime`." }),
    classroom: z.string().nullable().meta({ description: "Classroom name, `null` when absent." }),
    creatorId: opaqueIdSchema.nullable().meta({ description: "Id of the course's creator, `null` when absent." }),
    trainingId: opaqueIdSchema.nullable().meta({ description: "Id of the course's training, `null` when absent." }),
    groupIds: z.array(opaqueIdSchema).meta({ description: "Ids of the attached groups, sorted ascending." }),
    professorIds: z.array(opaqueIdSchema).meta({ description: "Ids of the assigned professors (co-teachers included), sorted ascending." }),
    archived: z.boolean(),
    absencesSent: z.boolean(),
    version: z.int().min(1).meta({
      description:
        "1 when the course is created (or first imported), +1 with each committed change; events carry it. GET /v3/courses/{id}, POST /v3/courses and PATCH send it as `ETag`, PATCH takes it in `If-Match`.",
      example: 3,
    }),
    createdAt: instantOutSchema,
    updatedAt: instantOutSchema,
    students: z.array(studentRefSchema).optional().meta({ description: "With `includeStudents=true`: enrolled students, by lastName, firstName, id." }),
    teachers: z.array(teacherRefSchema).optional().meta({ description: "With `includeTeachers=true`: assigned professors, by lastName, firstName, id." }),
    surveyTemplates: z.array(namedRefSchema).optional().meta({ description: "With `includeSurveyTemplates=true`: survey templates, by name, id." }),
    // A union with null, not `.nullable()`: zod-to-openapi drops the null of a nullable `$ref`.
    training: z.union([namedRefSchema, z.null()]).optional().meta({ description: "With `includeTraining=true`: the training, or `null`." }),
  })
  .meta({ id: "Course", description: "A course of the school (docs/reference.md § Course record).", example: COURSE_EXAMPLE });

/** A course record (`z.infer` of `courseRecordSchema`). */
export type CourseRecord = z.infer<typeof courseRecordSchema>;

/** `pagination` of the course listing: the shared fields and the keyset cursor (docs/reference.md § "GET /v3/courses"). */
const coursePaginationSchema = paginationSchema
  .extend({
    page: paginationSchema.shape.page.meta({
      description:
        "The page returned, from 1: the `page` asked for, or with `cursor` the page's place in the walk (the first page answered without a cursor is 1).",
    }),
    nextCursor: z.string().nullable().meta({
      description:
        "Send it as `cursor` (with the same filters and sort) for the next page: it starts after this page's last course, so a walk by cursor neither skips nor repeats a course that exists unchanged while it runs. `null` on the last page (`hasMore` false).",
    }),
    changesCursor: changeCursorSchema.meta({
      description:
        "The school's change cursor as of this page, read in the same read: pass it as `after` to GET /v3/courses/changes to get every course changed since (keep the one of your full sync's first page).",
      example: "chg_1042",
    }),
  })
  .meta({
    id: "CoursePagination",
    example: {
      page: 1,
      limit: 100,
      hasMore: true,
      nextCursor: "p1.WyI0ODkyYjhiYTA3MzI1OTE1IiwyLCJjcnNfMDFIWlg0IixbMTc4ODc2ODAwMDAwMF1d",
      changesCursor: "chg_1042",
    },
  });

/** 200 of GET /v3/courses and POST /v3/courses:search. */
export const courseListResponseSchema = listEnvelope("CourseList", courseRecordSchema, "One page of courses, ordered as asked.", coursePaginationSchema);

/** `pagination` of GET /v3/courses/changes. */
const changesPaginationSchema = z
  .strictObject({
    nextCursor: changeCursorSchema.meta({
      description: "The cursor after this page's last change (the `after` given, or `chg_0`, when the page is empty): the `after` of the next request.",
      example: "chg_1142",
    }),
    hasMore: z.boolean().meta({ description: "Whether changes follow this page (ask again with `after=nextCursor`)." }),
  })
  .meta({ id: "ChangesPagination", example: { nextCursor: "chg_1142", hasMore: true } });

/** 200 of GET /v3/courses/changes. */
export const courseChangesResponseSchema = listEnvelope(
  "CourseChanges",
  courseRecordSchema,
  "The courses changed after the cursor, each once, at its latest change, in change order.",
  changesPaginationSchema,
);
/** 200 of GET and PATCH /v3/courses/{id}, 201 of POST /v3/courses. */
export const courseResponseSchema = successEnvelope("CourseResponse", courseRecordSchema, "One course.");

/** The `{id}` of GET and PATCH /v3/courses/{id}. */
export const courseIdParams = z.strictObject({
  id: z.string().meta({
    description: "The course id. An id that is not a course of the school — malformed, unknown or another school's — answers 404 COURSE_NOT_FOUND.",
    example: COURSE_EXAMPLE.id,
  }),
});

/** 404 COURSE_NOT_FOUND for `id`. */
export const courseNotFound = (id: string) => new ApiError("COURSE_NOT_FOUND", `No course with id "${id}" exists in this school.`);

// ---------------------------------------------------------------------------------------
// The events a course write publishes (docs/reference.md § "POST /v3/courses — create a course · PATCH /v3/courses/{id} — change one").

/** Event types of course writes, in the contract's order; a registration subscribes to them. */
export const COURSE_EVENT_TYPES = [
  "course.created",
  "course.updated",
  "course.archived",
  "course.unarchived",
  "course.absences_sent",
  "course.professor_signed",
] as const;

/**
 * The keys of a course that a webhook filter looks at (docs/reference.md § "POST /v3/webhooks":
 * `filter`): its training, groups and professors.
 */
export const courseKeysSchema = z.strictObject({
  trainingId: idSchema.nullable(),
  groupIds: z.array(idSchema),
  professorIds: z.array(idSchema),
});

/** A course's filter keys (`courseKeysSchema`). */
export type CourseKeys = z.infer<typeof courseKeysSchema>;

/**
 * An event of a course write, as queued in the outbox (`data.course`: the course after the
 * write; `changeCursor` the cursor of the change, set in the write's batch). `previous`, on a change, holds the course's filter keys before it, so a filter
 * hears of a course leaving its scope; the hub strips it: it is never delivered.
 */
const courseEventSchema = z.strictObject({
  id: idSchema,
  changeCursor: changeCursorSchema,
  type: z.enum(COURSE_EVENT_TYPES),
  createdAt: instantOutSchema,
  schoolId: idSchema,
  data: z.strictObject({ course: courseRecordSchema, professorId: idSchema.optional() }),
  previous: courseKeysSchema.optional(),
});

/** An event of a course write (`course.professor_signed` adds `data.professorId`). */
export type CourseEvent = z.infer<typeof courseEventSchema>;
