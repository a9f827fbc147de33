/**
 * The event catalog (docs/reference.md § "GET /v3/event-types") and what a receiver gets (§ "Event
 * delivery"): one OpenAPI `webhooks` entry per delivered event type — its body
 * (src/events/schemas.ts), the Standard Webhooks headers and what each answer means.
 */
import { deliveredEventSchemas, EVENT_SUMMARIES, eventCatalog, eventTypesResponseSchema } from "../../events/schemas";
import { DELIVERED_EVENT_TYPES } from "../../events/types";
import type { Operation, OutgoingRequest } from "../../http/operation";
import { rejectQuery } from "../../http/request";
import { success } from "../../http/respond";
import { TAG } from "./parts";
import { deliveryHeadersSchema } from "./schemas";

/** What a course event's description adds (docs/reference.md § "Event delivery", ordering). */
const ORDERED =
  " With the registration's `ordering: \"course\"` (the default), the events of one course arrive in the order they were accepted: the course's next event is not attempted until this one's delivery has ended.";

const EVENTS_TAG = { name: "Events", description: "Event payloads POSTed to webhook endpoints (OpenAPI `webhooks`)." };

/** What a receiver's `webhook-delivery` answer header asks (docs/reference.md § "Event delivery"), with any status. */
const DELIVERY_CONTROL =
  'The answer may carry a `webhook-delivery` header (Standard Webhooks delivery control; the value trimmed, in any case; other values are ignored): `abort-message` ends this delivery at once, `failed` with no further retry (a 2xx still succeeded); `disable` does that too and disables the registration as a 410 does (`disabledReason: "receiver"`; `webhook.disabled` is published with `reason: "receiver"`).';

/** Who receives the types no registration subscribes to (docs/reference.md § "Event delivery"). */
const RECIPIENTS: Partial<Record<string, string>> = {
  "webhook.test": "POSTed to the registration tested only",
  "webhook.events_missed": "POSTed to the registration that missed the events only, whatever its `events` and `filter`",
};

/** The deliveries of every event type, as the document describes them. */
export const eventWebhooks: OutgoingRequest[] = DELIVERED_EVENT_TYPES.map((type) => {
  const meta = deliveredEventSchemas[type].meta()!;
  return {
    name: type,
    operationId: `on${meta.id as string}`,
    tag: EVENTS_TAG,
    summary: EVENT_SUMMARIES[type],
    description: `${meta.description as string}\n\n${RECIPIENTS[type] ?? `POSTed to each registration subscribed to \`${type}\` (or to \`*\`)`}, with \`content-type: application/json\` and the Standard Webhooks headers. Delivery is at least once.${type.startsWith("course.") ? ORDERED : ""}\n\n${DELIVERY_CONTROL}`,
    headers: deliveryHeadersSchema,
    body: deliveredEventSchemas[type],
    responses: {
      "2XX": "Any 2xx within the timeout (`WEBHOOK_TIMEOUT_MS`, default 15 s, counted from the moment the request is sent): delivered.",
      410: 'Gone: the delivery ends `failed` and the registration is disabled (`disabledReason: "gone"`; Standard Webhooks: the receiver asks to be unsubscribed); `webhook.disabled` is published with `reason: "gone"`.',
      429: "Too Many Requests: retried on the schedule, and no earlier than its `Retry-After` (seconds or an HTTP date; at most 24 h), shown in the delivery's `nextAttemptAt`.",
      503: "Service Unavailable: retried like a 429, honouring `Retry-After`.",
      default:
        "Anything else (or no answer within the timeout) is retried on the schedule (`WEBHOOK_RETRY_SCHEDULE`, default after 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h, each lengthened by a random 0–10 %, counted from the end of the failed attempt); then the delivery is `failed`.",
    },
  };
});

/** GET /v3/event-types. */
export const catalogOperations: Operation<Env>[] = [
  {
    method: "GET",
    path: "/v3/event-types",
    operationId: "listEventTypes",
    scopes: [],
    tag: TAG,
    summary: "The event catalog",
    description: "Every event type with its description and the JSON Schema of its body (the same as this document's `webhooks`). No authentication.",
    public: true,
    responses: {
      200: {
        description: "The catalog.",
        schema: eventTypesResponseSchema,
        example: { status: "success", result: [{ type: "webhook.test", description: "A test event.", schema: { type: "object" } }] },
      },
      400: ["UNKNOWN_PARAMETER"],
    },
    async handler(req) {
      rejectQuery(req);
      return success(eventCatalog());
    },
  },
];
