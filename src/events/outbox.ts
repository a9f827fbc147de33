/**
 * The transactional outbox (DESIGN.md): a write's events are inserted into D1's `outbox` in
 * the same batch as the write (src/courses/storage.ts); this module hands them to the
 * school's hub and marks them published. The hub's `publish` is idempotent by event id, so
 * the cron sweep may repeat a publish safely; the sweep walks every shard's outbox at once
 * and each shard's school by school, fairly, so that one failing shard or school's hub
 * holds up no other's events.
 */
import { openSession } from "../db/client";
import { shardBindings } from "../db/shard-names";
import { shardFor } from "../db/shards";
import { type D1Timer, untimed } from "../http/context";
import { describeError, logPublishFailure } from "../lib/log";
import { hubFor } from "./hub-client";
import type { SchoolEvent } from "./types";

/** Outbox rows unpublished for longer than this are re-published by the sweep (ms). */
export const SWEEP_AFTER_MS = 30_000;
/** Published rows older than this are pruned (ms): 7 days. */
const PRUNE_AFTER_MS = 7 * 24 * 60 * 60 * 1000;

/**
 * The bounds of one sweep (the cron runs it every minute, wrangler.toml).
 *
 * - `schools`: schools handled, those with the oldest due row first.
 * - `scan`: schools with unpublished rows looked at to choose them (one index seek each).
 * - `batch`: rows of one school handed to its hub in one `publish`; a school whose batch was
 *   full and acknowledged goes on with its next one while the budget lasts.
 * - `concurrency`: hubs published to at once. A Worker invocation may have 6 connections
 *   open (Cloudflare Workers limits, "Simultaneous open connections"); 5, so that a slot is
 *   left for D1 and no call waits for a slot with its timeout already running.
 * - `publishTimeoutMs`: one `publish` call; past it the school counts as failed this sweep
 *   (the call is abandoned, its rows stay unpublished: publish is idempotent by event id).
 * - `budgetMs`: no school starts, and no school starts another batch, after this much of
 *   the sweep (well within the minute between two crons).
 */
export interface SweepLimits {
  schools: number;
  scan: number;
  batch: number;
  concurrency: number;
  publishTimeoutMs: number;
  budgetMs: number;
}

const SWEEP_LIMITS: SweepLimits = { schools: 50, scan: 1000, batch: 100, concurrency: 5, publishTimeoutMs: 5_000, budgetMs: 25_000 };

/** What one sweep did: schools handled, rows re-published, rows left unpublished by a failed or slow hub, rows pruned. */
export interface SweepResult {
  schools: number;
  republished: number;
  failed: number;
  pruned: number;
}

/**
 * `promise`, or a rejection once `ms` have passed. The promise itself is not cancelled (an
 * RPC call cannot be); its own later rejection is swallowed.
 */
function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  promise.catch(() => {});
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not answer within ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/**
 * Publishes events of one school to its hub, then marks them published in the outbox of
 * `shard` (the school's). Each call takes a fresh stub (`hubFor`): a stub that threw once
 * stays broken.
 *
 * @param timed wraps the D1 round trip (a request's `RequestContext.db`); identity by default.
 * @param timeoutMs abandon the hub call after this many ms (the sweep's); none by default (a
 *   course write waits for its hub, API.md § "POST /v3/courses").
 * @returns true when the hub acknowledged them; false when the hub could not be reached or
 *   did not answer in time (the rows stay unpublished for the sweep; the failure is logged,
 *   never thrown).
 */
export async function publishEvents(
  env: Env,
  shard: D1Database,
  schoolId: string,
  events: SchoolEvent[],
  timed: D1Timer = untimed,
  timeoutMs?: number,
): Promise<boolean> {
  if (events.length === 0) return true;
  try {
    const call = hubFor(env, schoolId).publish(events);
    await (timeoutMs === undefined ? call : withTimeout(call, timeoutMs, `the hub of ${schoolId}`));
  } catch (err) {
    logPublishFailure({ schoolId, events: events.length, ...describeError(err) });
    return false;
  }
  await timed(() =>
    shard
      .prepare("UPDATE outbox SET published_at = ? WHERE event_id IN (SELECT value FROM json_each(?))")
      .bind(Date.now(), JSON.stringify(events.map((e) => e.id)))
      .run(),
  );
  return true;
}

/**
 * The schools with outbox rows unpublished since `cutoff` or before, the oldest such row
 * first: a loose scan of the partial index of unpublished rows (one seek per school, at
 * most `scan` schools), so that its cost is the number of schools, not of rows.
 */
