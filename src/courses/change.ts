/**
 * The pure logic of a course write (docs/reference.md § "POST /v3/courses — create a course · PATCH /v3/courses/{id} — change one"):
 * the stored state of a course, what a patch changes in it, and the events of a change.
 * No I/O: src/courses/writes.ts runs it against D1.
 */
import { mintOrderedIds } from "../lib/ids";
import { formatInstant } from "../lib/time";
import type { CourseEvent, CourseRecord } from "./schemas";
import type { CoursePatch } from "./write-schemas";

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
  /** Sorted ascending, like every id list of a state. */
  groupIds: string[];
  studentIds: string[];
  /** Sorted by `professorId`. */
  professors: Assignment[];
  surveyTemplateIds: string[];
  archived: boolean;
  absencesSent: boolean;
  createdAt: number;
  updatedAt: number;
  /** The compare-and-set token of the stored row (`null` for imported courses never written). */
  revision: string | null;
  /** docs/reference.md § "Course record": 1 at creation, +1 per committed change. */
  version: number;
}

/** The course record of a state (docs/reference.md § "Course record"). */
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
    version: s.version,
    createdAt: formatInstant(s.createdAt),
    updatedAt: formatInstant(s.updatedAt),
  };
}

/** Whether two sorted id lists are equal. */
export const sameList = (a: readonly string[], b: readonly string[]) => a.length === b.length && a.every((x, i) => x === b[i]);

/** Whether two professor lists (sorted by id) are equal, flags included. */
export const sameProfessors = (a: readonly Assignment[], b: readonly Assignment[]) =>
  a.length === b.length && a.every((x, i) => x.professorId === b[i]!.professorId && x.coTeacher === b[i]!.coTeacher && x.signed === b[i]!.signed);

const SCALARS = ["name", "startDateTime", "endDateTime", "classroom", "creatorId", "trainingId", "archived", "absencesSent"] as const;
const LISTS = ["groupIds", "studentIds", "surveyTemplateIds"] as const;

/**
 * Applies a patch to a state: each field sent replaces the stored one (a list sent replaces
 * the whole list). `changed` tells whether any stored value differs; `updatedAt`,
 * `revision` and `version` are left to the caller.
 */
export function applyPatch(before: CourseState, patch: CoursePatch): { after: CourseState; changed: boolean } {
  const after: CourseState = { ...before };
  let changed = false;
  for (const k of SCALARS) {
    const v = patch[k];
    if (v !== undefined && v !== before[k]) {
      (after as unknown as Record<string, unknown>)[k] = v;
      changed = true;
    }
  }
  for (const k of LISTS) {
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
 * An event's body as the hub keeps, feeds and delivers it: JSON without `previous` (the filter
 * keys a change had before it, for addressing only). The event quota counts these bytes
 * (docs/reference.md § "Event quota").
 */
export function deliveredJson<E extends { previous?: unknown }>(event: E): string {
  const { previous: _, ...delivered } = event;
  return JSON.stringify(delivered);
}

/**
 * The `changeCursor` of an event before its write takes its number: the second key of the
 * envelope, replaced in place by the write's batch (src/courses/storage.ts) and by the
 * number it read back (src/courses/writes.ts).
 */
const CHANGE_CURSOR_PLACEHOLDER = "chg_0";

/**
 * The events of a write, in the contract's order: `course.created` (no `before`) or
 * `course.updated`, then `course.archived` / `course.unarchived`, `course.absences_sent`
 * (false → true), one `course.professor_signed` per professor whose `signed` went false →
 * true (a professor added already signed counts). Each carries the course after the write
 * and, for a change, `previous`: the course's filter keys before it (never delivered);
 * `changeCursor` is `CHANGE_CURSOR_PLACEHOLDER` until the write takes its number.
 *
 * @param now ms since the epoch: the events' `createdAt` and the time part of their ids,
 *   which sort in the list's order (the order the hub accepts and the feed lists them).
 */
export function deriveEvents(schoolId: string, before: CourseState | undefined, after: CourseState, now: number): CourseEvent[] {
  const course = stateToRecord(after);
  const createdAt = formatInstant(now);
  const previous = before
    ? { trainingId: before.trainingId, groupIds: [...before.groupIds], professorIds: before.professors.map((p) => p.professorId).sort() }
    : undefined;
  // Ids are minted once the list is known, in its order (`mintOrderedIds`).
  const ev = (type: CourseEvent["type"], professorId?: string): CourseEvent => ({
    id: "",
    changeCursor: CHANGE_CURSOR_PLACEHOLDER,
    type,
    createdAt,
    schoolId,
    data: professorId === undefined ? { course } : { course, professorId },
    ...(previous ? { previous } : {}),
  });
  const events = [ev(before ? "course.updated" : "course.created")];
  const wasArchived = before?.archived ?? false;
  if (after.archived && !wasArchived) events.push(ev("course.archived"));
  if (!after.archived && wasArchived) events.push(ev("course.unarchived"));
  if (after.absencesSent && !(before?.absencesSent ?? false)) events.push(ev("course.absences_sent"));
  const signedBefore = new Set((before?.professors ?? []).filter((p) => p.signed).map((p) => p.professorId));
  for (const p of after.professors) if (p.signed && !signedBefore.has(p.professorId)) events.push(ev("course.professor_signed", p.professorId));
  const ids = mintOrderedIds("evt", events.length, now);
  return events.map((e, i) => ({ ...e, id: ids[i]! }));
}
