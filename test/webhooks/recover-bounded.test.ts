/**
 * Recover as durable, bounded work (docs/reference.md § "Recover"; docs/architecture.md §
 * Bounded work and storage): the call answers 202 at once with its count (up to 10,000),
 * queues one step's worth, and the courier's alarm queues the rest, 200 events per run, only
 * while its queue is down to half its bound; deliveries waiting for a retry are made due now.
 * A reset in the middle resumes from the position kept in storage; a DELETE during it answers
 * at once and nothing is sent after. On the virtual clock: every alarm is run by the test.
 * The failed events are seeded straight into the courier's storage (its own, seamed) in bulk.
 */
import { runDurableObjectAlarm } from "cloudflare:test";
import { afterEach, describe, expect, it } from "vitest";
import { COUNT_ENDED_SQL, COUNT_WAITING_SQL, RECOVER_QUEUE_SQL } from "../../src/webhooks/courier/recover";
import { callJson } from "../support/helpers";
import { resetObject } from "../support/webhooks/alarms";
import { courierStub, inCourier, newSchool, ownStorage, register } from "../support/webhooks/harness";
import { SimulatedPlatform } from "../support/webhooks/platform-sim";

/** Events a recover step queues at most, and the most the answer counts (the contract's numbers). */
const STEP = 200;
const COUNT_CAP = 10_000;
/** The contract's bound on a courier's queue (deliveries). */
const QUEUE_BOUND = 1_000;

let sim: SimulatedPlatform | undefined;
afterEach(() => {
  sim?.restore();
  sim = undefined;
});

/** A virtual platform, a school and one registration (ordering by course) whose receiver at `host` answers 200. */
async function setUp(label: string, host: string): Promise<{ key: string; hookId: string }> {
  sim = SimulatedPlatform.virtual().install();
  sim.delay = [1, 1];
  sim.on(host, 200);
  const { key } = await newSchool(label);
  const hook = await register(key, `https://${host}/in`);
  return { key, hookId: hook.id };
}

/**
 * `n` events in the courier's copies whose delivery ended failed, accepted `acceptedFrom` +
 * 1, + 2, … ms (the platform's clock, as the courier's retention), over 100 courses, ids `evt_<tag>_<i>`:
 * one statement through the courier's own (seamed) storage.
 */
async function seedFailed(hookId: string, tag: string, n: number, acceptedFrom: number): Promise<void> {
  await inCourier(hookId, (courier) => {
    ownStorage(courier).sql.exec(
      `WITH RECURSIVE k(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM k WHERE i < ?1)
       INSERT INTO events (id, type, body, accepted_at, seq, ended, last_attempt)
       SELECT printf('evt_%s_%06d', ?2, i), 'course.updated',
              json_object('id', printf('evt_%s_%06d', ?2, i), 'type', 'course.updated', 'data', json_object('course', json_object('id', printf('crs_%d', i % 100)))),
              ?3 + i, i, 'failed', 1
         FROM k`,
      n,
      tag,
      acceptedFrom,
    );
  });
}

/** The queue's AUTOINCREMENT counter: rows with a greater id were queued after it was read (`queuedAfter`). */
const counter = (hookId: string) =>
  inCourier(
    hookId,
    (courier) => ownStorage(courier).sql.exec<{ n: number }>(`SELECT COALESCE(MAX(seq), 0) AS n FROM sqlite_sequence WHERE name = 'queue'`).one().n,
  );

/** Queue rows queued after `counter` read `mark` (read before their deliveries' outcomes are recorded: none has left). */
const queuedAfter = (hookId: string, mark: number) =>
  inCourier(hookId, (courier) => ownStorage(courier).sql.exec<{ n: number }>(`SELECT COUNT(*) AS n FROM queue WHERE id > ?`, mark).one().n);

/** Rows in the courier's queue. */
const queueRows = (hookId: string) => inCourier(hookId, (courier) => ownStorage(courier).sql.exec<{ n: number }>(`SELECT COUNT(*) AS n FROM queue`).one().n);

/** How often each event id reached `host`. */
function receipts(host: string): Map<string, number> {
  const seen = new Map<string, number>();
  for (const r of sim!.to(host)) seen.set(r.event.id, (seen.get(r.event.id) ?? 0) + 1);
  return seen;
}

/**
 * Runs the courier's alarm once and lets its sending finish (200 ms of simulated time),
 * asserting the step's bounds: at most STEP deliveries queued, the queue within its bound.
 *
 * @returns whether an alarm was set.
 */
async function alarmStep(hookId: string): Promise<boolean> {
  const before = await counter(hookId);
  const ran = await runDurableObjectAlarm(courierStub(hookId));
  expect(await queuedAfter(hookId, before)).toBeLessThanOrEqual(STEP);
  await sim!.advance(200);
  expect(await queueRows(hookId)).toBeLessThanOrEqual(QUEUE_BOUND);
  return ran;
}

