/**
 * The bodies POSTed to webhook endpoints (docs/reference.md § "Event delivery"), one zod schema per
 * event type, with a summary and a description: the OpenAPI document's `webhooks` and their
 * components are generated from them (src/openapi/document.ts). A delivered course event's
 * `data.course` is the record, or for a registration with `payload: "thin"` its id and version.
 */
import { z } from "zod";
import { COURSE_EXAMPLE, type CourseEvent, courseRecordSchema } from "../courses/schemas";
import { successEnvelope } from "../http/envelopes";
import { changeCursorSchema } from "../lib/change-cursor";
import { instantOutSchema, mintedIdSchema, opaqueIdSchema } from "../lib/fields";
import { DELIVERED_EVENT_TYPES, type DeliveredEventType, type SchoolEvent } from "./types";

const eventId = {
  id: mintedIdSchema("evt", "evt_01K4A8Z1M2N3P4Q5R6S7T8V9W0").meta({
    description: "The event id, also sent as `webhook-id` (the same on every retry): deduplicate on it.",
  }),
};

/** A course event's second key (docs/reference.md § "Event delivery"): the cursor of its change. */
const changeCursorField = {
  changeCursor: changeCursorSchema.meta({
    description:
      "The cursor of this event's change in the school's change sequence (`chg_…`, opaque). After missing events, ask GET /v3/courses/changes with `after` set to the `changeCursor` of the last event you processed: it answers every course changed since, once each, at its latest change.",
    example: "chg_1042",
  }),
};

const eventBase = {
  createdAt: instantOutSchema.meta({ description: "When the event happened (ISO 8601 UTC with milliseconds)." }),
  schoolId: opaqueIdSchema.meta({ description: "The school whose data changed.", example: "sch_1" }),
};

/** What each event means (the document's description of its body). */
const EVENT_DESCRIPTIONS: Record<DeliveredEventType, string> = {
  "course.created": "A course was created (POST /v3/courses, or the operator's data import). `data.course` is the new course.",
  "course.updated": "A PATCH or the operator's data import changed a course. `data.course` is the course after the change.",
  "course.archived": "A course went from active to archived.",
  "course.unarchived": "A course went from archived to active.",
  "course.absences_sent": "A course's `absencesSent` went from false to true.",
  "course.professor_signed": "A professor's `signed` went from false to true (one event per professor); `data.professorId` names them.",
  "webhook.disabled":
    'The hub disabled a registration: after WEBHOOK_DISABLE_AFTER_HOURS of nothing but failures (`reason: "failing"`, `data.failingSince` its first failed attempt after its last success), because its receiver answered 410 (`reason: "gone"`, `failingSince: null`), or because its receiver asked for it with `webhook-delivery: disable` (`reason: "receiver"`, `failingSince: null`). Sent to the school\'s other registrations that subscribe to it and are enabled and not failing, and in the events feed.',
  "webhook.failing":
    "A registration's counted attempts have failed 4 times in a row (deliveries of `webhook.*` notices and refusals with `webhook-delivery: abort-message` are not counted): sent once per streak, at its 4th failed attempt, and at most once an hour per registration. `data.failingSince` is the streak's first failed attempt, `consecutiveFailures` its count then (4), `lastError` that attempt's `error` as in the delivery log. Sent to the school's other registrations that subscribe to it and are enabled and not failing, and in the events feed.",
  "webhook.recovered":
    "3 successful attempts in a row, the last at least an hour after its `webhook.failing`, ended a registration's failing streak: `data.failingSince` is that streak's first failed attempt, `recoveredAt` the last of those successful attempts. At most once an hour per registration. Sent to the school's other registrations that subscribe to it and are enabled and not failing, and in the events feed.",
  "webhook.test": "Sent by POST /v3/webhooks/{id}/test to that registration only; `data.webhookId` names it.",
  "webhook.events_missed":
    "Deliveries to this registration were dropped unsent: events that aged out of the 7-day retention before they could be handed to it (its queue at its bound, a long back-off), events skipped while it was disabled (sent once it is enabled again), and events past a course's held backlog (`course backlog full`). Sent to the registration that missed them only, whatever its `events` and `filter` (it cannot be subscribed to or filtered out), never in the events feed. One notice per gap: a gap that goes on extends the notice not yet queued; at most one an hour per registration, none while the previous one is still queued. `data.from`/`to` are the `createdAt` of the first and last missed event, `missed` their count, and `resumeCursor` the change cursor to pass to `GET /v3/courses/changes?after=`: it returns every course whose change was missed (`null` when no missed event was a course event). A missed `webhook.events_missed` is never reported by another one.",
};