async function schoolsDue(primary: D1Database, cutoff: number, limits: SweepLimits): Promise<string[]> {
  const { results } = await primary
    .prepare(
      `WITH RECURSIVE pending(school_id) AS (
         SELECT (SELECT min(school_id) FROM outbox INDEXED BY outbox_unpublished_school_idx WHERE published_at IS NULL)
         UNION ALL
         SELECT (SELECT min(o.school_id) FROM outbox AS o INDEXED BY outbox_unpublished_school_idx
                 WHERE o.published_at IS NULL AND o.school_id > pending.school_id)
         FROM pending WHERE pending.school_id IS NOT NULL LIMIT ?1
       ), oldest AS (
         SELECT school_id, (SELECT min(o.created_at) FROM outbox AS o INDEXED BY outbox_unpublished_school_idx
                            WHERE o.published_at IS NULL AND o.school_id = pending.school_id) AS created_at
         FROM pending WHERE school_id IS NOT NULL
       )
       SELECT school_id FROM oldest WHERE created_at <= ?2 ORDER BY created_at, school_id LIMIT ?3`,
    )
    .bind(limits.scan, cutoff, limits.schools)
    .all<{ school_id: string }>();
  return results.map((r) => r.school_id);
}

/**
 * Re-publishes one school's due rows, oldest first, `batch` at a time, until none is left,
 * its hub fails or the sweep's `deadline` (ms since epoch) passes.
 *
 * @returns rows re-published and rows whose publish failed.
 */
async function sweepSchool(env: Env, primary: D1Database, schoolId: string, cutoff: number, deadline: number, limits: SweepLimits) {
  let republished = 0;
  for (;;) {
    const { results } = await primary
      .prepare(
        "SELECT payload FROM outbox INDEXED BY outbox_unpublished_school_idx WHERE published_at IS NULL AND school_id = ? AND created_at <= ? ORDER BY created_at, event_id LIMIT ?",
      )
      .bind(schoolId, cutoff, limits.batch)
      .all<{ payload: string }>();
    const events = results.map((r) => JSON.parse(r.payload) as SchoolEvent);
    if (!(await publishEvents(env, primary, schoolId, events, untimed, limits.publishTimeoutMs))) return { republished, failed: events.length };
    republished += events.length;
    if (events.length < limits.batch || Date.now() >= deadline) return { republished, failed: 0 };
  }
}

/**
 * The sweep of one shard's outbox, fair per school: it re-publishes outbox rows older than
 * 30 s that are not marked published, school by school — the schools with the oldest such
 * rows first, up to `concurrency` hubs at a time, each call with its timeout — so that a
 * failing or slow hub delays only its own school's events; then it prunes rows published
 * more than 7 days ago. Reads on the primary (a replica may not hold the newest unpublished
 * rows yet).
 *
 * @param now the sweep's instant (ms since epoch); rows created up to 30 s before it are due.
 * @param limits overrides of `SweepLimits` (tests).
 * @returns counts of this sweep; a hub's failure is counted (and logged), never thrown.
 * @throws the shard's D1 errors (its schools wait for the next sweep).
 */
async function sweepShard(env: Env, shard: D1Database, now = Date.now(), limits: Partial<SweepLimits> = {}): Promise<SweepResult> {
  const bounds = { ...SWEEP_LIMITS, ...limits };
  const deadline = Date.now() + bounds.budgetMs;
  const cutoff = now - SWEEP_AFTER_MS;
  const primary = openSession(shard, "write").d1;
  const schools = await schoolsDue(primary, cutoff, bounds);
  const result: SweepResult = { schools: schools.length, republished: 0, failed: 0, pruned: 0 };
  let next = 0;
  const worker = async () => {
    while (next < schools.length && Date.now() < deadline) {
      const schoolId = schools[next++]!;
      try {
        const done = await sweepSchool(env, primary, schoolId, cutoff, deadline, bounds);
        result.republished += done.republished;
        result.failed += done.failed;
      } catch (err) {
        // A D1 error on one school's rows: the others go on; its rows wait for the next sweep.
        logPublishFailure({ schoolId, events: 0, ...describeError(err) });
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(bounds.concurrency, schools.length) }, worker));
  const pruned = await primary
    .prepare("DELETE FROM outbox WHERE published_at IS NOT NULL AND published_at < ?")
    .bind(now - PRUNE_AFTER_MS)
    .run();
  result.pruned = pruned.meta.changes ?? 0;
  return result;
}

/**
 * The cron sweep (docs/architecture.md § The outbox): every shard's outbox at once, each by
 * `sweepShard`, the hub calls shared out between the shards (at least one each), so that a
 * failing or slow shard delays only its own schools.
 *
 * @param now the sweep's instant (ms since epoch).
 * @param limits overrides of `SweepLimits` (tests); `concurrency` is the whole sweep's.
 * @returns the counts of every shard, summed; a shard's failure is logged, never thrown.
 */
export async function sweepOutbox(env: Env, now = Date.now(), limits: Partial<SweepLimits> = {}): Promise<SweepResult> {
  const shards = shardBindings(env);
  const concurrency = Math.max(1, Math.floor((limits.concurrency ?? SWEEP_LIMITS.concurrency) / shards.length));
  const total: SweepResult = { schools: 0, republished: 0, failed: 0, pruned: 0 };
  await Promise.all(
    shards.map(async (binding) => {
      try {
        const r = await sweepShard(env, shardFor(env, binding), now, { ...limits, concurrency });
        for (const k of ["schools", "republished", "failed", "pruned"] as const) total[k] += r[k];
      } catch (err) {
        logPublishFailure({ schoolId: binding, events: 0, ...describeError(err) });
      }
    }),
  );
  return total;
}
