/**
 * Each delivery-log entry is one attempt with its own outcome (docs/reference.md § "Delivery
 * log"): a failed attempt is logged `failed` when it ends, with `nextAttemptAt` when a retry
 * follows, so that `status=failed` finds it at once; `pending` is only a delivery not
 * attempted yet; the statistics count the log's entries in the same words.
 */
import { env } from "cloudflare:workers";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { hubFor } from "../../src/events/hub-client";
import { migrate } from "../../src/webhooks/courier/storage";
import { callJson } from "../support/helpers";
import { courseEvent, drain, inCourier, makeAllDue, newSchool, ownStorage, register, schemaAsOf } from "../support/webhooks/harness";
import { SimulatedPlatform } from "../support/webhooks/platform-sim";

const rx = new SimulatedPlatform();
beforeAll(() => rx.install());
afterAll(() => rx.restore());
afterEach(() => rx.expectWithinLimit());

type Entry = {
  eventId: string;
  attempt: number;
  status: string;
  trigger: string;
  responseStatus: number | null;
  error: string | null;
  durationMs: number | null;
  attemptedAt: string | null;
  nextAttemptAt: string | null;
};

const deliveries = async (key: string, id: string, query = "") => {
  const { status, body } = await callJson(`/v3/webhooks/${id}/deliveries${query}`, { key });
  expect(status, JSON.stringify(body)).toBe(200);
  return body.result as Entry[];
};

describe("a receiver refusing connections", () => {
  it("its first attempt is logged failed with the retry's time, and status=failed finds it at once", async () => {
    const { schoolId, key } = await newSchool("outc");
    const host = "outc-refused.example.com";
    const hook = await register(key, `https://${host}/in`);
    rx.on(host, 0); // the connection fails: no answer at all
    const event = courseEvent(schoolId);
    await hubFor(env, schoolId).publish([event]);
    await drain(schoolId);
    expect(rx.to(host)).toHaveLength(1);

    const [entry, ...rest] = await deliveries(key, hook.id);
    expect(rest).toEqual([]);
    expect(entry).toMatchObject({ eventId: event.id, attempt: 1, status: "failed", trigger: "event", responseStatus: null });
    expect(entry!.error).toMatch(/^network error: /);
    // The schedule's first wait is 5 s from the attempt's end, lengthened by at most 10 % of jitter.
    const wait = Date.parse(entry!.nextAttemptAt!) - Date.parse(entry!.attemptedAt!) - entry!.durationMs!;
    expect(wait).toBeGreaterThanOrEqual(5_000);
    expect(wait).toBeLessThanOrEqual(5_500);

    expect((await deliveries(key, hook.id, "?status=failed")).map((e) => [e.eventId, e.attempt])).toEqual([[event.id, 1]]);
    expect(await deliveries(key, hook.id, "?status=pending")).toEqual([]);
  });

  it("after it answers, the event's entries read failed … succeeded, and the stats count the same", async () => {
    const { schoolId, key } = await newSchool("outd");
    const host = "outd-refused.example.com";
    const hook = await register(key, `https://${host}/in`);
    rx.on(host, 0);
    const event = courseEvent(schoolId);
    await hubFor(env, schoolId).publish([event]);
    await drain(schoolId);
    await makeAllDue(schoolId);
    await drain(schoolId);
    rx.on(host, 204);
    await makeAllDue(schoolId);
    await drain(schoolId);
    expect(rx.to(host)).toHaveLength(3);

    const log = await deliveries(key, hook.id);
    expect(log.map((e) => [e.attempt, e.status, e.nextAttemptAt === null])).toEqual([
      [3, "succeeded", true],
      [2, "failed", false],
      [1, "failed", false],
    ]);
    const { body } = await callJson(`/v3/webhooks/${hook.id}/stats`, { key });
    const buckets = body.result.buckets as { succeeded: number; failed: number; pending: number; skipped: number }[];
    const total = (k: "succeeded" | "failed" | "pending" | "skipped") => buckets.reduce((n, b) => n + b[k], 0);
    expect({ succeeded: total("succeeded"), failed: total("failed"), pending: total("pending"), skipped: total("skipped") }).toEqual({
      succeeded: 1,
      failed: 2,
      pending: 0,
      skipped: 0,
    });
  });
});

describe("the courier's migration of entries logged pending", () => {
  it("an attempt a retry followed reads failed; its delivery has not ended, a later one that failed has", async () => {
    await inCourier("wh_attempt_outcomes_migration", (courier) => {
      const sql = ownStorage(courier).sql;
      // The schema as its fourth migration left it: failed attempts with a retry were `pending`.
      schemaAsOf(sql, 4, migrate);
      sql.exec(`INSERT INTO events (id, type, body, accepted_at) VALUES ('evt_a', 'course.updated', '{}', 1), ('evt_b', 'course.updated', '{}', 1)`);
      sql.exec(
        `INSERT INTO log (event_id, event_type, attempt, status, trigger, attempted_at, next_attempt_at)
         VALUES ('evt_a', 'course.updated', 1, 'pending', 'event', 1, 5001)`,
      );
      migrate(sql);
      expect(sql.exec(`SELECT status, next_attempt_at FROM log`).toArray()).toEqual([{ status: "failed", next_attempt_at: 5001 }]);
      // A failed attempt with a retry due leaves its delivery open; one without ends it.
      sql.exec(
        `INSERT INTO log (event_id, event_type, attempt, status, trigger, attempted_at, next_attempt_at)
         VALUES ('evt_a', 'course.updated', 2, 'failed', 'retry', 5001, 10001), ('evt_b', 'course.updated', 1, 'failed', 'event', 1, NULL)`,
      );
      expect(sql.exec(`SELECT id, ended FROM events ORDER BY id`).toArray()).toEqual([
        { id: "evt_a", ended: null },
        { id: "evt_b", ended: "failed" },
      ]);
    });
  });
});
