/**
 * Events (API.md § "Event delivery"): the body POSTed to each webhook endpoint.
 */
import type { CourseRecord } from "../courses/record";

/**
 * Event types a registration may subscribe to (`["*"]` = all). `webhook.test` is sent only by
 * POST /v3/webhooks/{id}/test; `webhook.disabled` by the hub when it auto-disables a
 * registration (API.md § "Auto-disable"), to the school's other registrations.
 */
export const EVENT_TYPES = [
  "course.created",
  "course.updated",
  "course.archived",
  "course.unarchived",
  "course.absences_sent",
  "course.professor_signed",
  "webhook.disabled",
] as const;

/** A subscribable event type. */
export type EventType = (typeof EVENT_TYPES)[number];

/**
 * An event as delivered: `{ id: "evt_…", type, createdAt (ISO ms UTC), schoolId, data }`.
 * `data.course` is the course record after the write; `course.professor_signed` adds
 * `data.professorId`; `webhook.disabled` carries `data: { webhookId, reason: "failing",
 * failingSince }` and `webhook.test` `data: { webhookId }`.
 */
export interface SchoolEvent {
  id: string;
  type: EventType | "webhook.test";
  createdAt: string;
  schoolId: string;
  data: { course?: CourseRecord; professorId?: string; [key: string]: unknown };
}
