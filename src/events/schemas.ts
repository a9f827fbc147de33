/**
 * The bodies POSTed to webhook endpoints (API.md § "Event delivery"), one zod schema per
 * event type, with a summary and a description: the OpenAPI document's `webhooks` and their
 * components are generated from them (src/webhooks/event-webhooks.ts).
 */
import { z } from "zod";
import { COURSE_EXAMPLE, type CourseEvent, courseRecordSchema } from "../courses/schemas";
import { instantOutSchema, mintedIdSchema, opaqueIdSchema } from "../lib/fields";
import { DELIVERED_EVENT_TYPES, type DeliveredEventType, type SchoolEvent } from "./types";

const eventBase = {
  id: mintedIdSchema("evt", "evt_01K4A8Z1M2N3P4Q5R6S7T8V9W0").meta({
    description: "The event id, also sent as `webhook-id` (the same on every retry): deduplicate on it.",
  }),
  createdAt: instantOutSchema.meta({ description: "When the event happened (ISO 8601 UTC with milliseconds)." }),
  schoolId: opaqueIdSchema.meta({ description: "The school whose data changed.", example: "sch_1" }),
};

/** What each event means (the document's description of its body). */
const EVENT_DESCRIPTIONS: Record<DeliveredEventType, string> = {
  "course.created": "A course was created (POST /v3/courses). `data.course` is the new course.",
  "course.updated": "A PATCH changed a course. `data.course` is the course after the change.",
  "course.archived": "A course went from active to archived.",
  "course.unarchived": "A course went from archived to active.",
  "course.absences_sent": "A course's `absencesSent` went from false to true.",
  "course.professor_signed": "A professor's `signed` went from false to true (one event per professor); `data.professorId` names them.",
  "webhook.test": "Sent by POST /v3/webhooks/{id}/test to that registration only; `data.webhookId` names it.",
};

/** Each event in a few words (the summary of its entry under `webhooks`). */
export const EVENT_SUMMARIES: Record<DeliveredEventType, string> = {
  "course.created": "A course was created",
  "course.updated": "A course was changed",
  "course.archived": "A course was archived",
  "course.unarchived": "A course was restored",
  "course.absences_sent": "A course's absences were sent",
  "course.professor_signed": "A professor signed a course",
  "webhook.test": "A test event",
};

/** The body of a delivered event of `type` (a course event, or `webhook.test`). */
function eventSchema(type: DeliveredEventType) {
  const data =
    type === "webhook.test"
      ? z.strictObject({ webhookId: opaqueIdSchema })
      : type === "course.professor_signed"
        ? z.strictObject({ course: courseRecordSchema, professorId: opaqueIdSchema.meta({ description: "The professor who signed.", example: "prf_4" }) })
        : z.strictObject({ course: courseRecordSchema });
  const name = type.replace(/(^|[._])(\w)/g, (_m, _s, c: string) => c.toUpperCase());
  const exampleData =
    type === "webhook.test"
      ? { webhookId: "wh_01K4A8Z1M2N3P4Q5R6S7T8V9W0" }
      : type === "course.professor_signed"
        ? { course: COURSE_EXAMPLE, professorId: "prf_4" }
        : { course: COURSE_EXAMPLE };
  return z.strictObject({ ...eventBase, type: z.literal(type), data }).meta({
    id: `${name}Event`,
    description: EVENT_DESCRIPTIONS[type],
    example: { id: "evt_01K4A8Z1M2N3P4Q5R6S7T8V9W0", type, createdAt: "2026-08-21T16:02:10.004Z", schoolId: "sch_1", data: exampleData },
  });
}

/** Every event body, by type. */
export const eventSchemas = Object.fromEntries(DELIVERED_EVENT_TYPES.map((t) => [t, eventSchema(t)])) as {
  [T in DeliveredEventType]: ReturnType<typeof eventSchema>;
};

// Compile-time checks: every documented body is an event the hub accepts, and so is every
// event a course write publishes.
type Assignable<A, B> = [A] extends [B] ? true : false;
const checks: [Assignable<z.infer<ReturnType<typeof eventSchema>>, SchoolEvent>, Assignable<CourseEvent, SchoolEvent>] = [true, true];
void checks;
