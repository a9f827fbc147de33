/**
 * Back-pressure (docs/architecture.md § Bounded work and storage; docs/reference.md § "Event
 * delivery"): a courier's queue holds at most 1,000 deliveries; past it the hub keeps the
 * rest in its log and hands it over as the queue drains, when the courier asks. A disable
 * ends the queue `skipped` in bounded steps behind a durable mark. A throttled registration
 * (`maxPerSecond: 1`) and a burst longer than the bound, on the virtual clock, with resets of
 * the courier and of the hub between steps: nothing is lost and no step exceeds its bound.
 */
import { runDurableObjectAlarm } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it } from "vitest";
import { hubFor } from "../../src/events/hub-client";
import type { SchoolEvent } from "../../src/events/types";
import { courierFor } from "../../src/webhooks/rpc";
import { callJson } from "../support/helpers";
import { drainByAlarms, resetObject } from "../support/webhooks/alarms";
import { courierStub, courseEvent, hubStub, inCourier, inHub, newSchool, queuedCount, register } from "../support/webhooks/harness";
import { SimulatedPlatform } from "../support/webhooks/platform-sim";

/** The contract's bound on a courier's queue (deliveries, and bytes of their bodies). */
const QUEUE_BOUND = 1_000;
const QUEUE_BYTES = 16_000_000;
/** The largest event the platform stores (2 MB): the byte bound may be passed by one. */
const ONE_EVENT_BYTES = 2_000_000;
/** A courier whose queue was full is handed the rest by its ask, not by the hub's 60 s fallback. */
const FULL_FALLBACK_MS = 60_000;
/** A burst longer than the bound. */
const BURST = 1_100;

let sim: SimulatedPlatform | undefined;
afterEach(() => {
  sim?.restore();
  sim = undefined;
});

/** A school with one throttled registration and BURST events published to it. */
async function throttledBurst(label: string, host: string): Promise<{ schoolId: string; key: string; hookId: string; events: SchoolEvent[] }> {
  sim = SimulatedPlatform.virtual().install();
  sim.delay = [1, 1];
  const { schoolId, key } = await newSchool(label);
  const hook = await register(key, `https://${host}/in`, { maxPerSecond: 1 });
  const events = Array.from({ length: BURST }, (_, i) => courseEvent(schoolId, "course.updated", i));
  for (let i = 0; i < BURST; i += 100) await hubFor(env, schoolId).publish(events.slice(i, i + 100));
  await sim.advance(1_000);
  return { schoolId, key, hookId: hook.id, events };
}

/** The hub's acknowledged cursor of `hookId` and the last position addressed to it. */
async function hubCursor(schoolId: string, hookId: string): Promise<{ acked: number; last: number }> {
  return inHub(schoolId, (_h, state) =>
    state.storage.sql
      .exec<{ acked: number; last: number }>(
        `SELECT acked_seq AS acked, (SELECT MAX(seq) FROM targets WHERE webhook_id = ?1) AS last FROM webhooks WHERE id = ?1`,
        hookId,
      )
      .one(),
  );
}

/** Each event's log entries in the courier, by status: `{ eventId: { succeeded: n, skipped: n, … } }`. */
async function entries(hookId: string): Promise<Map<string, Record<string, number>>> {
  const rows = await inCourier(hookId, (_c, state) =>
    state.storage.sql
      .exec<{ event_id: string; status: string; n: number }>(`SELECT event_id, status, COUNT(*) AS n FROM log GROUP BY event_id, status`)
      .toArray(),
  );
  const byEvent = new Map<string, Record<string, number>>();
  for (const r of rows) byEvent.set(r.event_id, { ...byEvent.get(r.event_id), [r.status]: r.n });
  return byEvent;
}

