/**
 * Where a course write meets D1: reading a course's full state, checking that referenced
 * ids exist in the school, and the statements of one write (rows, relation lists, outbox).
 *
 * Concurrency: D1 has no interactive transactions, so a write is a compare-and-set on the
 * course's `revision`. Every statement of the batch is guarded by "the course now carries my
 * revision"; a write that lost a race writes nothing (see src/courses/writes.ts).
 */
import { type SQL, sql } from "drizzle-orm";
import type { DrizzleD1Database } from "drizzle-orm/d1";
import { prepare } from "../db/client";
import { countEventBytes, rowValueBytes, STORED_FACTOR } from "../db/event-quota";
import { RECORD_PARTS, type RecordPart, rebuildParts } from "../db/record-parts";
import type { D1Timer } from "../http/context";
import type { ErrorDetail } from "../http/envelopes";
import type { ErrorCode } from "../http/error-catalogue";
import { ApiError } from "../http/errors";
import { BOUND_LIST, cutBatches, utf8Bytes } from "../lib/batches";
import { changeCursorSql } from "../lib/change-cursor";
import { fold } from "../lib/text";
import { type Assignment, type CourseState, deliveredJson, sameList, sameProfessors } from "./change";
import type { CourseEvent } from "./schemas";
import type { CoursePatch } from "./write-schemas";

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
  version: number;
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
      c.absences_sent, c.created_at, c.updated_at, c.revision, c.version,
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
    version: row.version,
  };
}

// ---------------------------------------------------------------------------------------
// References.

const REFERENCE_CHECKS: {
  field: "studentIds" | "groupIds" | "professors" | "trainingId" | "surveyTemplateIds";
  table: string;
  code: ErrorCode;
  what: string;
}[] = [
  { field: "studentIds", table: "students", code: "STUDENTS_NOT_FOUND", what: "students" },
  { field: "groupIds", table: "groups", code: "GROUPS_NOT_FOUND", what: "groups" },
  { field: "professors", table: "professors", code: "PROFESSORS_NOT_FOUND", what: "professors" },
  { field: "trainingId", table: "trainings", code: "TRAINING_NOT_FOUND", what: "training" },
  { field: "surveyTemplateIds", table: "survey_templates", code: "SURVEY_TEMPLATES_NOT_FOUND", what: "survey templates" },
];

const refId = (x: string | Assignment) => (typeof x === "string" ? x : x.professorId);

/**
 * Checks that every referenced id exists in the school, in one D1 batch.
 *
 * @throws ApiError 400 STUDENTS_NOT_FOUND | GROUPS_NOT_FOUND | PROFESSORS_NOT_FOUND |
 *   TRAINING_NOT_FOUND | SURVEY_TEMPLATES_NOT_FOUND: the code of the first kind with missing
 *   ids (in that order); `details` lists every missing id of every kind with its JSON path.
 */
export async function checkReferences(d1: D1Database, schoolId: string, patch: CoursePatch, timed: D1Timer): Promise<void> {
  const wanted = REFERENCE_CHECKS.map((check) => {
    const v = patch[check.field];
    const ids = v == null ? [] : typeof v === "string" ? [v] : (v as (string | Assignment)[]).map(refId);
    return { check, ids };
  }).filter((w) => w.ids.length > 0);
  if (wanted.length === 0) return;
  const batch = await timed(() =>
    d1.batch<{ id: string }>(
      wanted.map((w) =>
        prepare(
          d1,
          sql`SELECT value AS id FROM json_each(${JSON.stringify(w.ids)}) WHERE value NOT IN (SELECT id FROM ${sql.raw(w.check.table)} WHERE school_id = ${schoolId} AND id IN (SELECT value FROM json_each(${JSON.stringify(w.ids)})))`,
        ),
      ),
    ),
  );
  const details: ErrorDetail[] = [];
  const missingIds: string[] = [];
  let first: (typeof wanted)[number] | undefined;
  wanted.forEach((w, i) => {
    const missing = new Set(batch[i]!.results.map((r) => r.id));
    if (missing.size === 0) return;
    first ??= w;
    const v = patch[w.check.field];
    const items = typeof v === "string" ? [v] : (v as (string | Assignment)[]);
    items.forEach((x, j) => {
      const ref = refId(x);
      if (!missing.has(ref)) return;
      const path = typeof v === "string" ? w.check.field : typeof x === "string" ? `${w.check.field}[${j}]` : `professors[${j}].professorId`;
      details.push({ path, message: `no ${w.check.what} "${ref}" in this school` });
      missingIds.push(ref);
    });
  });
  if (first) throw new ApiError(first.check.code, `Unknown ${first.check.what} in this school: ${missingIds.join(", ")}.`, details);
}

