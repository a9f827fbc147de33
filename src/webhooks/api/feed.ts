/**
 * GET /v3/events (docs/reference.md § "Events feed"): the school's events in the order the hub accepted
 * them, for clients that cannot receive webhooks, read by cursor with an optional long poll.
 * The hub reads its log (hub/feed.ts); this operation validates the query and turns the
 * hub's positions into opaque cursors.
 */
import { z } from "zod";
import { hubFor } from "../../events/hub-client";
import { deliveredEventSchemas } from "../../events/schemas";
import { EVENT_TYPES } from "../../events/types";
import { authenticate } from "../../http/auth";
import { ApiError } from "../../http/errors";
import type { Operation } from "../../http/operation";
import { parseQuery } from "../../http/request";
import { successRaw } from "../../http/respond";
import { instantSchema, queryIntegerSchema, splitIds } from "../../lib/fields";
import { FEED_PAGE_BYTES, MAX_PAGE_SIZE, WOKEN_FEED_PAGE_BYTES } from "../../lib/limits";
import { readsCourses } from "../../lib/scopes";
import { thinForReader } from "../delivery/payload";
import { TAG } from "./parts";

/** The longest long poll, in seconds (docs/reference.md: `wait` 0–25). */
const MAX_WAIT_S = 25;

/** A position in the school's log: after event `seq`, accepted at `at` (ms). */
type Position = { seq: number; at: number };

const CURSOR_RE = /^c1\.([0-9a-z]{1,12})\.([0-9a-z]{1,12})$/;

/** The opaque cursor of a position: `c1.<seq>.<at>` in base 36 (nothing about another school). */
export const encodeCursor = (p: Position): string => `c1.${p.seq.toString(36)}.${Math.max(0, p.at).toString(36)}`;

/** The position of a cursor, or `null` when it is not one this service wrote. */
function decodeCursor(cursor: string): Position | null {
  const m = CURSOR_RE.exec(cursor);
  if (!m) return null;
  const seq = Number.parseInt(m[1]!, 36);
  const at = Number.parseInt(m[2]!, 36);
  return Number.isSafeInteger(seq) && Number.isSafeInteger(at) ? { seq, at } : null;
}

const feedQuerySchema = z.strictObject({
  after: z.string().min(1).max(40).optional().meta({ description: "The `nextCursor` of a previous page: read on from there.", example: "c1.2s.mh3k2x1c" }),
  since: instantSchema({ repair: true }).optional().meta({ description: "Events accepted at or after this instant (not with `after`)." }),
  eventType: z
    .string()
    .transform(splitIds)
    .pipe(z.array(z.enum(EVENT_TYPES, { error: `must list event types among ${EVENT_TYPES.join(", ")}` })))
    .optional()
    .meta({ description: `Comma-separated event types (${EVENT_TYPES.join(", ")}); omitted: all.`, example: "course.created,course.updated" }),
  limit: queryIntegerSchema(1, MAX_PAGE_SIZE, MAX_PAGE_SIZE)
    .optional()
    .meta({
      description: `Events per page, 1 to ${MAX_PAGE_SIZE} (default ${MAX_PAGE_SIZE}); a page also ends before ${FEED_PAGE_BYTES.toLocaleString("en")} bytes of events (at least one event), with \`hasMore\`.`,
      example: 100,
    }),
  wait: queryIntegerSchema(0, MAX_WAIT_S, 0)
    .optional()
    .meta({
      description: `Seconds (0–${MAX_WAIT_S}, default 0) to wait when no event follows the cursor: the answer comes as soon as one is accepted (within 1 s), else an empty page. A page answered after waiting holds at most ${WOKEN_FEED_PAGE_BYTES.toLocaleString("en")} bytes of events (at least one), with \`hasMore\` when more follow.`,
      example: 25,
    }),
});

