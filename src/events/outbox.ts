/**
 * The transactional outbox (DESIGN.md): a write's events are inserted into D1's `outbox` in
 * the same batch as the write (src/courses/storage.ts); this module hands them to the
 * school's hub and marks them published. The hub's `publish` is idempotent by event id, so
 * the cron sweep may repeat a publish safely.
 */
import { openSession } from "../db/client";
import { type D1Timer, untimed } from "../http/context";
import { describeError, logPublishFailure } from "../lib/log";
import { hubFor } from "./hub-client";
import type { SchoolEvent } from "./types";

/** Outbox rows unpublished for longer than this are re-published by the sweep (ms). */
export const SWEEP_AFTER_MS = 30_000;
/** Published rows older than this are pruned (ms): 7 days. */
const PRUNE_AFTER_MS = 7 * 24 * 60 * 60 * 1000;
/** Rows handled by one sweep. */
const SWEEP_BATCH = 500;

/**
 * Publishes events of one school to its hub, then marks them published in the outbox.
 *
 * @param timed wraps the D1 round trip (a request's `RequestContext.db`); identity by default.
 * @returns true when the hub acknowledged them; false when the hub could not be reached
 *   (the rows stay unpublished for the sweep; the error is logged, never thrown).
 */
export async function publishEvents(env: Env, schoolId: string, events: SchoolEvent[], timed: D1Timer = untimed): Promise<boolean> {
  if (events.length === 0) return true;
  try {
    await hubFor(env, schoolId).publish(events);
  } catch (err) {
    logPublishFailure({ schoolId, events: events.length, ...describeError(err) });
    return false;
  }
  await timed(() =>
    env.DB.prepare("UPDATE outbox SET published_at = ? WHERE event_id IN (SELECT value FROM json_each(?))")
      .bind(Date.now(), JSON.stringify(events.map((e) => e.id)))
      .run(),
  );
  return true;
}

/**
 * The cron sweep: re-publishes outbox rows older than 30 s that are not marked published
 * (oldest first, per school in creation order), then prunes rows published more than 7 days ago.
 *
 * @returns counts of this sweep.
 */
export async function sweepOutbox(env: Env, now = Date.now()): Promise<{ republished: number; failed: number; pruned: number }> {
  // On the primary: a replica may not hold the newest unpublished rows yet.
  const primary = openSession(env.DB, "write").d1;
  const { results } = await primary
    .prepare("SELECT event_id, school_id, payload FROM outbox WHERE published_at IS NULL AND created_at <= ? ORDER BY created_at, event_id LIMIT ?")
    .bind(now - SWEEP_AFTER_MS, SWEEP_BATCH)
    .all<{ event_id: string; school_id: string; payload: string }>();
  const bySchool = new Map<string, SchoolEvent[]>();
  for (const r of results) bySchool.set(r.school_id, [...(bySchool.get(r.school_id) ?? []), JSON.parse(r.payload) as SchoolEvent]);
  let republished = 0;
  let failed = 0;
  for (const [schoolId, events] of bySchool) {
    if (await publishEvents(env, schoolId, events)) republished += events.length;
    else failed += events.length;
  }
  const pruned = await primary
    .prepare("DELETE FROM outbox WHERE published_at IS NOT NULL AND published_at < ?")
    .bind(now - PRUNE_AFTER_MS)
    .run();
  return { republished, failed, pruned: pruned.meta.changes ?? 0 };
}