// ---------------------------------------------------------------------------------------
// The statements of one write.

const RELATION_LISTS = [
  ["course_groups", "group_id", "groupIds"],
  ["course_students", "student_id", "studentIds"],
  ["course_survey_templates", "survey_template_id", "surveyTemplateIds"],
] as const;

/** The daily quota of write bytes (events and stored rows) a write is counted against (src/db/event-quota.ts). */
export interface QuotaCharge {
  /** The deployment's `EVENT_BYTES_PER_DAY`. */
  bytesPerDay: number;
  /** The write's instant by the Worker's clock (ms since the epoch): its UTC day, and its outbox rows' `created_at`. */
  at: number;
}

/**
 * The D1 statements of one write, every one guarded by the compare-and-set on `revision`:
 * the course row (insert or conditional update), each relation list that changed (replaced
 * whole; bound in batches cut by `cutBatches`), the outbox rows of the events, the count of
 * their bytes and of the rows stored against the school's daily quota (docs/reference.md § "Event quota": over it,
 * the batch fails whole, `isQuotaRefusal`), and last a SELECT of the stored revision (did
 * this write win?). Run as one `db.batch` (one transaction): see `runBatch`.
 *
 * @throws ApiError 413 PAYLOAD_TOO_LARGE when an event would be over the batch bytes alone
 *   (docs/reference.md § Event delivery: refused with the write that made it), before
 *   anything is written.
 */
