/**
 * The query and answer of GET /v3/webhooks/{id}/stats as zod schemas (docs/reference.md § "Delivery
 * statistics"); the counting is stats.ts's.
 */
import { z } from "zod";
import { successEnvelope } from "../../http/envelopes";
import { instantOutSchema, instantSchema } from "../../lib/fields";

/** The query of GET /v3/webhooks/{id}/stats (docs/reference.md § "Delivery statistics"); defaults resolved by the operation. */
export const statsQuerySchema = z.strictObject({
  since: instantSchema({ repair: true }).optional().meta({ description: "The window's start (inclusive); default `until` − 24 h." }),
  until: instantSchema({ repair: true }).optional().meta({
    description: "The window's end (exclusive); default now (with only `since`: now, or 7 days after `since` if sooner). At most 7 days after `since`.",
  }),
  bucket: z
    .enum(["hour", "day"], { error: "must be hour or day" })
    .optional()
    .meta({ description: "Bucket width, aligned on UTC hours or days (default `hour`).", example: "hour" }),
});

const count = (description: string) => z.int().min(0).meta({ description });

/** The answer of GET /v3/webhooks/{id}/stats: the window as resolved, and its buckets. */
export const statsSchema = z
  .strictObject({
    since: instantOutSchema.meta({ description: "The window's start, as resolved (inclusive)." }),
    until: instantOutSchema.meta({ description: "The window's end, as resolved (exclusive)." }),
    bucket: z.enum(["hour", "day"]),
    buckets: z
      .array(
        z.strictObject({
          start: instantOutSchema.meta({ description: "The bucket's first instant (UTC hour or day); the first bucket may start before `since`." }),
          succeeded: count("Log entries `succeeded`: attempts answered 2xx."),
          failed: count("Log entries `failed`: attempts that failed (non-2xx, timeout, network error), whether a retry follows or not."),
          pending: count("Log entries `pending`: deliveries queued in this bucket and not attempted yet."),
          skipped: count("Log entries `skipped`: skipped while the registration was disabled."),
        }),
      )
      .meta({ description: "Every bucket overlapping the window, oldest first, empty ones included." }),
  })
  .meta({
    id: "DeliveryStats",
    example: {
      since: "2026-09-07T08:00:00.000Z",
      until: "2026-09-07T10:00:00.000Z",
      bucket: "hour",
      buckets: [
        { start: "2026-09-07T08:00:00.000Z", succeeded: 41, failed: 2, pending: 0, skipped: 0 },
        { start: "2026-09-07T09:00:00.000Z", succeeded: 0, failed: 0, pending: 0, skipped: 3 },
      ],
    },
  });

/** The envelope of the answer. */
export const statsResponseSchema = successEnvelope("DeliveryStatsResponse", statsSchema, "The counts per bucket.");

/** One bucket of the answer (see `statsSchema`). */
export type StatsBucket = z.infer<typeof statsSchema>["buckets"][number];
