/**
 * Course records as the API writes them (API.md § "Course record").
 */
import { formatInstant } from "../lib/time";
import type { CourseRow } from "./query";

/** A person embedded by `includeStudents`. */
export interface StudentRef {
  id: string;
  firstName: string;
  lastName: string;
  email: string;
}
/** A teacher embedded by `includeTeachers`. */
export interface TeacherRef extends StudentRef {
  coTeacher: boolean;
  signed: boolean;
}
/** `{ id, name }` of a survey template or training. */
export interface NamedRef {
  id: string;
  name: string;
}

/** The course record. Instants are ISO 8601 UTC with ms; lists sorted ascending. */
export interface CourseRecord {
  id: string;
  name: string;
  startDateTime: string;
  endDateTime: string;
  classroom: string | null;
  creatorId: string | null;
  trainingId: string | null;
  groupIds: string[];
  professorIds: string[];
  archived: boolean;
  absencesSent: boolean;
  createdAt: string;
  updatedAt: string;
  students?: StudentRef[];
  teachers?: TeacherRef[];
  surveyTemplates?: NamedRef[];
  training?: NamedRef | null;
}

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
  if (row.students !== undefined) record.students = JSON.parse(row.students) as StudentRef[];
  if (row.teachers !== undefined) {
    const teachers = JSON.parse(row.teachers) as (StudentRef & { coTeacher: number; signed: number })[];
    record.teachers = teachers.map((t) => ({ ...t, coTeacher: t.coTeacher === 1, signed: t.signed === 1 }));
  }
  if (row.surveyTemplates !== undefined) record.surveyTemplates = JSON.parse(row.surveyTemplates) as NamedRef[];
  if (row.training !== undefined) record.training = row.training === null ? null : (JSON.parse(row.training) as NamedRef);
  return record;
}