export function writeStatements(schoolId: string, before: CourseState | undefined, after: CourseState, events: CourseEvent[], quota: QuotaCharge): SQL[] {
  const rev = after.revision!;
  const guard = sql`EXISTS (SELECT 1 FROM courses WHERE school_id = ${schoolId} AND id = ${after.id} AND revision = ${rev})`;
  const classroomFolded = after.classroom === null ? null : fold(after.classroom);
  // The write's change number (docs/architecture.md § "The change sequence"): the school's
  // last plus one, read in the batch, which D1 runs alone on the shard's primary.
  const nextSeq = sql`coalesce((SELECT seq FROM school_changes WHERE school_id = ${schoolId}), 0) + 1`;
  // The event's `changeCursor`, from the number its course row took (the guard's row).
  const cursor = sql.raw(changeCursorSql("c.change_seq"));
  const ofWrite = sql`courses c WHERE c.school_id = ${schoolId} AND c.id = ${after.id} AND c.revision = ${rev}`;
  const stmts: SQL[] = [];
  // What the write stores, counted against the quota with its events (`storedRowBytes`, `partBytes`).
  const stored = storedRowBytes(schoolId, rev, classroomFolded, before, after);
  if (!before) {
    stmts.push(sql`INSERT INTO courses (school_id, id, name, name_folded, start_ms, end_ms, classroom, classroom_folded, creator_id, training_id,
        archived, absences_sent, created_at, updated_at, revision, version, change_seq)
      VALUES (${schoolId}, ${after.id}, ${after.name}, ${fold(after.name)}, ${after.startDateTime}, ${after.endDateTime}, ${after.classroom},
        ${classroomFolded}, ${after.creatorId}, ${after.trainingId}, ${after.archived ? 1 : 0},
        ${after.absencesSent ? 1 : 0}, ${after.createdAt}, ${after.updatedAt}, ${rev}, ${after.version}, ${nextSeq})`);
  } else {
    stmts.push(sql`UPDATE courses SET name = ${after.name}, name_folded = ${fold(after.name)}, start_ms = ${after.startDateTime},
        end_ms = ${after.endDateTime}, classroom = ${after.classroom}, classroom_folded = ${classroomFolded},
        creator_id = ${after.creatorId}, training_id = ${after.trainingId}, archived = ${after.archived ? 1 : 0},
        absences_sent = ${after.absencesSent ? 1 : 0}, updated_at = ${after.updatedAt}, revision = ${rev},
        version = ${after.version}, change_seq = ${nextSeq}
      WHERE school_id = ${schoolId} AND id = ${after.id} AND revision IS ${before.revision}`);
  }
  // The number the course row took becomes the school's last: only a row that carries this
  // write's revision (the compare-and-set won) raises it.
  stmts.push(sql`INSERT INTO school_changes (school_id, seq)
      SELECT school_id, change_seq FROM courses WHERE school_id = ${schoolId} AND id = ${after.id} AND revision = ${rev}
      ON CONFLICT (school_id) DO UPDATE SET seq = excluded.seq`);
  for (const [table, column, field] of RELATION_LISTS) {
    if (before && sameList(before[field], after[field])) continue;
    if (before) stmts.push(sql`DELETE FROM ${sql.raw(table)} WHERE school_id = ${schoolId} AND course_id = ${after.id} AND ${guard}`);
    for (const batch of cutBatches(after[field]))
      stmts.push(sql`INSERT INTO ${sql.raw(table)} (school_id, course_id, ${sql.raw(column)})
        SELECT ${schoolId}, ${after.id}, value FROM json_each(${batch.json}) WHERE ${guard}`);
  }
  if (!before || !sameProfessors(before.professors, after.professors)) {
    if (before) stmts.push(sql`DELETE FROM course_professors WHERE school_id = ${schoolId} AND course_id = ${after.id} AND ${guard}`);
    const rows = after.professors.map((p) => ({ professorId: p.professorId, coTeacher: p.coTeacher ? 1 : 0, signed: p.signed ? 1 : 0 }));
    for (const batch of cutBatches(rows)) {
      stmts.push(sql`INSERT INTO course_professors (school_id, course_id, professor_id, co_teacher, signed)
        SELECT ${schoolId}, ${after.id}, json_extract(value, '$.professorId'), json_extract(value, '$.coTeacher'), json_extract(value, '$.signed')
        FROM json_each(${batch.json}) WHERE ${guard}`);
    }
  }
  // --- Stored record parts (docs/architecture.md § Course reads): each part whose lists changed
  // is rebuilt from the rows just written, under the same guard (a lost race rebuilds nothing).
  const keys = sql`SELECT ${schoolId} AS school_id, ${after.id} AS course_id WHERE ${guard}`;
  const parts = changedParts(before, after);
  for (const part of parts) stmts.push(rebuildParts(part, keys));
  // --- End of stored record parts.
  // `created_at` is the Worker's clock at the write (`quota.at`), never the event's createdAt: that follows
  // the course's updatedAt (imported data: 2099 would hide a failed publish from the sweep until then).
  let eventBytes = 0;
  const [first] = events;
  // The events of one write share the course and `previous` (`deriveEvents`): the first is bound
  // whole, the others are built from its row in SQL, so that a write holds one event body,
  // however many events it makes (docs/architecture.md § The outbox).
  const shared = first !== undefined && events.every((e) => sharesBody(first, e));
  const derived: { id: string; type: string; professorId?: string }[] = [];
  for (const e of events) {
    // Encoded one at a time, measured and let go: only the first is kept (bound).
    const payload = JSON.stringify(e);
    const bytes = utf8Bytes(payload);
    // An event travels alone in a bound batch at most (src/lib/batches.ts); none the contract allows comes near.
    if (bytes + 2 > BOUND_LIST.bytes) {
      throw new ApiError("PAYLOAD_TOO_LARGE", `The write would make an event of more than ${BOUND_LIST.bytes} bytes; nothing was written.`);
    }
    // The quota counts bodies as delivered (docs/reference.md § "Event quota"), their
    // `changeCursor` as set in SQL below: counted without its placeholder, plus the cursor's length.
    eventBytes += (e.previous === undefined ? bytes : utf8Bytes(deliveredJson(e))) - utf8Bytes(e.changeCursor);
    if (shared && e !== first) derived.push({ id: e.id, type: e.type, ...(e.data.professorId === undefined ? {} : { professorId: e.data.professorId }) });
    else
      stmts.push(sql`INSERT INTO outbox (event_id, school_id, payload, created_at)
        SELECT ${e.id}, ${schoolId}, json_set(${payload}, '$.changeCursor', ${cursor}), ${quota.at} FROM ${ofWrite}`);
  }
  // json_set keeps the first body's text and replaces `id` and `type` in place; `professorId`
  // goes last in `data`, where the event's own JSON has it: the same bytes as JSON.stringify.
  for (const batch of cutBatches(derived)) {
    stmts.push(sql`INSERT INTO outbox (event_id, school_id, payload, created_at)
      SELECT json_extract(j.value, '$.id'), ${schoolId},
        iif(json_type(j.value, '$.professorId') IS NULL,
          json_set(f.payload, '$.id', json_extract(j.value, '$.id'), '$.type', json_extract(j.value, '$.type')),
          json_set(f.payload, '$.id', json_extract(j.value, '$.id'), '$.type', json_extract(j.value, '$.type'), '$.data.professorId', json_extract(j.value, '$.professorId'))),
        ${quota.at}
      FROM json_each(${batch.json}) AS j, outbox AS f WHERE f.event_id = ${first!.id} AND ${guard}`);
  }
  const cursorBytes = events.length === 0 ? sql`0` : sql`(SELECT length(${cursor}) FROM ${ofWrite})`;
  stmts.push(
    countEventBytes(
      schoolId,
      sql`${eventBytes} + ${events.length} * ${cursorBytes}`,
      sql`${stored} + ${partBytes(schoolId, after.id, parts)}`,
      quota.bytesPerDay,
      quota.at,
      guard,
    ),
  );
  stmts.push(sql`SELECT revision, change_seq FROM courses WHERE school_id = ${schoolId} AND id = ${after.id}`);
  return stmts;
}

