/**
 * What imports count of their events (docs/reference.md § "Event quota"): apart from the
 * school's own writes (src/db/event-quota.ts), against the import bound alone. Free of Workers
 * types, so that the Node import script can load it.
 */
import { utcDay } from "../lib/time";
import type { ImportStep, Placeholder } from "./import-sql";

/**
 * The step of an import batch that counts its events' bytes (docs/reference.md § "Event
 * quota"): adds them to the school's `import_bytes` of the UTC day of `at`, apart from the bytes
 * its API writes count against its quota, so that an operator's import is never refused by
 * the school's quota and never uses it up. `bound` (the import bound,
 * `IMPORT_EVENT_BYTES_PER_DAY`) caps a school's imported bytes per day: a batch that would pass
 * it fails the CHECK `event_bytes_import_within_bound` (`isImportBoundRefusal`), and the whole
 * batch with it.
 *
 * @param bytesSql SQL of the batch's event bytes, its values placed by `v` (NULL: nothing counted).
 * @param at the import's instant (ms since the epoch).
 */
export function countImportEventBytes(schoolId: string, bytesSql: (v: Placeholder) => string, at: number, bound: number): ImportStep {
  return {
    kind: "command",
    sql: (
      v,
    ) => `INSERT INTO event_bytes (school_id, day, bytes, quota, import_bytes, import_bound) SELECT ${v(schoolId)}, ${v(utcDay(at))}, 0, 0, b, ${v(bound)} FROM (SELECT ${bytesSql(v)} AS b) WHERE b IS NOT NULL
      ON CONFLICT (school_id, day) DO UPDATE SET import_bytes = import_bytes + excluded.import_bytes, import_bound = excluded.import_bound`,
  };
}

/** Whether a failed import batch (its error, or wrangler's output as one) was refused by the import bound. */
export const isImportBoundRefusal = (err: unknown): boolean =>
  err instanceof Error && /CHECK constraint failed: event_bytes_import_within_bound/.test(err.message);
