/**
 * Course writes (API.md § "POST /v3/courses · PATCH /v3/courses/{id}"): validation, the
 * change and its events, and the D1 batch that writes the rows and the outbox together.
 *
 * Concurrency: D1 has no interactive transactions, so a write is a compare-and-set on the
 * course's `revision`. Every statement of the batch is guarded by "the course now carries my
 * revision"; a PATCH that lost a race writes nothing and is recomputed on fresh state, so
 * no field of a concurrent PATCH is lost and each event describes exactly its own change.
 */
import { sql, type SQL } from "drizzle-orm";
import type { DrizzleD1Database } from "drizzle-orm/d1";
import { z } from "zod";
import { getDb, prepare } from "../db/client";
import type { SchoolEvent } from "../events/types";
import { ApiError, type ErrorCode, type ErrorDetail } from "../http/errors";
import { ID_RE, mintId } from "../lib/ids";
import { fold } from "../lib/text";
import { formatInstant, parseInstant } from "../lib/time";
import { parseBodyWith } from "./filters";
import type { CourseRecord } from "./record";

// ---------------------------------------------------------------------------------------
// Body schemas.

const id = z.string().regex(ID_RE, "must be an id of 1–64 characters [A-Za-z0-9_-]");
const instant = z
  .string()
  .transform((raw, ctx) => {
    const ms = parseInstant(raw);
    if (ms === undefined) {
      ctx.addIssue({ code: "custom", message: "must be an ISO 8601 instant with a zone, e.g. 2026-09-07T08:00:00Z" });
      return z.NEVER;
    }
    return ms;
  })
  .meta({
    format: "date-time",
    description: "ISO 8601 instant with a zone (`Z` or `±hh:mm`); stored to the millisecond and written back in UTC.",
    example: "2026-09-07T10:00:00+02:00",
  });
/**
 * Max items of `groupIds`, `studentIds` and `surveyTemplateIds` in a write body. A course is
 * read back as one row with its lists and includes embedded as JSON, and each of its events
 * carries it whole: with every list full of 64-character ids and the four includes, that row
 * and each outbox row stay well under D1's 1,000,000-byte limit on a string or row
 * (https://developers.cloudflare.com/d1/platform/limits/). test/limits.test.ts checks it at
 * this bound.
 */
export const MAX_LIST = 1_000;
/**
 * Max professors of a course. A write publishes one `course.professor_signed` event per
 * professor who signs, each carrying the course: 100 events of at most ~75 KB keep a write's
 * D1 batch and hub call a few megabytes (10,000 would be a gigabyte).
 */
export const MAX_PROFESSORS = 100;
const idList = (what: string, example: string[]) =>
  z
    .array(id)
    .max(MAX_LIST)
    .transform((ids) => [...new Set(ids)].sort())
    .meta({ description: `Ids of the ${what} (at most ${MAX_LIST}; duplicates dropped). Sent, it replaces the whole list; every id must exist in the school.`, example });
const professorsSchema = z
  .array(
    z
      .strictObject({
        professorId: id.meta({ example: "prf_4" }),
        coTeacher: z.boolean().default(false).meta({ description: "Assigned as co-teacher." }),
        signed: z.boolean().default(false).meta({ description: "Has signed (false → true publishes `course.professor_signed`)." }),
      })
      .meta({ id: "ProfessorAssignment", description: "A professor assigned to the course.", example: { professorId: "prf_4", coTeacher: false, signed: true } }),
  )
  .max(MAX_PROFESSORS)
  .superRefine((list, ctx) => {
    const seen = new Set<string>();
    list.forEach((p, i) => {
      if (seen.has(p.professorId)) ctx.addIssue({ code: "custom", path: [i, "professorId"], message: `professor "${p.professorId}" is listed twice` });
      seen.add(p.professorId);
    });
  })
  .transform((list) => [...list].sort((a, b) => (a.professorId < b.professorId ? -1 : 1)))
  .meta({ description: `The assigned professors (at most ${MAX_PROFESSORS}, each once). Sent, it replaces the whole list; every id must exist in the school.` });