describe("recover is durable, bounded work", () => {
  it("100,000 failed events: 202 at once, counted up to 10,000, one step queued; the alarm goes on 200 per run", async () => {
    const host = "rcvb-big.example.com";
    const { key, hookId } = await setUp("rcvbig", host);
    const since = sim!.clock.now() - 3_600_000;
    await seedFailed(hookId, "big", 100_000, since);

    const res = await callJson(`/v3/webhooks/${hookId}/recover`, { method: "POST", key, json: { since: new Date(since).toISOString() } });
    expect([res.status, res.body.result]).toEqual([202, { queued: COUNT_CAP, exact: false }]);
    // The answering step queued one step's worth, not the window.
    expect(await queuedAfter(hookId, 0)).toBe(STEP);
    const job = await inCourier(hookId, (_c, state) => state.storage.kv.get("recover"));
    expect(job).toBeDefined();

    for (let i = 0; i < 2; i++) expect(await alarmStep(hookId)).toBe(true);
    const sent = receipts(host);
    expect(sent.size).toBe(3 * STEP);
    expect([...sent.values()].every((n) => n === 1)).toBe(true);
  });

  it("a DELETE during it answers 200 at once; after it nothing is sent, across a reset, and the alarm erases the queue in bounded runs", async () => {
    const host = "rcvb-del.example.com";
    const { key, hookId } = await setUp("rcvdel", host);
    const since = sim!.clock.now() - 3_600_000;
    await seedFailed(hookId, "del", 100_000, since);
    const res = await callJson(`/v3/webhooks/${hookId}/recover`, { method: "POST", key, json: { since: new Date(since).toISOString() } });
    expect(res.status).toBe(202);
    for (let i = 0; i < 3; i++) await alarmStep(hookId);
    // A step whose deliveries are in flight when the DELETE comes.
    await runDurableObjectAlarm(courierStub(hookId));
    expect(await queueRows(hookId)).toBeGreaterThan(0);

    const deleted = await callJson(`/v3/webhooks/${hookId}`, { method: "DELETE", key });
    expect(deleted.status).toBe(200);
    const mark = sim!.mark();
    const kv = await inCourier(hookId, (_c, state) => ({ closed: state.storage.kv.get("closed"), recover: state.storage.kv.get("recover") }));
    expect(kv).toEqual({ closed: true, recover: undefined });
    // A new instance with queue rows left reads `closed` first: it only erases.
    expect(await queueRows(hookId)).toBeGreaterThan(0);
    await resetObject(sim!, courierStub(hookId));

    // Drive the courier's alarms until its data is erased: nothing reaches the receiver.
    let runs = 0;
    while (await runDurableObjectAlarm(courierStub(hookId))) {
      await sim!.advance(1_000);
      runs += 1;
      expect(runs).toBeLessThanOrEqual(150);
    }
    expect(sim!.to(host).filter((r) => r.seq > mark)).toEqual([]);
    const left = await inCourier(hookId, (courier) =>
      ownStorage(courier)
        .sql.exec<{ n: number }>(`SELECT (SELECT COUNT(*) FROM queue) + (SELECT COUNT(*) FROM events) + (SELECT COUNT(*) FROM log) AS n`)
        .one(),
    );
    expect(left.n).toBe(0);
  });

  it("every event once, retries made due, no step past its bounds, a second call joined, and a reset in the middle resumes", async () => {
    const host = "rcvb-once.example.com";
    const { key, hookId } = await setUp("rcvonce", host);
    const since = sim!.clock.now() - 3_600_000;
    await seedFailed(hookId, "once", 1_200, since);
    // Three deliveries of the window wait for a retry in an hour; one accepted before it too.
    await inCourier(hookId, (courier) => {
      const sql = ownStorage(courier).sql;
      const later = sim!.clock.now() + 3_600_000;
      for (const [id, accepted] of [
        ["evt_wait_1", since + 10],
        ["evt_wait_2", since + 20],
        ["evt_wait_3", since + 30],
        ["evt_wait_old", since - 60_000],
      ] as const) {
        sql.exec(
          `INSERT INTO events (id, type, body, accepted_at) VALUES (?1, 'course.updated', json_object('id', ?1, 'type', 'course.updated', 'data', json_object()), ?2)`,
          id,
          accepted,
        );
        sql.exec(
          `INSERT INTO queue (event_id, event_type, trigger, attempts, next_attempt_at, created_at) VALUES (?, 'course.updated', 'retry', 1, ?, ?)`,
          id,
          later,
          accepted,
        );
      }
    });
    const start = await counter(hookId);
    const res = await callJson(`/v3/webhooks/${hookId}/recover`, { method: "POST", key, json: { since: new Date(since).toISOString() } });
    expect([res.status, res.body.result]).toEqual([202, { queued: 1_203, exact: true }]);
    expect(await queuedAfter(hookId, start)).toBeLessThanOrEqual(STEP);

    let runs = 0;
    while (await alarmStep(hookId)) {
      runs += 1;
      if (runs === 2) {
        // Joined: one recover over both windows, nothing queued twice.
        const again = await callJson(`/v3/webhooks/${hookId}/recover`, { method: "POST", key, json: { since: new Date(since + 2_000).toISOString() } });
        expect(again.status).toBe(202);
      }
      // Reset with its alarm lost: the new instance resumes from the position in its storage.
      if (runs === 4) await resetObject(sim!, courierStub(hookId), { loseAlarm: true });
      expect(runs).toBeLessThanOrEqual(60);
      if ((await inCourier(hookId, (_c, state) => state.storage.kv.get("recover"))) === undefined && (await queueRows(hookId)) <= 1) break;
    }
    const sent = receipts(host);
    const expected = [...Array.from({ length: 1_200 }, (_, i) => `evt_once_${String(i + 1).padStart(6, "0")}`), "evt_wait_1", "evt_wait_2", "evt_wait_3"];
    expect([...sent.keys()].sort()).toEqual(expected.sort());
    expect([...sent.entries()].filter(([, n]) => n !== 1)).toEqual([]);
    // The delivery accepted before the window still waits for its retry.
    const old = await inCourier(hookId, (courier) =>
      ownStorage(courier).sql.exec<{ trigger: string }>(`SELECT trigger FROM queue WHERE event_id = 'evt_wait_old'`).toArray(),
    );
    expect(old).toEqual([{ trigger: "retry" }]);
  });

  it("makes the window's deliveries waiting for a retry due now, as a resend does", async () => {
    const host = "rcvb-wait.example.com";
    const { key, hookId } = await setUp("rcvwait", host);
    const since = sim!.clock.now() - 3_600_000;
    await seedFailed(hookId, "ended", 2, since);
    const later = sim!.clock.now() + 3_600_000;
    await inCourier(hookId, (courier) => {
      const sql = ownStorage(courier).sql;
      for (const id of ["evt_retry_1", "evt_retry_2", "evt_retry_3"]) {
        sql.exec(
          `INSERT INTO events (id, type, body, accepted_at) VALUES (?1, 'course.updated', json_object('id', ?1, 'type', 'course.updated', 'data', json_object()), ?2)`,
          id,
          since + 100,
        );
        sql.exec(
          `INSERT INTO queue (event_id, event_type, trigger, attempts, next_attempt_at, created_at) VALUES (?, 'course.updated', 'retry', 1, ?, ?)`,
          id,
          later,
          since,
        );
      }
    });
    const res = await callJson(`/v3/webhooks/${hookId}/recover`, { method: "POST", key, json: { since: new Date(since).toISOString() } });
    expect([res.status, res.body.result]).toEqual([202, { queued: 5, exact: true }]);
    await sim!.advance(200);
    expect([...receipts(host).keys()].sort()).toEqual(["evt_ended_000001", "evt_ended_000002", "evt_retry_1", "evt_retry_2", "evt_retry_3"]);
    const log = await callJson(`/v3/webhooks/${hookId}/deliveries?eventId=evt_retry_1`, { key });
    expect(log.body.result.map((d: { trigger: string; status: string }) => [d.trigger, d.status])).toEqual([["recover", "succeeded"]]);
  });

  it("its statements read through indexes: no scan of the events or the queue, no temporary B-tree", async () => {
    sim = SimulatedPlatform.virtual().install();
    const { key } = await newSchool("rcvplan");
    const hook = await register(key, "https://rcvb-plan.example.com/in");
    const plans = await inCourier(hook.id, (courier) => {
      const sql = ownStorage(courier).sql;
      const plan = (statement: string, params: unknown[]) =>
        sql
          .exec<{ detail: string }>(`EXPLAIN QUERY PLAN ${statement}`, ...params)
          .toArray()
          .map((r) => r.detail)
          .join("\n");
      return [plan(COUNT_ENDED_SQL, [0, 1, 10_001]), plan(COUNT_WAITING_SQL, [0, 1, 0, 10_001]), plan(RECOVER_QUEUE_SQL, [0, 10, 0, 0, 1, 200])];
    });
    for (const text of plans) {
      expect(text, text).not.toMatch(/\bSCAN (e|q|events|queue)\b/);
      expect(text, text).not.toMatch(/TEMP B-TREE/);
    }
  });
});
