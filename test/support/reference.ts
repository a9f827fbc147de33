/**
 * A plain in-test reference of the listing semantics (docs/reference.md § "GET /v3/courses"), written
 * independently of the SQL: the property tests compare the Worker against it.
 */
import { coursesA } from "./fixtures";

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

const fold = (s: string) =>
  s
    .normalize("NFD")
    .replace(/[\u0300-\u036f]/g, "")
    .toLowerCase();
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