const nullableText = z.string().trim().min(1, "must not be empty").max(200, "must be at most 200 characters").nullable();
const fields = {
  name: z.string().trim().min(1, "must not be empty").max(200, "must be at most 200 characters").meta({ description: "Course name, 1–200 characters (trimmed).", example: "Algèbre linéaire" }),
  startDateTime: instant,
  endDateTime: instant.meta({ description: "ISO 8601 instant with a zone; must be after `startDateTime` (else 400 INVALID_DATE_RANGE).", example: "2026-09-07T12:00:00+02:00" }),
  classroom: nullableText.meta({ description: "Classroom name (1–200 characters); `null` clears it.", example: "B204" }),
  creatorId: id.nullable().meta({ description: "Id of the course's creator; `null` clears it.", example: "usr_12" }),
  trainingId: id.nullable().meta({ description: "Id of a training of the school; `null` clears it.", example: "trn_3" }),
  groupIds: idList("groups", ["grp_1", "grp_7"]),
  studentIds: idList("enrolled students", ["stu_1", "stu_2"]),
  professors: professorsSchema,
  surveyTemplateIds: idList("survey templates", ["svt_2"]),
};

/** Every write field, optional (PATCH changes only the fields sent). */
const optionalFields = z.strictObject(fields).partial();

/** POST /v3/courses body: `name`, `startDateTime`, `endDateTime` required. */
export const createCourseSchema = optionalFields
  .required({ name: true, startDateTime: true, endDateTime: true })
  .meta({
    id: "CourseCreate",
    description: "A new course: `name`, `startDateTime` and `endDateTime` are required. Unknown fields, `__proto__`, `constructor` and `prototype` included at any depth, are a 400 UNKNOWN_PARAMETER.",
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
    archived: z.boolean().optional().meta({ description: "Archive (`true`, publishes `course.archived`) or restore (`false`, publishes `course.unarchived`)." }),
    absencesSent: z.boolean().optional().meta({ description: "Mark absences as sent (false → true publishes `course.absences_sent`)." }),
  })
  .meta({
    id: "CoursePatch",
    description: "The fields to change; only the fields sent change, a list sent replaces the whole list, `null` clears `classroom`, `creatorId`, `trainingId`. Unknown fields, `__proto__`, `constructor` and `prototype` included at any depth, are a 400 UNKNOWN_PARAMETER.",
    example: { archived: true, professors: [{ professorId: "prf_4", signed: true }] },
  });

const CREATE_FIELDS = Object.keys(createCourseSchema.shape);
const PATCH_FIELDS = Object.keys(patchCourseSchema.shape);

/** A patch: the fields sent, validated (instants in ms, lists sorted and deduplicated). */
export type CoursePatch = z.output<typeof patchCourseSchema>;

/** Parses a POST body. @throws ApiError 400 VALIDATION_ERROR / UNKNOWN_PARAMETER. */
export function parseCreateBody(body: unknown): CoursePatch & { name: string; startDateTime: number; endDateTime: number } {
  return parseBodyWith(createCourseSchema, requireObject(body), CREATE_FIELDS);
}

/** Parses a PATCH body. @throws ApiError 400 VALIDATION_ERROR / UNKNOWN_PARAMETER. */
export function parsePatchBody(body: unknown): CoursePatch {
  return parseBodyWith(patchCourseSchema, requireObject(body), PATCH_FIELDS);
}

function requireObject(body: unknown): object {
  if (typeof body !== "object" || body === null || Array.isArray(body)) {
    throw new ApiError(400, "VALIDATION_ERROR", "The body must be a JSON object.", [{ path: "$", message: "must be an object" }]);
  }
  return body;
}

// ---------------------------------------------------------------------------------------
// Course state.

/** A professor assignment. */
export interface Assignment {
  professorId: string;
  coTeacher: boolean;
  signed: boolean;
}

/** The full stored state of a course (what a write compares and replaces). Instants in ms. */
export interface CourseState {
  id: string;
  name: string;
  startDateTime: number;
  endDateTime: number;
  classroom: string | null;
  creatorId: string | null;
  trainingId: string | null;
  groupIds: string[];
  studentIds: string[];
  professors: Assignment[];
  surveyTemplateIds: string[];
  archived: boolean;
  absencesSent: boolean;
  createdAt: number;
  updatedAt: number;
  revision: string | null;
}

