/**
 * The transactional outbox (docs/architecture.md): a write's events are inserted into D1's `outbox` in
 * the same batch as the write (src/courses/storage.ts); this module hands them to the
 * school's hub and marks them published, in batches cut by bytes and count. The hub's
 * `publish` is idempotent by event id, so the cron sweep may repeat a publish safely; the
 * sweep walks every shard's outbox at once and each shard's school by school, fairly, and a
 * row whose publish failed waits a back-off, so that neither a failing shard, a failing hub
 * nor one refused event holds up any other event.
 */
import { openSession } from "../db/client";
import { shardsOf } from "../db/shards";
import { type D1Timer, untimed } from "../http/context";
import { cutBatches } from "../lib/batches";
import { describeError, logPublishFailure, logShardSweepFailure } from "../lib/log";
import { Slots } from "../lib/slots";
import { hubFor } from "./hub-client";
import type { SchoolEvent } from "./types";

/** Outbox rows unpublished for longer than this are re-published by the sweep (ms). */
export const SWEEP_AFTER_MS = 30_000;
/** Published rows older than this are pruned (ms): 7 days. */
const PRUNE_AFTER_MS = 7 * 24 * 60 * 60 * 1000;
/**
 * After its n-th failed publish a row waits RETRY_BASE_MS × 2^(n-1), at most RETRY_MAX_MS
 * (a choice: the cron runs every minute; an hour bounds the delay once the hub is back).
 */
const RETRY_BASE_MS = 60_000;
const RETRY_MAX_MS = 3_600_000;

