/**
 * Course records as the API writes them (API.md § "Course record").
 */
import { fold } from "../lib/text";
import { formatInstant } from "../lib/time";
import type { CourseRecord, NamedRef, StudentRef } from "../http/schemas";
import type { CourseRow } from "./query";

/**
 * The record types are derived from the response schemas (src/http/schemas.ts), which also
 * generate the OpenAPI document: `CourseRecord`, `StudentRef`, `TeacherRef`, `NamedRef`.
 */
export type { CourseRecord, NamedRef, StudentRef, TeacherRef } from "../http/schemas";

const byText = (a: string, b: string) => {
  const fa = fold(a), fb = fold(b);
  return fa < fb ? -1 : fa > fb ? 1 : a < b ? -1 : a > b ? 1 : 0;
};
const byId = (a: { id: string }, b: { id: string }) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
/** People order (API.md § "Course record"): lastName, firstName, id; names folded as the `name` filter folds. */
const byPerson = (a: StudentRef, b: StudentRef) => byText(a.lastName, b.lastName) || byText(a.firstName, b.firstName) || byId(a, b);
/** Named order: name (folded), id. */
const byName = (a: NamedRef, b: NamedRef) => byText(a.name, b.name) || byId(a, b);

/** Shapes one row of `selectCoursePage` into a course record. */
export function toCourseRecord(row: CourseRow): CourseRecord {
  const record: CourseRecord = {
    id: row.id,
    name: row.name,
    startDateTime: formatInstant(row.startMs),
    endDateTime: formatInstant(row.endMs),
    classroom: row.classroom,
    creatorId: row.creatorId,
    trainingId: row.trainingId,
    groupIds: JSON.parse(row.groupIds) as string[],
    professorIds: JSON.parse(row.professorIds) as string[],
    archived: Boolean(row.archived),
    absencesSent: Boolean(row.absencesSent),
    createdAt: formatInstant(row.createdAt),
    updatedAt: formatInstant(row.updatedAt),
  };
  if (row.students !== undefined) record.students = (JSON.parse(row.students) as StudentRef[]).sort(byPerson);
  if (row.teachers !== undefined) {
    const teachers = JSON.parse(row.teachers) as (StudentRef & { coTeacher: number; signed: number })[];
    record.teachers = teachers.map((t) => ({ ...t, coTeacher: t.coTeacher === 1, signed: t.signed === 1 })).sort(byPerson);
  }
  if (row.surveyTemplates !== undefined) record.surveyTemplates = (JSON.parse(row.surveyTemplates) as NamedRef[]).sort(byName);
  if (row.training !== undefined) record.training = row.training === null ? null : (JSON.parse(row.training) as NamedRef);
  return record;
}