/** The course record of a state (API.md § "Course record"). */
export function stateToRecord(s: CourseState): CourseRecord {
  return {
    id: s.id,
    name: s.name,
    startDateTime: formatInstant(s.startDateTime),
    endDateTime: formatInstant(s.endDateTime),
    classroom: s.classroom,
    creatorId: s.creatorId,
    trainingId: s.trainingId,
    groupIds: s.groupIds,
    professorIds: s.professors.map((p) => p.professorId),
    archived: s.archived,
    absencesSent: s.absencesSent,
    createdAt: formatInstant(s.createdAt),
    updatedAt: formatInstant(s.updatedAt),
  };
}

interface StateRow {
  id: string;
  name: string;
  start_ms: number;
  end_ms: number;
  classroom: string | null;
  creator_id: string | null;
  training_id: string | null;
  archived: number;
  absences_sent: number;
  created_at: number;
  updated_at: number;
  revision: string | null;
  group_ids: string;
  student_ids: string;
  professors: string;
  survey_template_ids: string;
}

const rel = (table: string, column: string) =>
  `(SELECT json_group_array(${column}) FROM (SELECT ${column} FROM ${table} r WHERE r.school_id = c.school_id AND r.course_id = c.id ORDER BY ${column}))`;

/** Reads a course's full state (one statement). Returns `undefined` when it does not exist in the school. */
export async function loadCourseState(db: DrizzleD1Database, schoolId: string, courseId: string): Promise<CourseState | undefined> {
  const row = await db.get<StateRow>(sql`SELECT c.id, c.name, c.start_ms, c.end_ms, c.classroom, c.creator_id, c.training_id, c.archived,
      c.absences_sent, c.created_at, c.updated_at, c.revision,
      ${sql.raw(rel("course_groups", "group_id"))} AS group_ids,
      ${sql.raw(rel("course_students", "student_id"))} AS student_ids,
      ${sql.raw(rel("course_survey_templates", "survey_template_id"))} AS survey_template_ids,
      (SELECT json_group_array(json_object('professorId', professor_id, 'coTeacher', co_teacher, 'signed', signed)) FROM
        (SELECT professor_id, co_teacher, signed FROM course_professors r WHERE r.school_id = c.school_id AND r.course_id = c.id ORDER BY professor_id)) AS professors
    FROM courses c WHERE c.school_id = ${schoolId} AND c.id = ${courseId}`);
  if (!row) return undefined;
  return {
    id: row.id,
    name: row.name,
    startDateTime: row.start_ms,
    endDateTime: row.end_ms,
    classroom: row.classroom,
    creatorId: row.creator_id,
    trainingId: row.training_id,
    groupIds: JSON.parse(row.group_ids) as string[],
    studentIds: JSON.parse(row.student_ids) as string[],
    professors: (JSON.parse(row.professors) as { professorId: string; coTeacher: number; signed: number }[]).map((p) => ({
      professorId: p.professorId,
      coTeacher: p.coTeacher === 1,
      signed: p.signed === 1,
    })),
    surveyTemplateIds: JSON.parse(row.survey_template_ids) as string[],
    archived: row.archived === 1,
    absencesSent: row.absences_sent === 1,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    revision: row.revision,
  };
}

// ---------------------------------------------------------------------------------------
// References.

const REFERENCE_CHECKS: { field: "studentIds" | "groupIds" | "professors" | "trainingId" | "surveyTemplateIds"; table: string; code: ErrorCode; what: string }[] = [
  { field: "studentIds", table: "students", code: "STUDENTS_NOT_FOUND", what: "students" },
  { field: "groupIds", table: "groups", code: "GROUPS_NOT_FOUND", what: "groups" },
  { field: "professors", table: "professors", code: "PROFESSORS_NOT_FOUND", what: "professors" },
  { field: "trainingId", table: "trainings", code: "TRAINING_NOT_FOUND", what: "training" },
  { field: "surveyTemplateIds", table: "survey_templates", code: "SURVEY_TEMPLATES_NOT_FOUND", what: "survey templates" },
];

/**
 * Checks that every referenced id exists in the school, in one D1 batch.
 *
 * @throws ApiError 400 STUDENTS_NOT_FOUND | GROUPS_NOT_FOUND | PROFESSORS_NOT_FOUND |
 *   TRAINING_NOT_FOUND | SURVEY_TEMPLATES_NOT_FOUND: the code of the first kind with missing
 *   ids (in that order); `details` lists every missing id of every kind with its JSON path.
 */