/** Each event in a few words (the summary of its entry under `webhooks`). */
export const EVENT_SUMMARIES: Record<DeliveredEventType, string> = {
  "course.created": "A course was created",
  "course.updated": "A course was changed",
  "course.archived": "A course was archived",
  "course.unarchived": "A course was restored",
  "course.absences_sent": "A course's absences were sent",
  "course.professor_signed": "A professor signed a course",
  "webhook.disabled": "A registration was disabled",
  "webhook.failing": "A registration is failing",
  "webhook.recovered": "A registration recovered",
  "webhook.test": "A test event",
  "webhook.events_missed": "Deliveries were dropped unsent",
};

/** The `data` of each `webhook.*` event, with its example. */
const WEBHOOK_EVENT_DATA = {
  "webhook.events_missed": {
    schema: z.strictObject({
      webhookId: opaqueIdSchema,
      from: instantOutSchema.meta({ description: "The `createdAt` of the first missed event." }),
      to: instantOutSchema.meta({ description: "The `createdAt` of the last missed event." }),
      missed: z.int().min(1).meta({ description: "How many events were missed." }),
      resumeCursor: z
        .string()
        .nullable()
        .meta({ description: "The change cursor to resume from (`GET /v3/courses/changes?after=`); `null`: no course event was missed.", example: "chg_41" }),
    }),
    example: {
      webhookId: "wh_01K4A8Z1M2N3P4Q5R6S7T8V9W0",
      from: "2026-08-09T08:00:00.000Z",
      to: "2026-08-16T16:02:10.004Z",
      missed: 312,
      resumeCursor: "chg_41",
    },
  },
  "webhook.test": { schema: z.strictObject({ webhookId: opaqueIdSchema }), example: { webhookId: "wh_01K4A8Z1M2N3P4Q5R6S7T8V9W0" } },
  "webhook.disabled": {
    schema: z.strictObject({ webhookId: opaqueIdSchema, reason: z.enum(["failing", "gone", "receiver"]), failingSince: instantOutSchema.nullable() }),
    example: { webhookId: "wh_01K4A8Z1M2N3P4Q5R6S7T8V9W0", reason: "failing", failingSince: "2026-08-16T16:02:10.004Z" },
  },
  "webhook.failing": {
    schema: z.strictObject({
      webhookId: opaqueIdSchema,
      failingSince: instantOutSchema.meta({ description: "The streak's first failed attempt." }),
      consecutiveFailures: z.int().min(1).meta({ description: "Failed attempts in a row when it was sent (4)." }),
      lastError: z.string().meta({ description: "The last failed attempt's `error`, as in the delivery log.", example: "HTTP 503" }),
    }),
    example: { webhookId: "wh_01K4A8Z1M2N3P4Q5R6S7T8V9W0", failingSince: "2026-08-16T16:02:10.004Z", consecutiveFailures: 4, lastError: "HTTP 503" },
  },
  "webhook.recovered": {
    schema: z.strictObject({
      webhookId: opaqueIdSchema,
      failingSince: instantOutSchema.meta({ description: "The first failed attempt of the streak that ended." }),
      recoveredAt: instantOutSchema.meta({ description: "The successful attempt that ended it (the 3rd in a row)." }),
    }),
    example: { webhookId: "wh_01K4A8Z1M2N3P4Q5R6S7T8V9W0", failingSince: "2026-08-16T16:02:10.004Z", recoveredAt: "2026-08-16T17:40:02.512Z" },
  },
} as const;

/**
 * The course of a thin delivery (docs/reference.md § "Event delivery": `payload`): its id and
 * version, for the receiver to fetch `GET /v3/courses/{id}`.
 */
const thinCourseSchema = courseRecordSchema.pick({ id: true, version: true }).meta({
  id: "ThinCourse",
  description:
    "A course event's `data.course` for a registration with `payload: \"thin\"`: the course's id and version only (fetch `GET /v3/courses/{id}`, whose `ETag` is the version).",
  example: { id: COURSE_EXAMPLE.id, version: COURSE_EXAMPLE.version },
});

/** A delivered course event's `data.course`: the record, or (`payload: "thin"`) its id and version. */
const deliveredCourseSchema = z.union([courseRecordSchema, thinCourseSchema]);