/**
 * The bounds of one sweep (the cron runs it every minute, wrangler.toml).
 *
 * - `schools`: schools handled per shard, those with the oldest due row first.
 * - `batch`: rows of one school read at once (their publish is cut further by bytes); a
 *   school whose batch was full and acknowledged goes on with its next one while the budget
 *   lasts. A row that failed before is published alone, so that an event the hub refuses
 *   fails no other.
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
  batch: number;
  concurrency: number;
  publishTimeoutMs: number;
  budgetMs: number;
}

const SWEEP_LIMITS: SweepLimits = { schools: 50, batch: 100, concurrency: 5, publishTimeoutMs: 5_000, budgetMs: 25_000 };

/** What one sweep did: schools handled, rows re-published, rows left unpublished (backed off) by a failed or slow hub, rows pruned. */
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
 * Publishes events of one school to its hub, in order, in batches cut by `cutBatches`
 * (count and bytes: one call never carries more than the hub stores in one step), each
 * batch then marked published in the outbox of `shard` (the school's). Each call takes a fresh stub (`hubFor`): a
 * stub that threw once stays broken. Stops at the first batch that fails.
 *
 * @param timed wraps the D1 round trip (a request's `RequestContext.db`); identity by default.
 * @param timeoutMs abandon a hub call after this many ms (the sweep's); none by default (a
 *   course write waits for its hub, docs/reference.md § "POST /v3/courses — create a course · PATCH /v3/courses/{id} — change one").
 * @returns how many of `events`, from the first, the hub acknowledged and the outbox marked;
 *   fewer than all when the hub could not be reached, did not answer in time or the mark
 *   failed (those rows stay unpublished for the sweep; the failure is logged, never thrown).
 */
export async function publishEvents(
  env: Env,
  shard: D1Database,
  schoolId: string,
  events: SchoolEvent[],
  timed: D1Timer = untimed,
  timeoutMs?: number,
): Promise<number> {
  let done = 0;
  try {
    const primary = openSession(shard, "write").d1;
    for (const batch of cutBatches(events)) {
      const call = hubFor(env, schoolId).publish(batch.items);
      await (timeoutMs === undefined ? call : withTimeout(call, timeoutMs, `the hub of ${schoolId}`));
      // The batch's ids are as many as its events and far fewer bytes: one bound value. The
      // payload goes in the same statement: a published row is kept (7 days) only as a mark,
      // so a school's writes cannot fill its shard with published events (issue 38, item 16).
      const ids = JSON.stringify(batch.items.map((e) => e.id));
      await timed(() =>
        primary.prepare("UPDATE outbox SET published_at = ?, payload = '' WHERE event_id IN (SELECT value FROM json_each(?))").bind(Date.now(), ids).run(),
      );
      done += batch.items.length;
    }
  } catch (err) {
    logPublishFailure({ schoolId, events: events.length - done, ...describeError(err) });
  }
  return done;
}

/**
 * The schools with outbox rows due at `now` (ms), at most `limits.schools`: first those with
 * a never-failed row written at `cutoff` or before, oldest first, then those with a failed
 * row whose back-off ended, earliest first. Read from `outbox_schools` (one row per school
 * with unpublished rows, kept by the outbox's triggers), each list through its own index and
 * bound: the cost is the schools taken, never the schools that back off nor their rows.
 */
async function schoolsDue(primary: D1Database, now: number, cutoff: number, limits: SweepLimits): Promise<string[]> {
  const [fresh, retried] = await primary.batch<{ school_id: string }>([
    primary
      .prepare("SELECT school_id FROM outbox_schools INDEXED BY outbox_schools_fresh_idx WHERE fresh_at <= ? ORDER BY fresh_at, school_id LIMIT ?")
      .bind(cutoff, limits.schools),
    primary
      .prepare("SELECT school_id FROM outbox_schools INDEXED BY outbox_schools_retry_idx WHERE retry_at <= ? ORDER BY retry_at, school_id LIMIT ?")
      .bind(now, limits.schools),
  ]);
  const schools = new Set([...fresh!.results, ...retried!.results].map((r) => r.school_id));
  return [...schools].slice(0, limits.schools);
}

/**
 * Re-publishes one school's due rows at `now` (ms), never-failed rows first (oldest first by
 * the Worker's clock at their write, a write's rows in the order it wrote them; `batch` at a
 * time), then rows that failed before, each alone, by retry time, until none is left, the hub fails before acknowledging any or the sweep's `deadline` (ms since epoch)
 * passes. The rows of a failed publish back off (`attempts` + 1, `retry_at`), so that the
 * school's other rows go first; once the hub acknowledged a publish this sweep, a refused
 * row does not stop the school's next rows.
 *
 * @returns rows re-published and rows whose publish failed.
 */
async function sweepSchool(env: Env, shard: D1Database, schoolId: string, now: number, cutoff: number, deadline: number, limits: SweepLimits) {
  let republished = 0;
  let failed = 0;
  for (;;) {
    // A session of its own per round: it starts on the primary, so the marks of the round
    // before (made through publishEvents' session) are seen.
    const primary = openSession(shard, "write").d1;
    const { results } = await primary
      .prepare(
        `SELECT event_id, payload, attempts FROM outbox INDEXED BY outbox_unpublished_school_idx
         WHERE published_at IS NULL AND school_id = ? AND retry_at <= ? AND created_at <= ? ORDER BY retry_at, created_at, rowid LIMIT ?`,
      )
      .bind(schoolId, now, cutoff, limits.batch)
      .all<{ event_id: string; payload: string; attempts: number }>();
    if (results.length === 0) return { republished, failed };
    // The never-failed rows before the first retried one, or that retried row alone when it leads.
    const retried = results.findIndex((r) => r.attempts > 0);
    const rows = results.slice(0, retried === -1 ? results.length : Math.max(retried, 1));
    const done = await publishEvents(
      env,
      shard,
      schoolId,
      rows.map((r) => JSON.parse(r.payload) as SchoolEvent),
      untimed,
      limits.publishTimeoutMs,
    );
    republished += done;
    if (done < rows.length) {
      failed += rows.length - done;
      for (const ids of cutBatches(rows.slice(done).map((r) => r.event_id))) {
        await primary
          .prepare(
            `UPDATE outbox SET attempts = attempts + 1, retry_at = ?1 + min(?2, ?3 << min(attempts, 30))
             WHERE published_at IS NULL AND event_id IN (SELECT value FROM json_each(?4))`,
          )
          .bind(now, RETRY_MAX_MS, RETRY_BASE_MS, ids.json)
          .run();
      }
      // A hub that acknowledged nothing this sweep is left alone; one that did refused only
      // these rows (now backing off): the school's next rows go on.
      if (republished === 0) return { republished, failed };
    }
    if (results.length < limits.batch && rows.length === results.length) return { republished, failed };
    if (Date.now() >= deadline) return { republished, failed };
  }
}

/**
 * The sweep of one shard's outbox (docs/architecture.md § Invariants: the outbox), fair per school: it
 * re-publishes outbox rows older than 30 s that are not marked published and not backing
 * off, school by school — the schools with the first due rows first, up to `concurrency`
 * hubs at a time, each call with its timeout — so that a failing or slow hub delays only
 * its own school's events, and a row whose publish failed (retried after 1 min, doubling up
 * to 1 h) only itself; then it prunes rows
 * published more than 7 days ago. Reads on the primary (a replica may not hold the newest
 * unpublished rows yet).
 *
 * @param now the sweep's instant (ms since epoch); rows created up to 30 s before it are due.
 * @param limits overrides of `SweepLimits` (tests).
 * @returns counts of this sweep; a hub's failure is counted (and logged), never thrown.
 * @throws the shard's D1 errors (its schools wait for the next sweep).
 */
async function sweepShard(env: Env, shard: D1Database, slots: Slots, now = Date.now(), limits: Partial<SweepLimits> = {}): Promise<SweepResult> {
  const bounds = { ...SWEEP_LIMITS, ...limits };
  const deadline = Date.now() + bounds.budgetMs;
  const cutoff = now - SWEEP_AFTER_MS;
  const primary = openSession(shard, "write").d1;
  const schools = await schoolsDue(primary, now, cutoff, bounds);
  const result: SweepResult = { schools: schools.length, republished: 0, failed: 0, pruned: 0 };
  let next = 0;
  const worker = async () => {
    while (next < schools.length && Date.now() < deadline) {
      const schoolId = schools[next++]!;
      try {
        const done = await slots.run(() => sweepSchool(env, shard, schoolId, now, cutoff, deadline, bounds));
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
 * `sweepShard`; the whole sweep publishes to at most `concurrency` hubs at a time, the
 * shards taking turns for them (first come, first served), so that a failing or slow shard
 * delays only its own schools.
 *
 * @param now the sweep's instant (ms since epoch).
 * @param limits overrides of `SweepLimits` (tests); `concurrency` is the whole sweep's.
 * @returns the counts of every shard, summed; a shard's failure is logged, never thrown.
 */
export async function sweepOutbox(env: Env, now = Date.now(), limits: Partial<SweepLimits> = {}): Promise<SweepResult> {
  const slots = new Slots(limits.concurrency ?? SWEEP_LIMITS.concurrency);
  const total: SweepResult = { schools: 0, republished: 0, failed: 0, pruned: 0 };
  await Promise.all(
    shardsOf(env).map(async ({ binding, d1 }) => {
      try {
        const r = await sweepShard(env, d1, slots, now, limits);
        for (const k of ["schools", "republished", "failed", "pruned"] as const) total[k] += r[k];
      } catch (err) {
        // The shard's D1 failed: its schools wait for the next sweep; the others go on.
        total.failed += 1;
        logShardSweepFailure({ shard: binding, ...describeError(err) });
      }
    }),
  );
  return total;
}