export async function checkReferences(d1: D1Database, schoolId: string, patch: CoursePatch, timed: D1Timer = untimed): Promise<void> {
  const wanted = REFERENCE_CHECKS.map((check) => {
    const v = patch[check.field];
    const ids = v == null ? [] : typeof v === "string" ? [v] : (v as (string | Assignment)[]).map((x) => (typeof x === "string" ? x : x.professorId));
    return { check, ids };
  }).filter((w) => w.ids.length > 0);
  if (wanted.length === 0) return;
  const batch = await timed(() => d1.batch<{ id: string }>(
    wanted.map((w) =>
      prepare(
        d1,
        sql`SELECT value AS id FROM json_each(${JSON.stringify(w.ids)}) WHERE value NOT IN (SELECT id FROM ${sql.raw(w.check.table)} WHERE school_id = ${schoolId} AND id IN (SELECT value FROM json_each(${JSON.stringify(w.ids)})))`,
      ),
    ),
  ));
  const results = batch.map((r) => r.results);
  const details: ErrorDetail[] = [];
  let first: (typeof wanted)[number] | undefined;
  wanted.forEach((w, i) => {
    const missing = new Set(results[i]!.map((r) => r.id));
    if (missing.size === 0) return;
    first ??= w;
    const v = patch[w.check.field];
    if (typeof v === "string") details.push({ path: w.check.field, message: `no ${w.check.what} "${v}" in this school` });
    else
      (v as (string | Assignment)[]).forEach((x, j) => {
        const ref = typeof x === "string" ? x : x.professorId;
        if (missing.has(ref)) details.push({ path: typeof x === "string" ? `${w.check.field}[${j}]` : `professors[${j}].professorId`, message: `no ${w.check.what} "${ref}" in this school` });
      });
  });
  if (first) {
    const ids = details.map((d) => d.message.match(/"(.*)"/)![1]);
    throw new ApiError(400, first.check.code, `Unknown ${first.check.what} in this school: ${ids.join(", ")}.`, details);
  }
}

// ---------------------------------------------------------------------------------------
// Change and events.

const sameList = (a: string[], b: string[]) => a.length === b.length && a.every((x, i) => x === b[i]);
const sameProfessors = (a: Assignment[], b: Assignment[]) =>
  a.length === b.length && a.every((x, i) => x.professorId === b[i]!.professorId && x.coTeacher === b[i]!.coTeacher && x.signed === b[i]!.signed);

/** Applies a patch to a state; `changed` tells whether any stored value differs. */
export function applyPatch(before: CourseState, patch: CoursePatch): { after: CourseState; changed: boolean } {
  const after: CourseState = { ...before };
  let changed = false;
  const scalar = <K extends "name" | "startDateTime" | "endDateTime" | "classroom" | "creatorId" | "trainingId" | "archived" | "absencesSent">(k: K) => {
    const v = patch[k];
    if (v !== undefined && v !== before[k]) {
      (after as unknown as Record<string, unknown>)[k] = v;
      changed = true;
    }
  };
  (["name", "startDateTime", "endDateTime", "classroom", "creatorId", "trainingId", "archived", "absencesSent"] as const).forEach(scalar);
  for (const k of ["groupIds", "studentIds", "surveyTemplateIds"] as const) {
    const v = patch[k];
    if (v !== undefined && !sameList(v, before[k])) {
      after[k] = v;
      changed = true;
    }
  }
  if (patch.professors !== undefined && !sameProfessors(patch.professors, before.professors)) {
    after.professors = patch.professors;
    changed = true;
  }
  return { after, changed };
}

/**
 * The events of a write, in the contract's order (API.md § "POST /v3/courses · PATCH"):
 * `course.created` (no `before`) or `course.updated`, then `course.archived` /
 * `course.unarchived`, `course.absences_sent` (false → true), one `course.professor_signed`
 * per professor whose `signed` went false → true (a professor added already signed counts).
 */
export function deriveEvents(schoolId: string, before: CourseState | undefined, after: CourseState, now: number): SchoolEvent[] {
  const course = stateToRecord(after);
  const createdAt = formatInstant(now);
  const ev = (type: SchoolEvent["type"], extra: Record<string, unknown> = {}): SchoolEvent => ({
    id: mintId("evt", now),
    type,
    createdAt,
    schoolId,
    data: { course, ...extra },
  });
  const events = [ev(before ? "course.updated" : "course.created")];
  const wasArchived = before?.archived ?? false;
  if (after.archived && !wasArchived) events.push(ev("course.archived"));
  if (!after.archived && wasArchived) events.push(ev("course.unarchived"));
  if (after.absencesSent && !(before?.absencesSent ?? false)) events.push(ev("course.absences_sent"));
  const signedBefore = new Set((before?.professors ?? []).filter((p) => p.signed).map((p) => p.professorId));
  for (const p of after.professors) if (p.signed && !signedBefore.has(p.professorId)) events.push(ev("course.professor_signed", { professorId: p.professorId }));
  return events;
}

