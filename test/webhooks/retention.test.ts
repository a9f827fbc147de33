/**
 * Bounded steps and storage (docs/architecture.md § Invariants; docs/reference.md § DELETE:
 * data erased): a DELETE forgets the registration's addressed events later, 1,000 rows per
 * alarm; tombstones go after the 7-day retention, their ids kept as taken; a closed courier
 * erases its log, event copies and queue in bounded steps down to its closed marker; reads of
 * a courier never used make no storage; the feed's type filter, recover and the courier's
 * pruning read through indexes, a bounded number of rows per step. The 24 h of the erase is
 * measured on a virtual clock, each alarm run at the instant it is set for.
 */
import { listDurableObjectIds, runDurableObjectAlarm } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { hubFor } from "../../src/events/hub-client";
import { RECOVER_SQL } from "../../src/webhooks/courier/attempt-log";
import { pruneLog } from "../../src/webhooks/courier/storage";
import { FEED_TYPE_SQL } from "../../src/webhooks/hub/feed";
import { callJson } from "../support/helpers";
import { drainByAlarms } from "../support/webhooks/alarms";
import { courierStub, courseEvent, drain, hubStub, inCourier, inHub, newSchool, register } from "../support/webhooks/harness";
import { SimulatedPlatform } from "../support/webhooks/platform-sim";
import { withVirtualPlatform } from "../support/webhooks/virtual";

const rx = new SimulatedPlatform();
beforeAll(() => {
  rx.install();
});
afterAll(() => rx.restore());

const DAY = 86_400_000;

/** Rows of `table` in the courier's storage. */
function courierRows(webhookId: string, table: string): Promise<number> {
  return inCourier(webhookId, (_c, state) => state.storage.sql.exec<{ n: number }>(`SELECT COUNT(*) AS n FROM ${table}`).one().n);
}

/** The EXPLAIN QUERY PLAN lines of `sql` with `params`. */
function planOf(sql: SqlStorage, statement: string, ...params: unknown[]): string {
  return sql
    .exec<{ detail: string }>(`EXPLAIN QUERY PLAN ${statement}`, ...params)
    .toArray()
    .map((r) => r.detail)
    .join("\n");
}

describe("a DELETE", () => {
  it("leaves the addressed events to the alarm, which forgets them 1,000 rows per run", async () => {
    const { schoolId, key } = await newSchool("tgt");
    const doomed = await register(key, "https://tgt-doomed.example.com/in");
    // 2,500 events addressed to it, all handed over already.
    await inHub(schoolId, (_h, state) => {
      state.storage.sql.exec(
        `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 2500)
         INSERT INTO targets (webhook_id, seq) SELECT ?, i FROM n`,
        doomed.id,
      );
      state.storage.sql.exec(`UPDATE webhooks SET acked_seq = 2500 WHERE id = ?`, doomed.id);
    });
    const targets = () =>
      inHub(schoolId, (_h, state) => state.storage.sql.exec<{ n: number }>(`SELECT COUNT(*) AS n FROM targets WHERE webhook_id = ?`, doomed.id).one().n);
    expect((await callJson(`/v3/webhooks/${doomed.id}`, { method: "DELETE", key })).status).toBe(200);
    // The DELETE's step did not read them.
    expect(await targets()).toBe(2500);
    const left: number[] = [];
    for (let i = 0; i < 3; i++) {
      expect(await runDurableObjectAlarm(hubStub(schoolId))).toBe(true);
      left.push(await targets());
    }
    expect(left).toEqual([1500, 500, 0]);
  });
});

