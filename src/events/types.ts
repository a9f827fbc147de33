/**
 * Events (docs/reference.md § "Event delivery"): the catalogue of event types and the shape of any
 * event the hub accepts. Their documented bodies, one per type, are in src/events/schemas.ts.
 */
import { z } from "zod";
import { COURSE_EVENT_TYPES, courseKeysSchema, courseRecordSchema } from "../courses/schemas";
import { changeCursorSchema } from "../lib/change-cursor";
import { idSchema, instantOutSchema } from "../lib/fields";

/**
 * Event types a registration may subscribe to (`["*"]` = all): those of course writes, and
 * the notices the hub sends about a registration to the school's other registrations:
 * `webhook.disabled` when it disables one (docs/reference.md § "Auto-disable"),
 * `webhook.failing` and `webhook.recovered` (§ "Failing and recovered notices").
 */
export const EVENT_TYPES = [...COURSE_EVENT_TYPES, "webhook.disabled", "webhook.failing", "webhook.recovered"] as const;

/** A subscribable event type. */
export type EventType = (typeof EVENT_TYPES)[number];

/**
 * Every event type a delivery may carry: `webhook.test` is sent only by POST
 * /v3/webhooks/{id}/test, `webhook.events_missed` only to the registration that missed events
 * (docs/reference.md § "Missed events"); neither is subscribable, in the log or in the feed.
 */
export const DELIVERED_EVENT_TYPES = [...EVENT_TYPES, "webhook.test", "webhook.events_missed"] as const;

/** A delivered event type. */
export type DeliveredEventType = (typeof DELIVERED_EVENT_TYPES)[number];

/**
 * Any event as delivered: `{ id: "evt_…", changeCursor?, type, createdAt (ISO ms UTC), schoolId, data }`;
 * a course event carries `changeCursor` (`chg_…`, its change's cursor: src/lib/change-cursor.ts),
 * notices and `webhook.test` do not.
 * `data.course` is the course record after the write; `course.professor_signed` adds
 * `data.professorId`; `webhook.disabled` carries `data: { webhookId, reason, failingSince }`,
 * `webhook.failing` `data: { webhookId, failingSince, consecutiveFailures, lastError }`,
 * `webhook.recovered` `data: { webhookId, failingSince, recoveredAt }`, `webhook.test`
 * `data: { webhookId }` and `webhook.events_missed` `data: { webhookId, from, to, missed, resumeCursor }`.
 */
const schoolEventSchema = z.strictObject({
  id: idSchema,
  changeCursor: changeCursorSchema.optional(),
  type: z.enum(DELIVERED_EVENT_TYPES),
  createdAt: instantOutSchema,
  schoolId: idSchema,
  data: z.looseObject({ course: courseRecordSchema.optional(), professorId: idSchema.optional() }),
  /** Internal (a course change's filter keys before it): the hub strips it, it is never delivered. */
  previous: courseKeysSchema.optional(),
});

/** An event as delivered (`z.infer` of its schema). */
export type SchoolEvent = z.infer<typeof schoolEventSchema>;