/**
 * Bytes a write stores in rows it knows before its batch runs, at `STORED_FACTOR`
 * (docs/reference.md § "Event quota"): the course row (inserted or rewritten) and every
 * relation row it inserts (a list sent replaces the whole list: each of its rows counts).
 */
function storedRowBytes(schoolId: string, rev: string, classroomFolded: string | null, before: CourseState | undefined, after: CourseState): number {
  const course = rowValueBytes([
    schoolId,
    after.id,
    after.name,
    fold(after.name),
    after.startDateTime,
    after.endDateTime,
    after.classroom,
    classroomFolded,
    after.creatorId,
    after.trainingId,
    0,
    0,
    after.createdAt,
    after.updatedAt,
    rev,
    after.version,
    0,
  ]);
  let relations = 0;
  for (const [, , field] of RELATION_LISTS) {
    if (before && sameList(before[field], after[field])) continue;
    for (const id of after[field]) relations += rowValueBytes([schoolId, after.id, id]);
  }
  if (!before || !sameProfessors(before.professors, after.professors))
    for (const p of after.professors) relations += rowValueBytes([schoolId, after.id, p.professorId, 0, 0]);
  return STORED_FACTOR.course * course + STORED_FACTOR.relation * relations;
}

/**
 * SQL of the bytes of the record parts the batch rebuilt (`parts`), read back in the batch
 * at `STORED_FACTOR.part`: one primary-key lookup of `course_parts`; `0` when none.
 */
function partBytes(schoolId: string, courseId: string, parts: RecordPart[]): SQL {
  if (parts.length === 0) return sql`0`;
  const names = sql.join(
    parts.map((p) => sql`${p}`),
    sql`, `,
  );
  return sql`${STORED_FACTOR.part} * (SELECT coalesce(sum(length(CAST(school_id AS BLOB)) + length(CAST(course_id AS BLOB)) + length(part) + length(CAST(json AS BLOB))), 0)
    FROM course_parts WHERE school_id = ${schoolId} AND course_id = ${courseId} AND part IN (${names}))`;
}

/** The stored parts (`course_parts`) a write from `before` to `after` changes: all three for a new course. */
function changedParts(before: CourseState | undefined, after: CourseState): RecordPart[] {
  if (!before) return [...RECORD_PARTS];
  const changed: RecordPart[] = [];
  if (!sameList(before.studentIds, after.studentIds)) changed.push("students");
  if (!sameProfessors(before.professors, after.professors)) changed.push("teachers");
  if (!sameList(before.surveyTemplateIds, after.surveyTemplateIds)) changed.push("surveyTemplates");
  return changed;
}

/**
 * Whether `e`'s JSON is `first`'s but for `id`, `type` and a `data.professorId` that `first`
 * lacks: the same fields in the same order, the same course and `previous` (one object each,
 * as `deriveEvents` makes them).
 */
function sharesBody(first: CourseEvent, e: CourseEvent): boolean {
  const data = Object.keys(e.data).join();
  return (
    Object.keys(first.data).join() === "course" &&
    (data === "course" || data === "course,professorId") &&
    Object.keys(e).join() === Object.keys(first).join() &&
    e.data.course === first.data.course &&
    e.previous === first.previous &&
    e.createdAt === first.createdAt &&
    e.schoolId === first.schoolId
  );
}

/**
 * Runs a write's statements as one batch.
 *
 * @returns the course's change number after the batch (`courses.change_seq`, the last
 *   SELECT's) when `revision` won (always, without one), `undefined` when it lost.
 */
export async function runBatch(d1: D1Database, stmts: SQL[], revision?: string): Promise<number | undefined> {
  const results = await d1.batch<{ revision: string; change_seq: number }>(stmts.map((s) => prepare(d1, s)));
  const row = results[results.length - 1]!.results[0];
  return row !== undefined && (revision === undefined || row.revision === revision) ? row.change_seq : undefined;
}
