/**
 * POST /__bench/publish — publishes synthetic events without course writes, for
 * `npm run bench:hub` (scripts/bench-hub.ts). Served only by the benchmark entry
 * (src/bench/entry.ts), never by the production Worker.
 *
 * Body `{ "count": 1–1000, "type"?: event type (default "course.updated") }`; answers
 * `{ accepted, duplicates, deliveries }` (`SchoolHub.publish`).
 */
import type { IRequest } from "itty-router";
import { z } from "zod";
import { COURSE_EXAMPLE, type CourseRecord } from "../courses/schemas";
import { hubFor } from "../events/hub-client";
import { EVENT_TYPES, type SchoolEvent } from "../events/types";
import { authenticate } from "../http/auth";
import { parseBody } from "../http/body";
import type { RequestContext } from "../http/context";
import { success } from "../http/respond";
import { mintId } from "../lib/ids";
import { formatInstant } from "../lib/time";

const benchBody = z.strictObject({
  count: z.number().int().min(1).max(1000),
  type: z.enum(EVENT_TYPES).default("course.updated"),
});

/** A plausible course record for synthetic events: the document's example, renumbered and dated. */
function sampleCourse(n: number, now: number): CourseRecord {
  return {
    ...COURSE_EXAMPLE,
    groupIds: [...COURSE_EXAMPLE.groupIds],
    professorIds: [...COURSE_EXAMPLE.professorIds],
    id: `crs_bench${n}`,
    name: `${COURSE_EXAMPLE.name} ${n}`,
    startDateTime: formatInstant(now + 86_400_000),
    endDateTime: formatInstant(now + 93_600_000),
    createdAt: formatInstant(now),
    updatedAt: formatInstant(now),
  };
}

/** The benchmark publish handler (see the module comment). */
export async function benchPublish(req: IRequest, env: Env, _exec: ExecutionContext, rc: RequestContext): Promise<Response> {
  const schoolId = await authenticate(req, env.DIRECTORY, rc);
  const { count, type } = await parseBody(benchBody, req);
  const now = Date.now();
  const events: SchoolEvent[] = Array.from({ length: count }, (_, i) => ({
    id: mintId("evt", now),
    type,
    createdAt: formatInstant(now),
    schoolId,
    data: { course: sampleCourse(i, now) },
  }));
  return success(await hubFor(env, schoolId).publish(events));
}