// ---------------------------------------------------------------------------------------
// The batch.

/**
 * The D1 statements of one write, every one guarded by the compare-and-set on `revision`:
 * the course row (insert or conditional update), each relation list that changed (replaced
 * whole) and the outbox rows of the events. Runs as one `db.batch` (one transaction).
 */
function writeStatements(schoolId: string, before: CourseState | undefined, after: CourseState, events: SchoolEvent[]) {
  const rev = after.revision!;
  const guard = sql`EXISTS (SELECT 1 FROM courses WHERE school_id = ${schoolId} AND id = ${after.id} AND revision = ${rev})`;
  const stmts: SQL[] = [];
  if (!before) {
    stmts.push(sql`INSERT INTO courses (school_id, id, name, name_folded, start_ms, end_ms, classroom, classroom_folded, creator_id, training_id,
        archived, absences_sent, created_at, updated_at, revision)
      VALUES (${schoolId}, ${after.id}, ${after.name}, ${fold(after.name)}, ${after.startDateTime}, ${after.endDateTime}, ${after.classroom},
        ${after.classroom === null ? null : fold(after.classroom)}, ${after.creatorId}, ${after.trainingId}, ${after.archived ? 1 : 0},
        ${after.absencesSent ? 1 : 0}, ${after.createdAt}, ${after.updatedAt}, ${rev})`);
  } else {
    stmts.push(sql`UPDATE courses SET name = ${after.name}, name_folded = ${fold(after.name)}, start_ms = ${after.startDateTime},
        end_ms = ${after.endDateTime}, classroom = ${after.classroom}, classroom_folded = ${after.classroom === null ? null : fold(after.classroom)},
        creator_id = ${after.creatorId}, training_id = ${after.trainingId}, archived = ${after.archived ? 1 : 0},
        absences_sent = ${after.absencesSent ? 1 : 0}, updated_at = ${after.updatedAt}, revision = ${rev}
      WHERE school_id = ${schoolId} AND id = ${after.id} AND revision IS ${before.revision}`);
  }
  const lists = [
    ["course_groups", "group_id", "groupIds"],
    ["course_students", "student_id", "studentIds"],
    ["course_survey_templates", "survey_template_id", "surveyTemplateIds"],
  ] as const;
  for (const [table, column, field] of lists) {
    if (before && sameList(before[field], after[field])) continue;
    if (before) stmts.push(sql`DELETE FROM ${sql.raw(table)} WHERE school_id = ${schoolId} AND course_id = ${after.id} AND ${guard}`);
    if (after[field].length > 0)
      stmts.push(sql`INSERT INTO ${sql.raw(table)} (school_id, course_id, ${sql.raw(column)})
        SELECT ${schoolId}, ${after.id}, value FROM json_each(${JSON.stringify(after[field])}) WHERE ${guard}`);
  }
  if (!before || !sameProfessors(before.professors, after.professors)) {
    if (before) stmts.push(sql`DELETE FROM course_professors WHERE school_id = ${schoolId} AND course_id = ${after.id} AND ${guard}`);
    if (after.professors.length > 0)
      stmts.push(sql`INSERT INTO course_professors (school_id, course_id, professor_id, co_teacher, signed)
        SELECT ${schoolId}, ${after.id}, json_extract(value, '$.professorId'), json_extract(value, '$.coTeacher'), json_extract(value, '$.signed')
        FROM json_each(${JSON.stringify(after.professors.map((p) => ({ professorId: p.professorId, coTeacher: p.coTeacher ? 1 : 0, signed: p.signed ? 1 : 0 })))}) WHERE ${guard}`);
  }
  for (const e of events)
    stmts.push(sql`INSERT INTO outbox (event_id, school_id, payload, created_at) SELECT ${e.id}, ${schoolId}, ${JSON.stringify(e)}, ${Date.parse(e.createdAt)} WHERE ${guard}`);
  // Last: did this write win? (the revision is ours)
  stmts.push(sql`SELECT revision FROM courses WHERE school_id = ${schoolId} AND id = ${after.id}`);
  return stmts;
}

