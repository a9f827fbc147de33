/**
 * Course records as the API writes them (API.md § "Course record").
 */
import { fold } from "../lib/text";
import { formatInstant } from "../lib/time";
import type { CourseRow } from "./query";
import type { CourseRecord, NamedRef, StudentRef } from "./schemas";

/**
 * Sorts in place by folded text keys, then `id` (API.md § "Course record": people by
 * lastName, firstName, id; named items by name, id). Keys are folded once per item, not per
 * comparison: an include of 100 courses sorts thousands of people.
 */
function sortByFolded<T extends { id: string }>(items: T[], keys: (item: T) => string[]): T[] {
  const decorated = items.map((item) => ({ item, raw: keys(item), folded: keys(item).map(fold) }));
  decorated.sort((a, b) => {
    for (let i = 0; i < a.folded.length; i++) {
      const fa = a.folded[i]!,
        fb = b.folded[i]!;
      if (fa !== fb) return fa < fb ? -1 : 1;
      const ra = a.raw[i]!,
        rb = b.raw[i]!;
      if (ra !== rb) return ra < rb ? -1 : 1;
    }
    return a.item.id < b.item.id ? -1 : a.item.id > b.item.id ? 1 : 0;
  });
  return decorated.map((d) => d.item);
}
const personKeys = (p: StudentRef) => [p.lastName, p.firstName];
const nameKeys = (n: NamedRef) => [n.name];

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
  if (row.students !== undefined) record.students = sortByFolded(JSON.parse(row.students) as StudentRef[], personKeys);
  if (row.teachers !== undefined) {
    const teachers = JSON.parse(row.teachers) as (StudentRef & { coTeacher: number; signed: number })[];
    record.teachers = sortByFolded(
      teachers.map((t) => ({ ...t, coTeacher: t.coTeacher === 1, signed: t.signed === 1 })),
      personKeys,
    );
  }
  if (row.surveyTemplates !== undefined) record.surveyTemplates = sortByFolded(JSON.parse(row.surveyTemplates) as NamedRef[], nameKeys);
  if (row.training !== undefined) record.training = row.training === null ? null : (JSON.parse(row.training) as NamedRef);
  return record;
}