describe("a deleted registration's data", () => {
  it("is erased within 24 h of the DELETE's 200 by the alarms alone, its secrets and header values at once", async () => {
    await withVirtualPlatform(rx, async (sim) => {
      sim.delay = [1, 1];
      const host = "erase24.example.com";
      const { schoolId, key } = await newSchool("erase24");
      const hook = await register(key, `https://${host}/in`, { headers: { "x-api-key": "erase24-header-value" } });
      const rotated = await callJson(`/v3/webhooks/${hook.id}/secret/rotate`, { method: "POST", key, json: { graceSeconds: 3600 } });
      expect(rotated.status).toBe(200);
      // Two deliveries that succeed, one the receiver fails (its retry is queued), then a long
      // log (2,500 more attempts) and 2,500 events addressed to it in the hub: more than one
      // bounded step of each.
      await hubFor(env, schoolId).publish([0, 1].map((n) => courseEvent(schoolId, "course.updated", n)));
      await sim.advance(10);
      sim.on(host, 500);
      await hubFor(env, schoolId).publish([courseEvent(schoolId, "course.updated", 2)]);
      await sim.advance(10);
      expect(sim.to(host)).toHaveLength(3);
      await inCourier(hook.id, (_c, state) => {
        state.storage.sql.exec(
          `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 2500)
           INSERT INTO log (event_id, event_type, attempt, status, trigger, attempted_at) SELECT 'evt_' || i, 'course.updated', 1, 'succeeded', 'event', ? FROM n`,
          sim.clock.now(),
        );
      });
      await inHub(schoolId, (_h, state) => {
        state.storage.sql.exec(
          `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 2500)
           INSERT INTO targets (webhook_id, seq) SELECT ?, 1000 + i FROM n`,
          hook.id,
        );
      });
      const courier = () =>
        inCourier(hook.id, (_c, state) => ({
          log: state.storage.sql.exec<{ n: number }>(`SELECT COUNT(*) AS n FROM log`).one().n,
          events: state.storage.sql.exec<{ n: number }>(`SELECT COUNT(*) AS n FROM events`).one().n,
          queue: state.storage.sql.exec<{ n: number }>(`SELECT COUNT(*) AS n FROM queue`).one().n,
          kv: [...state.storage.kv.list()].map(([k]) => k).sort(),
        }));
      const hub = () =>
        inHub(schoolId, (_h, state) => ({
          row: state.storage.sql
            .exec<{ secret: string; previous_secret: string | null; headers: string; deleted_at: number | null }>(
              `SELECT secret, previous_secret, headers, deleted_at FROM webhooks WHERE id = ?`,
              hook.id,
            )
            .toArray(),
          targets: state.storage.sql.exec<{ n: number }>(`SELECT COUNT(*) AS n FROM targets WHERE webhook_id = ?`, hook.id).one().n,
        }));
      const held = await courier();
      expect([held.log, held.events, held.queue]).toEqual([2503, 3, 1]);
      expect((await hub()).targets).toBe(2503);

      // The virtual clock stands still between the DELETE and its answer: the 200 is at `deletedAt`.
      const deletedAt = sim.clock.now();
      expect((await callJson(`/v3/webhooks/${hook.id}`, { method: "DELETE", key })).status).toBe(200);
      // At once: its secrets and header values, and the courier closed with nothing but its
      // marker in KV (its pending retry is never started: nothing is sent after the 200, below;
      // its queue row goes with the alarm's erasure).
      expect((await hub()).row).toEqual([{ secret: "", previous_secret: null, headers: "{}", deleted_at: deletedAt }]);
      expect((await courier()).kv).toEqual(["closed"]);
      // The rest "within 24 h" (docs/reference.md § DELETE /v3/webhooks/{id} (beta)): the
      // contract sets no earliest instant, so only the deadline is checked. The objects' own
      // alarms are run, each when the clock reaches it, up to 24 h after the 200 and no later.
      const ran = await drainByAlarms(sim, [hubFor(env, schoolId) as unknown as DurableObjectStub, courierStub(hook.id)], 86_400_000);
      expect(ran.length).toBeGreaterThan(0);
      expect(sim.clock.now()).toBe(deletedAt + 86_400_000);
      // Only what the promise needs is left: the tombstone (the id deleted) and the closed marker.
      expect(await courier()).toEqual({ log: 0, events: 0, queue: 0, kv: ["closed"] });
      expect(await hub()).toEqual({ row: [{ secret: "", previous_secret: null, headers: "{}", deleted_at: deletedAt }], targets: 0 });
      expect((await callJson(`/v3/webhooks/${hook.id}`, { method: "DELETE", key })).status).toBe(404);
      // Nothing was sent after the 200.
      expect(sim.to(host)).toHaveLength(3);
    });
  });
});

describe("a tombstone", () => {
  it("is pruned after the 7-day retention; its id stays taken", async () => {
    const { schoolId, key } = await newSchool("tomb");
    const hook = await register(key, "https://tomb.example.com/in");
    expect((await callJson(`/v3/webhooks/${hook.id}`, { method: "DELETE", key })).status).toBe(200);
    const tombstones = () =>
      inHub(schoolId, (_h, state) => ({
        rows: state.storage.sql.exec<{ n: number }>(`SELECT COUNT(*) AS n FROM webhooks WHERE id = ?`, hook.id).one().n,
        taken: state.storage.sql.exec<{ n: number }>(`SELECT COUNT(*) AS n FROM deleted_ids WHERE id = ?`, hook.id).one().n,
      }));
    await runDurableObjectAlarm(hubStub(schoolId));
    // Within the retention it stays.
    expect(await tombstones()).toEqual({ rows: 1, taken: 0 });
    await inHub(schoolId, (_h, state) => {
      state.storage.sql.exec(`UPDATE webhooks SET deleted_at = deleted_at - ? WHERE id = ?`, 7 * DAY + 1, hook.id);
      return state.storage.setAlarm(Date.now());
    });
    expect(await runDurableObjectAlarm(hubStub(schoolId))).toBe(true);
    expect(await tombstones()).toEqual({ rows: 0, taken: 1 });
    expect((await callJson(`/v3/webhooks/${hook.id}`, { key })).status).toBe(404);
    expect((await callJson(`/v3/webhooks/${hook.id}`, { method: "DELETE", key })).status).toBe(404);
  });
});

