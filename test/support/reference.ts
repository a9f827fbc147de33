/**
 * A plain in-test reference of the listing semantics (docs/reference.md § "GET /v3/courses"), written
 * independently of the SQL: the property tests compare the Worker against it.
 */
import { coursesA } from "./fixtures";

/** A course as an import file (docs/operations.md § Data import (operators)) gives it, every field present. */
export interface Course {
  id: string;
  schoolId: string;
  name: string;
  startDateTime: string;
  endDateTime: string;
  createdAt: string;
  updatedAt: string;
  classroom: string | null;
  creatorId: string | null;
  trainingId: string | null;
  archived: boolean;
  absencesSent: boolean;
  groupIds: string[];
  studentIds: string[];
  professors: { professorId: string; coTeacher: boolean; signed: boolean }[];
  surveyTemplateIds: string[];
}

/** Filter values as a client means them (instants in ms). */
export interface RefQuery {
  courseStartDateTime?: number;
  courseEndDateTime?: number;
  absencesSent?: boolean;
  absencesNotSent?: boolean;
  groupId?: string[];
  studentId?: string[];
  professorId?: string[];
  trainingId?: string[];
  courseId?: string[];
  archived?: boolean;
  classroom?: string;
  creatorId?: string;
  name?: string;
  professorSignatureMissing?: boolean;
  page?: number;
  limit?: number;
}

/**
 * The folding the reference names, written from it, not imported (the service's `fold()` is
 * what the tests check): "case- and accent-insensitive" (docs/reference.md § GET /v3/courses,
 * `name`). Accents are the combining marks NFD takes apart from their letters (U+0300–U+036F);
 * case is `toLowerCase`. The service also folds ligatures and compatibility forms (œ, ß, æ,
 * ﬁ, 𝐀, Ａ), which the reference does not name: a test that relies on this oracle holds none.
 */
export function caseAndAccentFold(text: string): string {
  return text
    .normalize("NFD")
    .replace(/[\u0300-\u036f]/g, "")
    .toLowerCase();
}
const fold = caseAndAccentFold;

const utf8 = new TextEncoder();

/**
 * Text order of the contract's sorts: SQLite compares TEXT as UTF-8 bytes, which is code point
 * order. JS's `<` compares UTF-16 code units, which differs only between a character above
 * U+FFFF and one in U+E000–U+FFFF (by code point U+E000 comes before `𠀀`, U+20000).
 */
export function compareText(a: string, b: string): number {
  const x = utf8.encode(a);
  const y = utf8.encode(b);
  for (let i = 0; i < Math.min(x.length, y.length); i++) if (x[i] !== y[i]) return x[i]! - y[i]!;
  return x.length - y.length;
}

/**
 * `items` sorted by each key folded, then as written, key by key, then id (docs/reference.md §
 * "Course record": people by lastName, firstName, id; survey templates by name, id).
 */
export function sortByFolded<T extends { id: string }>(items: T[], keys: (item: T) => string[]): T[] {
  const key = (item: T) => [...keys(item).flatMap((k) => [caseAndAccentFold(k), k]), item.id];
  return [...items].sort((a, b) => {
    const ka = key(a);
    const kb = key(b);
    for (let i = 0; i < ka.length; i++) {
      const c = compareText(ka[i]!, kb[i]!);
      if (c !== 0) return c;
    }
    return 0;
  });
}
const any = (list: string[] | undefined, values: string[]) => !list || list.length === 0 || list.some((v) => values.includes(v));

/** Ids of the school A courses matching `q`, in the contract's order, and whether more exist. */
export function referenceList(q: RefQuery): { ids: string[]; hasMore: boolean } {
  const matching = coursesA
    .filter((c) => {
      const start = Date.parse(c.startDateTime);
      const end = Date.parse(c.endDateTime);
      const profs = c.professors ?? [];
      if (q.courseStartDateTime !== undefined && !(start >= q.courseStartDateTime)) return false;
      if (q.courseEndDateTime !== undefined && !(end <= q.courseEndDateTime)) return false;
      if (q.absencesSent && !q.absencesNotSent && !c.absencesSent) return false;
      if (q.absencesNotSent && !q.absencesSent && c.absencesSent) return false;
      if (!any(q.groupId, c.groupIds ?? [])) return false;
      if (!any(q.studentId, c.studentIds ?? [])) return false;
      if (
        !any(
          q.professorId,
          profs.map((p) => p.professorId),
        )
      )
        return false;
      if (!any(q.trainingId, c.trainingId ? [c.trainingId] : [])) return false;
      if (!any(q.courseId, [c.id])) return false;
      if (q.archived !== undefined && Boolean(c.archived) !== q.archived) return false;
      if (q.classroom !== undefined && c.classroom !== q.classroom) return false;
      if (q.creatorId !== undefined && c.creatorId !== q.creatorId) return false;
      if (q.name !== undefined && !fold(c.name).includes(fold(q.name))) return false;
      if (q.professorSignatureMissing !== undefined && profs.some((p) => !p.signed) !== q.professorSignatureMissing) return false;
      return true;
    })
    .sort((a, b) => Date.parse(a.startDateTime) - Date.parse(b.startDateTime) || (a.id < b.id ? -1 : 1))
    .map((c) => c.id);
  const limit = q.limit ?? 100;
  const page = q.page ?? 1;
  return { ids: matching.slice((page - 1) * limit, page * limit), hasMore: matching.length > page * limit };
}