describe("a courier's queue has a bound", () => {
  it("a throttled registration and a burst past the bound: the hub keeps the rest and hands it over as the queue drains, nothing lost, across resets", async () => {
    const host = "bp-throttled.example.com";
    const { schoolId, hookId, events } = await throttledBurst("bpq", host);

    // The courier took up to the bound (what it queued and what it delivered); the hub holds the rest.
    const sent = sim!.to(host).length;
    expect(sent).toBeLessThanOrEqual(2);
    const queued = await queuedCount(hookId);
    expect(queued).toBeLessThanOrEqual(QUEUE_BOUND);
    expect(queued).toBeGreaterThanOrEqual(QUEUE_BOUND - sent);
    const start = await hubCursor(schoolId, hookId);
    expect(start.last).toBe(BURST);
    const succeeded = [...(await entries(hookId)).values()].filter((e) => e.succeeded === 1).length;
    expect(start.acked).toBe(queued + succeeded);
    expect(start.last - start.acked).toBeGreaterThanOrEqual(BURST - QUEUE_BOUND - sent);

    let most = 0;
    for (let round = 1; round <= 60 && sim!.eventIds(host).size < BURST; round++) {
      // Resets between steps: the courier, then the hub, each losing its memory and timers.
      if (round % 6 === 2) await resetObject(sim!, courierStub(hookId));
      if (round % 6 === 4) await resetObject(sim!, hubStub(schoolId));
      await drainByAlarms(sim!, [hubStub(schoolId), courierStub(hookId)], 30_000);
      const queued = await queuedCount(hookId);
      most = Math.max(most, queued);
      expect(queued, `round ${round}`).toBeLessThanOrEqual(QUEUE_BOUND);
    }
    // The hub handed the rest over once the queue had drained: all delivered, each once.
    expect(most).toBeLessThanOrEqual(QUEUE_BOUND);
    expect(sim!.eventIds(host)).toEqual(new Set(events.map((e) => e.id)));
    const log = await entries(hookId);
    for (const e of events) expect(log.get(e.id), e.id).toEqual({ succeeded: 1 });
    const end = await hubCursor(schoolId, hookId);
    expect(end.acked).toBe(end.last);
  }, 120_000);

  it("a disable ends the queue skipped in bounded steps behind a durable mark, across a reset; the rest the hub held ends skipped too, each event once", async () => {
    const host = "bp-disable.example.com";
    const { schoolId, key, hookId, events } = await throttledBurst("bpd", host);
    await sim!.advance(10_000);
    // The last attempt's answer (1 ms) and its record (5 ms) come before the PATCH; the next
    // attempt is a second away (the throttle).
    await sim!.advance(10);
    const before = sim!.mark();

    const patched = await callJson(`/v3/webhooks/${hookId}`, { method: "PATCH", key, json: { enabled: false } });
    expect(patched.status).toBe(200);
    // The PATCH's step ended one bounded chunk, not the queue: the rest waits behind the mark.
    const afterPatch = await inCourier(hookId, (_c, state) => ({
      skipped: state.storage.sql.exec<{ n: number }>(`SELECT COUNT(*) AS n FROM log WHERE status = 'skipped'`).one().n,
      queued: state.storage.sql.exec<{ n: number }>(`SELECT COUNT(*) AS n FROM queue`).one().n,
      mark: state.storage.kv.get("skipping"),
    }));
    expect(afterPatch.skipped).toBeGreaterThan(0);
    expect(afterPatch.skipped).toBeLessThanOrEqual(500);
    expect(afterPatch.queued).toBeGreaterThan(0);
    expect(afterPatch.mark).toEqual(expect.any(Number));

    // The mark survives a reset: the new instance's alarm goes on, a bounded chunk per run.
    const alarm = await resetObject(sim!, courierStub(hookId));
    expect(alarm).not.toBeNull();
    let skipped = afterPatch.skipped;
    for (let run = 0; run < 10; run++) {
      await runDurableObjectAlarm(courierFor(env, hookId));
      await sim!.advance(0);
      const now = await inCourier(
        hookId,
        (_c, state) => state.storage.sql.exec<{ n: number }>(`SELECT COUNT(*) AS n FROM log WHERE status = 'skipped'`).one().n,
      );
      expect(now - skipped, `alarm run ${run}`).toBeLessThanOrEqual(500);
      skipped = now;
      if ((await queuedCount(hookId)) === 0) break;
    }
    expect(await queuedCount(hookId)).toBe(0);
    expect(await inCourier(hookId, (_c, state) => state.storage.kv.get("skipping") ?? null)).toBeNull();

    // What the hub held is handed over (the courier asks once drained), and logged skipped.
    await resetObject(sim!, hubStub(schoolId));
    await drainByAlarms(sim!, [hubStub(schoolId), courierStub(hookId)], 120_000);
    const end = await hubCursor(schoolId, hookId);
    expect(end.acked).toBe(end.last);
    // Nothing started after the PATCH's 200; every event delivered or skipped, exactly once.
    expect(sim!.log.filter((r) => r.host === host && r.seq > before)).toEqual([]);
    const log = await entries(hookId);
    const delivered = sim!.eventIds(host);
    for (const e of events) expect(log.get(e.id), e.id).toEqual(delivered.has(e.id) ? { succeeded: 1 } : { skipped: 1 });
  }, 120_000);

  it("a courier whose queue was full asks for the rest once drained to half: handed over long before the hub's fallback", async () => {
    sim = SimulatedPlatform.virtual().install();
    // 5 slots at 50 ms: 100 deliveries a second, slower than the hand-overs fill the queue.
    sim.delay = [50, 50];
    const host = "bp-ask.example.com";
    const { schoolId, key } = await newSchool("bpask");
    const hook = await register(key, `https://${host}/in`);
    // Each event of its own course: none is held, every one is sendable.
    const events = Array.from({ length: BURST }, (_, i) => courseEvent(schoolId, "course.updated", i));
    for (let i = 0; i < BURST; i += 100) await hubFor(env, schoolId).publish(events.slice(i, i + 100));
    await sim.advance(1_000);
    expect(await inCourier(hook.id, (_c, state) => state.storage.kv.get("full")), "the queue reached its bound").toBe(true);
    const start = await hubCursor(schoolId, hook.id);
    expect(start.last - start.acked, "the hub kept what the bound left out").toBeGreaterThan(0);

    // Timers only (no alarm): the ask, made as the queue drains to half (about 5 s), brings the rest.
    await sim.advance(FULL_FALLBACK_MS / 2);
    expect(sim.eventIds(host).size).toBe(BURST);
    const end = await hubCursor(schoolId, hook.id);
    expect(end.acked).toBe(end.last);
  }, 120_000);

  it("events of the largest kind: the queue takes up to 16 MB of bodies, the hub keeps the rest", async () => {
    sim = SimulatedPlatform.virtual().install();
    sim.delay = [1, 1];
    const host = "bp-bytes.example.com";
    const { schoolId, key } = await newSchool("bpbytes");
    const hook = await register(key, `https://${host}/in`, { maxPerSecond: 1 });
    // 300 events of about 80 KB (2,000 group ids each), each of its own course: 24 MB, 300 rows.
    const events = Array.from({ length: 300 }, (_, i) => {
      const e = courseEvent(schoolId, "course.updated", i);
      (e.data as { course: { groupIds: string[] } }).course.groupIds = Array.from({ length: 2_000 }, (_, g) => `grp_${i}_${g}_`.padEnd(36, "x"));
      return e;
    });
    const eventBytes = new TextEncoder().encode(JSON.stringify(events[0])).length;
    expect(eventBytes).toBeGreaterThan(75_000);
    for (let i = 0; i < events.length; i += 10) await hubFor(env, schoolId).publish(events.slice(i, i + 10));
    await sim.advance(5_000);

    const queue = await inCourier(hook.id, (_c, state) =>
      state.storage.sql.exec<{ rows: number; bytes: number }>(`SELECT COUNT(*) AS rows, TOTAL(bytes) AS bytes FROM queue`).one(),
    );
    const sent = sim.to(host).length;
    expect(queue.bytes).toBeLessThanOrEqual(QUEUE_BYTES + ONE_EVENT_BYTES);
    expect(queue.bytes).toBeGreaterThanOrEqual(QUEUE_BYTES - ONE_EVENT_BYTES - sent * eventBytes);
    expect(queue.rows).toBeLessThan(QUEUE_BOUND);
    const cursor = await hubCursor(schoolId, hook.id);
    expect(cursor.last - cursor.acked, "events the byte bound left in the hub").toBeGreaterThanOrEqual(
      events.length - sent - Math.ceil((QUEUE_BYTES + ONE_EVENT_BYTES) / eventBytes),
    );
  }, 120_000);
});
