/**
 * What a registration's deliveries carry (docs/reference.md § "Event delivery": `payload`): the
 * full event, or a thin one — the same envelope, the course's id and version only — built by
 * its courier at send time from the full event it keeps (the feed and the log stay full).
 */
import { COURSE_EVENT_TYPES } from "../../courses/schemas";

/** A registration's payload: the full event (default), or identifiers only. */
export const PAYLOAD_FORMS = ["full", "thin"] as const;

/** A payload form. */
export type PayloadForm = (typeof PAYLOAD_FORMS)[number];

const COURSE_TYPES: ReadonlySet<string> = new Set(COURSE_EVENT_TYPES);

/**
 * The body an attempt sends of event `body` (its full JSON) of `type`: with `payload:
 * "thin"`, a course event becomes `{ id, changeCursor, type, createdAt, schoolId, data: {
 * course: { id, version } } }` (`course.professor_signed` keeps `data.professorId`; an event
 * without `changeCursor` keeps none); any other event, and
 * every event of a `full` registration (`undefined`: a config stored before it existed), is
 * sent as it is.
 */
export function deliveredBody(body: string, type: string, payload: PayloadForm | undefined): string {
  if (payload !== "thin" || !COURSE_TYPES.has(type)) return body;
  const event = JSON.parse(body) as {
    id: string;
    changeCursor?: string;
    type: string;
    createdAt: string;
    schoolId: string;
    data: { course?: { id: string; version: number }; professorId?: string };
  };
  const { course, professorId } = event.data;
  // Every course event the hub accepts carries its course; anything else is sent as it is.
  if (course === undefined) return body;
  const data = { course: { id: course.id, version: course.version }, ...(professorId === undefined ? {} : { professorId }) };
  const cursor = event.changeCursor === undefined ? {} : { changeCursor: event.changeCursor };
  return JSON.stringify({ id: event.id, ...cursor, type: event.type, createdAt: event.createdAt, schoolId: event.schoolId, data });
}

/**
 * An event body (its full JSON) as a reader without `courses:read` may see it (docs/reference.md
 * § Scopes): a course event thin (`deliveredBody`'s `thin` form), anything else as it is.
 */
export function thinForReader(body: string): string {
  return deliveredBody(body, (JSON.parse(body) as { type: string }).type, "thin");
}