const feedEventSchema = z.union(EVENT_TYPES.map((t) => deliveredEventSchemas[t]) as unknown as [z.ZodType, z.ZodType, ...z.ZodType[]]);

const feedResponseSchema = z
  .strictObject({
    status: z.literal("success"),
    result: z.array(feedEventSchema),
    pagination: z.strictObject({
      limit: z.int().min(1).max(MAX_PAGE_SIZE),
      hasMore: z.boolean().meta({ description: "Whether more events follow already (read on at once)." }),
      nextCursor: z.string().meta({ description: "Where to read on (`after`); present on every page, an empty one included." }),
    }),
  })
  .meta({ id: "EventFeed", description: "A page of the school's events, oldest first." });

/** GET /v3/events. */
export const feedOperations: Operation<Env>[] = [
  {
    method: "GET",
    path: "/v3/events",
    operationId: "listEvents",
    scopes: ["events:read"],
    tag: TAG,
    portalTokens: true,
    summary: "Read the school's events (feed)",
    description:
      "The school's events in the order they were accepted — the same events registrations receive, each item exactly the JSON body a registration gets (`webhook.test` events excepted; a registration with `payload: \"thin\"` gets course events with the course's id and version only, and so does a reader without `courses:read`) — for systems that cannot expose an HTTPS endpoint. Retained 7 days. A page holds at most `limit` events and at most " +
      FEED_PAGE_BYTES.toLocaleString("en") +
      " bytes of them (their JSON, UTF-8), but always at least one. Read on with `after` = `nextCursor`: every later event comes exactly once, in order, with no gap, across restarts of the service. With `wait`, an empty answer waits for the next event (long poll). Neither `after` nor `since`: from the oldest retained event.",
    request: { query: feedQuerySchema },
    responses: {
      200: {
        description: "A page of events.",
        schema: feedResponseSchema,
        example: { status: "success", result: [], pagination: { limit: 100, hasMore: false, nextCursor: "c1.2s.mh3k2x1c" } },
      },
      400: { codes: ["INVALID_PARAMETER", "UNKNOWN_PARAMETER"], lead: "A malformed cursor, an unknown event type, or both `after` and `since`." },
      410: ["CURSOR_EXPIRED"],
    },
    async handler(req, env, _exec, rc) {
      const schoolId = await authenticate(req, env.DIRECTORY, rc);
      const query = parseQuery(feedQuerySchema, req);
      if (query.after !== undefined && query.since !== undefined) {
        throw new ApiError("INVALID_PARAMETER", "Give `after` (a cursor) or `since` (an instant), not both.", [
          { parameter: "since", message: "not with after" },
        ]);
      }
      const after = query.after === undefined ? undefined : decodeCursor(query.after);
      if (after === null) {
        throw new ApiError("INVALID_PARAMETER", "`after` is not a cursor of this feed: pass the `nextCursor` of a previous page.", [
          { parameter: "after", message: "must be a nextCursor of this feed" },
        ]);
      }
      const limit = query.limit ?? MAX_PAGE_SIZE;
      const page = await hubFor(env, schoolId).readFeed({
        after,
        since: query.since,
        types: query.eventType && query.eventType.length > 0 ? [...new Set(query.eventType)] : null,
        limit,
        waitMs: (query.wait ?? 0) * 1000,
      });
      if ("expired" in page) {
        throw new ApiError("CURSOR_EXPIRED", undefined, [
          { parameter: "after", message: `older than the retention; resume the change query after ${page.resumeCursor}` },
        ]);
      }
      // Each item is the stored body as registrations receive it: joined, not re-serialized;
      // thin for a credential that may not read courses (docs/reference.md § Scopes).
      const bodies = readsCourses(rc.scopes) ? page.bodies : page.bodies.map(thinForReader);
      return successRaw(`[${bodies.join(",")}]`, { pagination: { limit, hasMore: page.hasMore, nextCursor: encodeCursor(page.next) } });
    },
  },
];
