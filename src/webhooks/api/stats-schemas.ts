/**
 * The query and answer of GET /v3/webhooks/{id}/stats as zod schemas (docs/reference.md § "Delivery
 * statistics"); the counting is stats.ts's, the percentiles latency.ts's.
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

/** p50, p95, p99 of one latency in a bucket (courier/latency.ts), or `null` when it holds no success. */
const percentiles = (what: string) =>
  z
    .strictObject({
      p50: z
        .int()
        .min(0)
        .meta({ description: `Median ${what}, ms.` }),
      p95: z
        .int()
        .min(0)
        .meta({ description: `95th percentile ${what}, ms.` }),
      p99: z
        .int()
        .min(0)
        .meta({ description: `99th percentile ${what}, ms.` }),
    })
    .nullable();

/** The answer of GET /v3/webhooks/{id}/stats: the window as resolved, and its buckets (counts, and latency percentiles in ms). */
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
          delayMs: percentiles("delay").meta({
            description:
              "Of the attempts that succeeded in the bucket's hours (resends excepted): milliseconds from the event's acceptance by the service to the receiver's 2xx status line. Nearest-rank percentiles from a log-scale histogram: each within 5 % of the exact value, plus rounding to the millisecond. Whole UTC hours: the bucket's hours overlapping the window. `null`: no success counted.",
          }),
          durationMs: percentiles("duration").meta({
            description:
              "Of the attempts that succeeded in the bucket's hours (resends included): their `durationMs`, from sending to the 2xx status line. Same histogram and bound as `delayMs`. `null`: no success counted.",
          }),
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
        {
          start: "2026-09-07T08:00:00.000Z",
          succeeded: 41,
          failed: 2,
          pending: 0,
          skipped: 0,
          delayMs: { p50: 182, p95: 640, p99: 5_390 },
          durationMs: { p50: 95, p95: 310, p99: 480 },
        },
        { start: "2026-09-07T09:00:00.000Z", succeeded: 0, failed: 0, pending: 0, skipped: 3, delayMs: null, durationMs: null },
      ],
    },
  });

/** The envelope of the answer. */
export const statsResponseSchema = successEnvelope("DeliveryStatsResponse", statsSchema, "The counts and latency percentiles per bucket.");

/** One bucket of the answer (see `statsSchema`). */
export type StatsBucket = z.infer<typeof statsSchema>["buckets"][number];
