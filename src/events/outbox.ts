/**
 * The transactional outbox (docs/architecture.md § The outbox): a write's events are inserted
 * into D1's `outbox` in the same batch as the write (src/courses/storage.ts); this module hands
 * them to the school's hub and marks them published, in slices cut by bytes and count. The
 * hub's `publish` is idempotent by event id, so the cron sweep may repeat a publish safely; the
 * sweep walks every shard's outbox at once, school by school in the order their rows fell due,
 * within its invocation's budget of D1 queries and calls (src/lib/invocation-budget.ts), and
 * reads stored payloads one byte-bounded slice per hub at a time; a row whose publish failed
 * waits a back-off, so that neither a failing shard, a failing hub nor one refused event holds
 * up any other event.
 */
import { openSession } from "../db/client";
import { shardsOf } from "../db/shards";
import { type D1Timer, untimed } from "../http/context";
import { BOUND_LIST, cutBatches, slices, utf8Bytes } from "../lib/batches";
import { InvocationBudget, PRUNE_ROWS, workersPlan } from "../lib/invocation-budget";
import { describeError, logPublishFailure, logShardSweepFailure } from "../lib/log";
import { Slots } from "../lib/slots";
import { hubFor } from "./hub-client";
import { meteredEnv } from "./metered";
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
 * - `schools`: schools handled per shard, those whose first row fell due earliest first (a
 *   never-failed row falls due 30 s after its write, a failed one when its back-off ends).
 * - `rows`: rows of one school whose ids and sizes are read at once (no payload): the
 *   school's next slices are cut from them.
 * - `batch`, `bytes`: one slice, at most `batch` rows whose JSON array of payloads is at most
 *   `bytes` (UTF-8) — the payloads read at once for one hub and the whole of one `publish`.
 *   A row that failed before is published alone, so that an event the hub refuses fails no
 *   other. With `concurrency` slices in flight, a sweep holds at most `concurrency` × `bytes`
 *   of stored bodies (5 MB).
 * - `concurrency`: hubs published to at once. A Worker invocation may have 6 connections
 *   open (Cloudflare Workers limits, "Simultaneous open connections"); 5, so that a slot is
 *   left for D1 and no call waits for a slot with its timeout already running.
 * - `publishTimeoutMs`: one `publish` call; past it the school counts as failed this sweep
 *   (the call is abandoned, its rows stay unpublished: publish is idempotent by event id).
 * - `budgetMs`: no slice starts after this much of the sweep (well within the minute
 *   between two crons); the invocation's budget of queries and calls stops it as well.
 */
export interface SweepLimits {
  schools: number;
  rows: number;
  batch: number;
  bytes: number;
  concurrency: number;
  publishTimeoutMs: number;
  budgetMs: number;
}

const SWEEP_LIMITS: SweepLimits = {
  schools: 50,
  rows: 1_000,
  batch: 100,
  bytes: BOUND_LIST.bytes,
  concurrency: 5,
  publishTimeoutMs: 5_000,
  budgetMs: 25_000,
};

/**
 * The most one slice sends: the read of its payloads, the mark of what the hub acknowledged,
 * the back-off of what it did not (one statement each: a slice's ids fit one bound list),
 * and one hub call.
 */
const SLICE_QUERIES = 3;