/**
 * The body of an event of `type` (a course event, or `webhook.*`) whose `data.course` is
 * `course`: the record as the feed returns it (component `…Event`), or `deliveredCourseSchema`
 * as POSTed to a registration (component `…Delivery`, its description saying so).
 */
function eventSchema<C extends typeof courseRecordSchema | typeof deliveredCourseSchema>(type: DeliveredEventType, course: C) {
  const delivered = course === deliveredCourseSchema && type.startsWith("course.");
  const own = type in WEBHOOK_EVENT_DATA ? WEBHOOK_EVENT_DATA[type as keyof typeof WEBHOOK_EVENT_DATA] : null;
  const data =
    own !== null
      ? own.schema
      : type === "course.professor_signed"
        ? z.strictObject({ course, professorId: opaqueIdSchema.meta({ description: "The professor who signed.", example: "prf_4" }) })
        : z.strictObject({ course });
  const name = type.replace(/(^|[._])(\w)/g, (_m, _s, c: string) => c.toUpperCase());
  const exampleData =
    own !== null ? own.example : type === "course.professor_signed" ? { course: COURSE_EXAMPLE, professorId: "prf_4" } : { course: COURSE_EXAMPLE };
  const thin = delivered ? ' A registration with `payload: "thin"` receives `data.course` as `{ id, version }` only (`ThinCourse`).' : "";
  // A course event carries its change's cursor; a notice's shape (and `webhook.test`'s) has no such key.
  const cursor = own === null;
  const shape = { ...eventId, ...changeCursorField, type: z.literal(type), ...eventBase, data };
  const { changeCursor: _, ...noticeShape } = shape;
  return z.strictObject(cursor ? shape : (noticeShape as typeof shape)).meta({
    id: `${name}${delivered ? "Delivery" : "Event"}`,
    description: EVENT_DESCRIPTIONS[type] + thin,
    example: {
      id: "evt_01K4A8Z1M2N3P4Q5R6S7T8V9W0",
      ...(cursor ? { changeCursor: "chg_1042" } : {}),
      type,
      createdAt: "2026-08-21T16:02:10.004Z",
      schoolId: "sch_1",
      data: exampleData,
    },
  });
}

/** Every event body as the feed returns it, by type. */
const eventSchemas = Object.fromEntries(DELIVERED_EVENT_TYPES.map((t) => [t, eventSchema(t, courseRecordSchema)])) as {
  [T in DeliveredEventType]: ReturnType<typeof eventSchema<typeof courseRecordSchema>>;
};

/** Every event body as POSTed to a registration (a course event's `data.course` may be thin), by type. */
export const deliveredEventSchemas = Object.fromEntries(DELIVERED_EVENT_TYPES.map((t) => [t, eventSchema(t, deliveredCourseSchema)])) as {
  [T in DeliveredEventType]: ReturnType<typeof eventSchema<typeof deliveredCourseSchema>>;
};

/**
 * The event catalog (GET /v3/event-types): `{ type, description, schema }` per delivered
 * event type, `schema` being the JSON Schema of `deliveredEventSchemas[type]` (the same bodies
 * as the OpenAPI document's `webhooks`). Built once per isolate.
 */
export const eventCatalog = (() => {
  let catalog: { type: DeliveredEventType; description: string; schema: unknown }[] | null = null;
  return () =>
    (catalog ??= DELIVERED_EVENT_TYPES.map((type) => ({
      type,
      description: deliveredEventSchemas[type].meta()!.description as string,
      schema: z.toJSONSchema(deliveredEventSchemas[type], { io: "output", unrepresentable: "any" }),
    })));
})();

/** 200 of GET /v3/event-types. */
export const eventTypesResponseSchema = successEnvelope(
  "EventTypesResponse",
  z
    .array(
      z.strictObject({
        type: z.enum(DELIVERED_EVENT_TYPES),
        description: z.string(),
        schema: z.record(z.string(), z.unknown()).meta({ description: "The JSON Schema of the event body." }),
      }),
    )
    .meta({ id: "EventTypes" }),
  "The event catalog.",
);

// Compile-time checks: every body the feed documents is an event the hub accepts, and so is
// every event a course write publishes.
type Assignable<A, B> = [A] extends [B] ? true : false;
const checks: [Assignable<z.infer<(typeof eventSchemas)[DeliveredEventType]>, SchoolEvent>, Assignable<CourseEvent, SchoolEvent>] = [true, true];
void checks;