/**
 * Wraps each D1 round trip of a write (the request's `RequestContext.db`, so that
 * `Server-Timing` counts and times every one); identity by default.
 */
export type D1Timer = <T>(run: () => Promise<T>) => Promise<T>;
const untimed: D1Timer = (run) => run();

/** The outcome of a committed write: the course after it and the events queued in the outbox. */
export interface WriteResult {
  course: CourseRecord;
  events: SchoolEvent[];
}

/**
 * Creates a course in one D1 batch (row, relations, outbox).
 *
 * @param input a parsed POST body.
 * @throws ApiError 400 INVALID_DATE_RANGE, *_NOT_FOUND.
 */
export async function createCourse(d1: D1Database, schoolId: string, input: ReturnType<typeof parseCreateBody>, timed: D1Timer = untimed, now = Date.now()): Promise<WriteResult> {
  if (!(input.endDateTime > input.startDateTime)) throw invalidRange();
  await checkReferences(d1, schoolId, input, timed);
  const courseId = mintId("crs", now);
  const after: CourseState = {
    id: courseId,
    name: input.name,
    startDateTime: input.startDateTime,
    endDateTime: input.endDateTime,
    classroom: input.classroom ?? null,
    creatorId: input.creatorId ?? null,
    trainingId: input.trainingId ?? null,
    groupIds: input.groupIds ?? [],
    studentIds: input.studentIds ?? [],
    professors: input.professors ?? [],
    surveyTemplateIds: input.surveyTemplateIds ?? [],
    archived: false,
    absencesSent: false,
    createdAt: now,
    updatedAt: now,
    revision: mintId("evt", now).replace(/^evt_/, "rev_"),
  };
  const events = deriveEvents(schoolId, undefined, after, now);
  await timed(() => runBatch(d1, writeStatements(schoolId, undefined, after, events)));
  return { course: stateToRecord(after), events };
}

/** Retries of a PATCH that lost a compare-and-set race before giving up. */
const MAX_ATTEMPTS = 8;

/**
 * Applies a PATCH: only the fields sent change; a list sent replaces the whole list; a
 * PATCH that changes nothing writes nothing and returns no event (updatedAt unchanged).
 *
 * @throws ApiError 404 COURSE_NOT_FOUND, 400 INVALID_DATE_RANGE (also when only one end
 *   moves), *_NOT_FOUND.
 */
export async function patchCourse(d1: D1Database, schoolId: string, courseId: string, patch: CoursePatch, timed: D1Timer = untimed): Promise<WriteResult> {
  const db = getDb(d1);
  let referencesChecked = false;
  for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
    const before = await timed(() => loadCourseState(db, schoolId, courseId));
    if (!before) throw new ApiError(404, "COURSE_NOT_FOUND", `No course with id "${courseId}" exists in this school.`);
    const now = Math.max(Date.now(), before.updatedAt + 1);
    const { after, changed } = applyPatch(before, patch);
    if (!(after.endDateTime > after.startDateTime)) throw invalidRange();
    if (!changed) return { course: stateToRecord(before), events: [] };
    if (!referencesChecked) {
      await checkReferences(d1, schoolId, patch, timed);
      referencesChecked = true;
    }
    after.updatedAt = now;
    const revision = mintId("evt", now).replace(/^evt_/, "rev_");
    after.revision = revision;
    const events = deriveEvents(schoolId, before, after, now);
    if (await timed(() => runBatch(d1, writeStatements(schoolId, before, after, events), revision))) {
      return { course: stateToRecord(after), events };
    }
  }
  throw new ApiError(500, "INTERNAL_ERROR", "The course kept changing under this write; retry it.");
}

/** Runs the statements as one batch; true when the last SELECT shows `revision` won. */
async function runBatch(d1: D1Database, stmts: SQL[], revision?: string): Promise<boolean> {
  const results = await d1.batch<{ revision: string }>(stmts.map((s) => prepare(d1, s)));
  return revision === undefined || results[results.length - 1]!.results[0]?.revision === revision;
}

const invalidRange = () =>
  new ApiError(400, "INVALID_DATE_RANGE", "endDateTime must be after startDateTime.", [{ path: "endDateTime", message: "must be after startDateTime" }]);