/** What one sweep did: schools handled, rows re-published, rows left unpublished (backed off) by a failed or slow hub. */
export interface SweepResult {
  schools: number;
  republished: number;
  failed: number;
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
 * Publishes events of one school to its hub, in order, in slices cut lazily by `slices`
 * (1,000 events and 1,000,000 bytes of JSON: one call never carries more than the hub stores
 * in one step, and only the slice being sent is encoded), each slice then marked published in
 * the outbox of `shard` (the school's). Each call takes a fresh stub (`hubFor`): a stub that
 * threw once stays broken. Stops at the first slice that fails.
 *
 * @param timed wraps the D1 round trip (a request's `RequestContext.db`); identity by default.
 * @param timeoutMs abandon a hub call after this many ms (the sweep's); none by default (a
 *   course write waits for its hub, docs/reference.md § "POST /v3/courses — create a course · PATCH /v3/courses/{id} — change one").
 * @param bytesOf an event's JSON bytes, when the caller knows them (the sweep: its stored
 *   payload's); encoded and measured one at a time otherwise.
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
  bytesOf: (event: SchoolEvent) => number = (e) => utf8Bytes(JSON.stringify(e)),
): Promise<number> {
  let done = 0;
  try {
    const primary = openSession(shard, "write").d1;
    for (const slice of slices(events, BOUND_LIST, bytesOf)) {
      const call = hubFor(env, schoolId).publish(slice);
      await (timeoutMs === undefined ? call : withTimeout(call, timeoutMs, `the hub of ${schoolId}`));
      // The slice's ids are as many as its events and far fewer bytes: one bound value. The
      // payload goes in the same statement: a published row is kept (7 days) only as a mark,
      // so a school's writes cannot fill its shard with published events.
      const ids = JSON.stringify(slice.map((e) => e.id));
      await timed(() =>
        primary.prepare("UPDATE outbox SET published_at = ?, payload = '' WHERE event_id IN (SELECT value FROM json_each(?))").bind(Date.now(), ids).run(),
      );
      done += slice.length;
    }
  } catch (err) {
    logPublishFailure({ schoolId, events: events.length - done, ...describeError(err) });
  }
  return done;
}

/**
 * The schools with outbox rows due at `now` (ms), at most `limits.schools`, in the order their
 * first row fell due: a never-failed row written at `cutoff` or before falls due
 * `SWEEP_AFTER_MS` after its write, a failed one when its back-off ended; so a school whose
 * back-off ended is never passed by schools whose rows fell due after it. Read from
 * `outbox_schools` (one row per school with unpublished rows, kept by the outbox's triggers),
 * each list through its own index and bound, merged here: the cost is the schools taken,
 * never the schools that back off nor their rows.
 */
async function schoolsDue(primary: D1Database, now: number, cutoff: number, limits: SweepLimits): Promise<string[]> {
  const [fresh, retried] = await primary.batch<{ school_id: string; due: number }>([
    primary
      .prepare(
        "SELECT school_id, fresh_at + ? AS due FROM outbox_schools INDEXED BY outbox_schools_fresh_idx WHERE fresh_at <= ? ORDER BY fresh_at, school_id LIMIT ?",
      )
      .bind(SWEEP_AFTER_MS, cutoff, limits.schools),
    primary
      .prepare(
        "SELECT school_id, retry_at AS due FROM outbox_schools INDEXED BY outbox_schools_retry_idx WHERE retry_at <= ? ORDER BY retry_at, school_id LIMIT ?",
      )
      .bind(now, limits.schools),
  ]);
  const due = new Map<string, number>();
  for (const r of [...fresh!.results, ...retried!.results]) due.set(r.school_id, Math.min(r.due, due.get(r.school_id) ?? r.due));
  return [...due]
    .sort(([a, x], [b, y]) => x - y || (a < b ? -1 : a > b ? 1 : 0))
    .slice(0, limits.schools)
    .map(([school]) => school);
}

/** A due row as the sweep first reads it: no payload, only its size. */
interface DueRow {
  event_id: string;
  attempts: number;
  bytes: number;
}

/**
 * The slices of `rows` (in their order): the never-failed rows, cut by `slices` within
 * `limits.batch` and `limits.bytes`; then each row that failed before, alone.
 */
function* slicesOf(rows: DueRow[], limits: SweepLimits): Generator<DueRow[]> {
  const retried = rows.findIndex((r) => r.attempts > 0);
  const fresh = retried === -1 ? rows : rows.slice(0, retried);
  yield* slices(fresh, { count: limits.batch, bytes: limits.bytes }, (r) => r.bytes);
  if (retried !== -1) for (const r of rows.slice(retried)) yield [r];
}

/** What a school's sweep did: rows re-published, rows whose publish failed, and whether the invocation's budget stopped it. */
interface SchoolSweep {
  republished: number;
  failed: number;
  spent: boolean;
}

/**
 * Re-publishes one school's due rows at `now` (ms), never-failed rows first (oldest first by
 * the Worker's clock at their write, a write's rows in the order it wrote them), then rows
 * that failed before, each alone, by retry time: reads `rows` ids and sizes, then slice by
 * slice the payloads (`bytes` at most), publishes and marks them; until none is left, the hub
 * fails before acknowledging any, the sweep's `deadline` (ms since epoch) passes or `budget`
 * has no room for another slice. The rows of a failed publish back off (`attempts` + 1,
 * `retry_at`), so that the school's other rows go first; once the hub acknowledged a publish
 * this sweep, a refused row does not stop the school's next rows.
 */
async function sweepSchool(
  env: Env,
  shard: D1Database,
  schoolId: string,
  now: number,
  cutoff: number,
  deadline: number,
  limits: SweepLimits,
  budget: InvocationBudget,
): Promise<SchoolSweep> {
  const out: SchoolSweep = { republished: 0, failed: 0, spent: false };
  for (;;) {
    // A session of its own per round: it starts on the primary, so the marks of the round
    // before (made through publishEvents' session) are seen.
    const primary = openSession(shard, "write").d1;
    // Room for the read and the slice it leads to: no read is made that no slice can follow.
    const read = budget.reserve(1 + SLICE_QUERIES, 1);
    out.spent = read === null;
    if (!read) return out;
    if (Date.now() >= deadline) {
      read.release();
      return out;
    }
    let rows: DueRow[];
    try {
      ({ results: rows } = await primary
        .prepare(
          `SELECT event_id, attempts, octet_length(payload) AS bytes FROM outbox INDEXED BY outbox_unpublished_school_idx
           WHERE published_at IS NULL AND school_id = ? AND retry_at <= ? AND created_at <= ? ORDER BY retry_at, created_at, rowid LIMIT ?`,
        )
        .bind(schoolId, now, cutoff, limits.rows)
        .all<DueRow>());
    } finally {
      read.release();
    }
    for (const slice of slicesOf(rows, limits)) {
      const held = budget.reserve(SLICE_QUERIES, 1);
      out.spent = held === null;
      if (!held || Date.now() >= deadline) {
        held?.release();
        return out;
      }
      try {
        const failed = out.failed;
        await sweepSlice(env, shard, primary, schoolId, slice, now, limits, out);
        // A hub that acknowledged nothing this sweep is left alone; one that did refused only
        // these rows (now backing off): the school's next rows go on.
        if (out.failed > failed && out.republished === 0) return out;
      } finally {
        held.release();
      }
    }
    if (rows.length < limits.rows) return out;
  }
}

/**
 * One slice: reads its payloads (rows a write's own publish marked meanwhile are left out),
 * publishes them and backs off those the hub did not acknowledge; adds to `out`.
 */
async function sweepSlice(
  env: Env,
  shard: D1Database,
  primary: D1Database,
  schoolId: string,
  slice: DueRow[],
  now: number,
  limits: SweepLimits,
  out: SchoolSweep,
) {
  const ids = JSON.stringify(slice.map((r) => r.event_id));
  // `+published_at`: each id a seek of the primary key, never a walk of outbox_pending_idx's unpublished rows.
  const { results } = await primary
    .prepare("SELECT event_id, payload FROM outbox WHERE event_id IN (SELECT value FROM json_each(?)) AND +published_at IS NULL")
    .bind(ids)
    .all<{ event_id: string; payload: string }>();
  const payloads = new Map(results.map((r) => [r.event_id, r.payload]));
  const rows = slice.filter((r) => payloads.has(r.event_id));
  // Each event's size is its stored payload's, measured by D1: nothing is encoded again to cut it.
  const bytes = new Map<SchoolEvent, number>();
  const events = rows.map((r) => {
    const event = JSON.parse(payloads.get(r.event_id)!) as SchoolEvent;
    bytes.set(event, r.bytes);
    return event;
  });
  const done = await publishEvents(env, shard, schoolId, events, untimed, limits.publishTimeoutMs, (e) => bytes.get(e)!);
  out.republished += done;
  if (done === rows.length) return;
  out.failed += rows.length - done;
  // A slice's ids are one bound list (`cutBatches`' bounds are wider than a slice's).
  for (const batch of cutBatches(rows.slice(done).map((r) => r.event_id))) {
    await primary
      .prepare(
        `UPDATE outbox SET attempts = attempts + 1, retry_at = ?1 + min(?2, ?3 << min(attempts, 30))
         WHERE published_at IS NULL AND event_id IN (SELECT value FROM json_each(?4))`,
      )
      .bind(now, RETRY_MAX_MS, RETRY_BASE_MS, batch.json)
      .run();
  }
}

/**
 * The sweep of one shard's outbox (docs/architecture.md § Invariants: the outbox), fair per
 * school: it re-publishes outbox rows older than 30 s that are not marked published and not
 * backing off, school by school — in the order their rows fell due (`schoolsDue`), up to
 * `concurrency` hubs at a time, each call with its timeout — so that a failing or slow hub
 * delays only its own school's events, and a row whose publish failed (retried after 1 min,
 * doubling up to 1 h) only itself. Reads on the primary (a replica may not hold the newest
 * unpublished rows yet).
 *
 * @throws the shard's D1 errors (its schools wait for the next sweep).
 */
async function sweepShard(env: Env, shard: D1Database, slots: Slots, now: number, bounds: SweepLimits, budget: InvocationBudget): Promise<SweepResult> {
  const deadline = Date.now() + bounds.budgetMs;
  const cutoff = now - SWEEP_AFTER_MS;
  const result: SweepResult = { schools: 0, republished: 0, failed: 0 };
  const choose = budget.reserve(2, 0);
  if (!choose) return result;
  let schools: string[];
  try {
    schools = await schoolsDue(openSession(shard, "write").d1, now, cutoff, bounds);
  } finally {
    choose.release();
  }
  result.schools = schools.length;
  let next = 0;
  let spent = false;
  const worker = async () => {
    while (next < schools.length && Date.now() < deadline && !spent) {
      const schoolId = schools[next++]!;
      try {
        const done = await slots.run(() => sweepSchool(env, shard, schoolId, now, cutoff, deadline, bounds, budget));
        result.republished += done.republished;
        result.failed += done.failed;
        // The budget is spent: the schools not reached keep their place for the next run.
        spent ||= done.spent;
      } catch (err) {
        // A D1 error on one school's rows: the others go on; its rows wait for the next sweep.
        logPublishFailure({ schoolId, events: 0, ...describeError(err) });
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(bounds.concurrency, schools.length) }, worker));
  return result;
}

/**
 * The cron sweep (docs/architecture.md § The outbox): every shard's outbox at once, each by
 * `sweepShard`; the whole sweep publishes to at most `concurrency` hubs at a time, the
 * shards taking turns for them (first come, first served), so that a failing or slow shard
 * delays only its own schools. It stops starting work once `budget` has no room for it, so
 * the invocation stays within its plan's limits of D1 queries and subrequests.
 *
 * @param now the sweep's instant (ms since epoch).
 * @param limits overrides of `SweepLimits` (tests); `concurrency` is the whole sweep's.
 * @param budget the invocation's budget, counting through `env` (`meteredEnv`, the cron's);
 *   by default a budget of `WORKERS_PLAN` of its own, with `env` metered on it.
 * @returns the counts of every shard, summed; a shard's failure is logged, never thrown.
 */
export async function sweepOutbox(env: Env, now = Date.now(), limits: Partial<SweepLimits> = {}, budget?: InvocationBudget): Promise<SweepResult> {
  const own = budget ?? InvocationBudget.of(workersPlan(env.WORKERS_PLAN));
  const metered = budget ? env : meteredEnv(env, own);
  const bounds = { ...SWEEP_LIMITS, ...limits };
  const slots = new Slots(bounds.concurrency);
  const total: SweepResult = { schools: 0, republished: 0, failed: 0 };
  await Promise.all(
    shardsOf(metered).map(async ({ binding, d1 }) => {
      try {
        const r = await sweepShard(metered, d1, slots, now, bounds, own);
        for (const k of ["schools", "republished", "failed"] as const) total[k] += r[k];
      } catch (err) {
        // The shard's D1 failed: its schools wait for the next sweep; the others go on.
        total.failed += 1;
        logShardSweepFailure({ shard: binding, ...describeError(err) });
      }
    }),
  );
  return total;
}

/**
 * Deletes outbox rows published more than 7 days ago (the cron, before its sweep), at most
 * `PRUNE_ROWS` in one statement through `outbox_pending_idx`; the next run goes on.
 *
 * @returns the number of rows deleted.
 */
export async function pruneOutbox(shard: D1Database, now = Date.now()): Promise<number> {
  const r = await shard
    .prepare(
      "DELETE FROM outbox WHERE rowid IN (SELECT rowid FROM outbox INDEXED BY outbox_pending_idx WHERE published_at IS NOT NULL AND published_at < ? LIMIT ?)",
    )
    .bind(now - PRUNE_AFTER_MS, PRUNE_ROWS)
    .run();
  return r.meta.changes ?? 0;
}