describe("a closed courier", () => {
  it("erases its log, event copies and queue, 1,000 rows per alarm, down to its closed marker", async () => {
    const { schoolId, key } = await newSchool("erase");
    const hook = await register(key, "https://erase.example.com/in");
    await hubFor(env, schoolId).publish([0, 1, 2].map((n) => courseEvent(schoolId, "course.updated", n)));
    await drain(schoolId);
    expect(rx.to("erase.example.com")).toHaveLength(3);
    // A long log: 2,500 more attempts.
    await inCourier(hook.id, (_c, state) => {
      state.storage.sql.exec(
        `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 2500)
         INSERT INTO log (event_id, event_type, attempt, status, trigger, attempted_at) SELECT 'evt_' || i, 'course.updated', 1, 'succeeded', 'event', ? FROM n`,
        Date.now(),
      );
    });
    expect(await courierRows(hook.id, "log")).toBe(2503);
    expect((await callJson(`/v3/webhooks/${hook.id}`, { method: "DELETE", key })).status).toBe(200);
    const left: number[] = [];
    while (await runDurableObjectAlarm(courierStub(hook.id))) left.push(await courierRows(hook.id, "log"));
    expect(left).toEqual([1503, 503, 0]);
    expect(await courierRows(hook.id, "events")).toBe(0);
    expect(await courierRows(hook.id, "queue")).toBe(0);
    const kept = await inCourier(hook.id, (_c, state) => [...state.storage.kv.list()].map(([k, v]) => [k, v]));
    expect(kept).toEqual([["closed", true]]);
  });
});

describe("reads of a courier never used", () => {
  it("answer an empty log and zero counts without making its storage", async () => {
    const { key } = await newSchool("unused");
    const hook = await register(key, "https://unused.example.com/in");
    const log = await callJson(`/v3/webhooks/${hook.id}/deliveries`, { key });
    expect([log.status, log.body.result]).toEqual([200, []]);
    const stats = await callJson(`/v3/webhooks/${hook.id}/stats?bucket=day`, { key });
    expect(stats.status).toBe(200);
    const buckets = stats.body.result.buckets as { succeeded: number; failed: number; pending: number; skipped: number }[];
    expect(buckets.length).toBeGreaterThanOrEqual(1);
    for (const b of buckets) expect([b.succeeded, b.failed, b.pending, b.skipped]).toEqual([0, 0, 0, 0]);
    const made = (await listDurableObjectIds(env.WEBHOOK_COURIER)).map((id) => id.toString());
    expect(made).not.toContain(courierStub(hook.id).id.toString());
  });
});

describe("reads through indexes, bounded per step", () => {
  it("the feed's type filter reads each type through events_type, never the whole log", async () => {
    const { schoolId } = await newSchool("feedidx");
    await hubFor(env, schoolId).publish([courseEvent(schoolId)]);
    const plan = await inHub(schoolId, (_h, state) => planOf(state.storage.sql, FEED_TYPE_SQL, "course.created", 0, 101));
    expect(plan).toMatch(/events_type/);
    expect(plan).not.toMatch(/SCAN events\b(?! USING)/);
  });

  it("recover reads only the deliveries that ended failed or skipped (events_ended)", async () => {
    const { key } = await newSchool("recidx");
    const hook = await register(key, "https://recidx.example.com/in");
    const plan = await inCourier(hook.id, (_c, state) => planOf(state.storage.sql, RECOVER_SQL, 0, 1, 0, 0, 200));
    expect(plan).toMatch(/events_ended/);
    expect(plan).not.toMatch(/SCAN (events|e)\b(?! USING)/);
  });

  it("the courier's pruning reads at most 1,000 old event copies per run, skipping those still queued", async () => {
    const { key } = await newSchool("pruneidx");
    const hook = await register(key, "https://pruneidx.example.com/in");
    await inCourier(hook.id, (_c, state) => {
      const sql = state.storage.sql;
      const old = Date.now() - 8 * DAY;
      // 2,500 old copies still queued (a delivery under way keeps its copy), then one prunable.
      sql.exec(
        `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 2500)
         INSERT INTO events (id, type, body, accepted_at) SELECT 'evt_q' || i, 'course.updated', '{}', ? + i FROM n`,
        old,
      );
      sql.exec(
        `INSERT INTO queue (event_id, event_type, trigger, attempts, next_attempt_at, created_at) SELECT id, type, 'event', 0, ?, ? FROM events`,
        Date.now() + DAY,
        old,
      );
      sql.exec(`INSERT INTO events (id, type, body, accepted_at) VALUES ('evt_gone', 'course.updated', '{}', ?)`, old + 3000);
      const gone = () => sql.exec(`SELECT 1 FROM events WHERE id = 'evt_gone'`).toArray().length === 0;
      let run = pruneLog(sql, Date.now(), [Number.MIN_SAFE_INTEGER, 0]);
      const after: boolean[] = [gone()];
      while (run.more) {
        run = pruneLog(sql, Date.now(), run.next);
        after.push(gone());
      }
      // Three runs of 1,000: the prunable copy is reached by the third; the queued stay.
      expect(after).toEqual([false, false, true]);
      expect(sql.exec<{ n: number }>(`SELECT COUNT(*) AS n FROM events`).one().n).toBe(2500);
    });
  });
});
