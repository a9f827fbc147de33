/**
 * Ordering per course (docs/reference.md § "Event delivery", ordering): with `ordering:
 * "course"` (the default) no attempt of an event starts while an earlier event of its course
 * has not ended — a failed first attempt holds the course's next event until its retry
 * succeeds, other courses flow meanwhile, across a courier reset, for resend and recover too;
 * `"none"` holds nothing. What was not sent is asserted after driving every alarm (`drain`).
 */
import { runDurableObjectAlarm } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { hubFor } from "../../src/events/hub-client";
import type { SchoolEvent } from "../../src/events/types";
import { awaited, HoldRoom } from "../../src/webhooks/courier/course-hold";
import { backlog, nextDueAt, queueLoad, readDue } from "../../src/webhooks/courier/queue";
import { migrate as migrateHub } from "../../src/webhooks/hub/storage";
import { callJson } from "../support/helpers";
import {
  courierStub,
  courseEvent,
  drain,
  eventually,
  inCourier,
  inHub,
  makeAllDue,
  newSchool,
  ownStorage,
  register,
  schemaAsOf,
} from "../support/webhooks/harness";
import { SimulatedPlatform } from "../support/webhooks/platform-sim";
import { resetCourier } from "../support/webhooks/reset";

const rx = new SimulatedPlatform();
beforeAll(() => rx.install());
afterAll(() => rx.restore());
afterEach(() => rx.expectWithinLimit());

/** `host` answers 500 to the first attempt of each event of `failing`, 204 to everything else. */
function failFirst(host: string, failing: SchoolEvent[]): void {
  const ids = new Set(failing.map((e) => e.id));
  const seen = new Set<string>();
  rx.on(host, (req) => {
    const first = !seen.has(req.event.id);
    seen.add(req.event.id);
    return first && ids.has(req.event.id) ? 500 : 204;
  });
}

/** The event ids `host` received, in the order the requests were sent. */
/** The course events `host` received, in order (a re-enable's `webhook.events_missed` is no course's: left out). */
const sent = (host: string) =>
  rx
    .to(host)
    .filter((r) => r.event.type !== "webhook.events_missed")
    .map((r) => r.event.id);

type Entry = { eventId: string; attempt: number; status: string; trigger: string; attemptedAt: string | null; nextAttemptAt: string | null };

const entriesOf = async (key: string, webhookId: string, eventId: string): Promise<Entry[]> => {
  const { status, body } = await callJson(`/v3/webhooks/${webhookId}/deliveries?eventId=${eventId}`, { key });
  expect(status, JSON.stringify(body)).toBe(200);
  return body.result as Entry[];
};

/** Two events of course 1 (X) and one of course 2 (Y), in that order. */
function events(schoolId: string) {
  return { x1: courseEvent(schoolId, "course.updated", 1), x2: courseEvent(schoolId, "course.updated", 1), y1: courseEvent(schoolId, "course.updated", 2) };
}

describe('ordering "course" (the default)', () => {
  it("a failed first attempt of course X holds X's next event until its retry succeeds; course Y's and a test go meanwhile", async () => {
    const { schoolId, key } = await newSchool("ordcourse");
    const host = "ord-course.example.com";
    const hook = await register(key, `https://${host}/in`);
    const { x1, x2, y1 } = events(schoolId);
    failFirst(host, [x1]);
    await hubFor(env, schoolId).publish([x1, x2, y1]);
    await drain(schoolId);
    expect(sent(host)).toEqual([x1.id, y1.id]);
    // The held event is listed waiting: never attempted, and no time of its own.
    expect(await entriesOf(key, hook.id, x2.id)).toEqual([
      expect.objectContaining({ eventId: x2.id, attempt: 1, status: "pending", trigger: "event", attemptedAt: null, nextAttemptAt: null }),
    ]);
    // A `webhook.*` event is never held.
    const test = await callJson(`/v3/webhooks/${hook.id}/test`, { method: "POST", key });
    expect(test.status).toBe(202);
    await drain(schoolId);
    expect(sent(host)).toEqual([x1.id, y1.id, test.body.result.eventId]);

    // One run of the courier's alarm sends the retry; its outcome lets X's next event go at once.
    await makeAllDue(schoolId);
    await runDurableObjectAlarm(courierStub(hook.id));
    await eventually(() => sent(host).length === 5, "X's next event after the retry");
    await drain(schoolId);
    expect(sent(host)).toEqual([x1.id, y1.id, test.body.result.eventId, x1.id, x2.id]);
    expect((await entriesOf(key, hook.id, x1.id)).map((e) => e.status)).toEqual(["succeeded", "failed"]);
    expect((await entriesOf(key, hook.id, x2.id)).map((e) => [e.attempt, e.status, e.trigger])).toEqual([[1, "succeeded", "event"]]);
    expect(hook.ordering).toBe("course");
  });

  it("holds across a courier reset between the two events", async () => {
    const { schoolId, key } = await newSchool("ordreset");
    const host = "ord-reset.example.com";
    const hook = await register(key, `https://${host}/in`);
    const { x1, x2 } = events(schoolId);
    failFirst(host, [x1]);
    await hubFor(env, schoolId).publish([x1]);
    await drain(schoolId);
    expect(sent(host)).toEqual([x1.id]);
    await resetCourier(hook.id);
    await hubFor(env, schoolId).publish([x2]);
    await drain(schoolId);
    expect(sent(host)).toEqual([x1.id]);
    expect((await entriesOf(key, hook.id, x2.id)).map((e) => [e.status, e.nextAttemptAt])).toEqual([["pending", null]]);

    await makeAllDue(schoolId);
    await drain(schoolId);
    expect(sent(host)).toEqual([x1.id, x1.id, x2.id]);
  });

  it("a resend of the held event waits too, and is sent once, after the retry", async () => {
    const { schoolId, key } = await newSchool("ordresend");
    const host = "ord-resend.example.com";
    const hook = await register(key, `https://${host}/in`);
    const { x1, x2 } = events(schoolId);
    failFirst(host, [x1]);
    await hubFor(env, schoolId).publish([x1, x2]);
    await drain(schoolId);
    const resent = await callJson(`/v3/webhooks/${hook.id}/deliveries/${x2.id}/resend`, { method: "POST", key });
    expect(resent.status).toBe(202);
    await drain(schoolId);
    expect(sent(host)).toEqual([x1.id]);

    await makeAllDue(schoolId);
    await drain(schoolId);
    expect(sent(host)).toEqual([x1.id, x1.id, x2.id]);
  });

  it("an earlier event resent goes first: the course's later delivery, pending a retry, waits for it", async () => {
    const { schoolId, key } = await newSchool("ordearlier");
    const host = "ord-earlier.example.com";
    const hook = await register(key, `https://${host}/in`);
    const { x1, x2 } = events(schoolId);
    const failing = new Set<string>();
    rx.on(host, (req) => (failing.has(req.event.id) ? 500 : 204));
    await hubFor(env, schoolId).publish([x1]);
    await drain(schoolId);
    failing.add(x1.id).add(x2.id);
    await hubFor(env, schoolId).publish([x2]);
    await drain(schoolId);
    expect((await callJson(`/v3/webhooks/${hook.id}/deliveries/${x1.id}/resend`, { method: "POST", key })).status).toBe(202);
    await drain(schoolId);
    expect(sent(host)).toEqual([x1.id, x2.id, x1.id]);
    // Both retries due: only the earlier event's starts.
    await makeAllDue(schoolId);
    await drain(schoolId);
    expect(sent(host)).toEqual([x1.id, x2.id, x1.id, x1.id]);

    failing.clear();
    await makeAllDue(schoolId);
    await drain(schoolId);
    expect(sent(host)).toEqual([x1.id, x2.id, x1.id, x1.id, x1.id, x2.id]);
  });

  it("a recover queues a course's events in acceptance order: the second waits for the first's retry", async () => {
    const { schoolId, key } = await newSchool("ordrecover");
    const host = "ord-recover.example.com";
    const hook = await register(key, `https://${host}/in`);
    const since = new Date(Date.now() - 60_000).toISOString();
    expect((await callJson(`/v3/webhooks/${hook.id}`, { method: "PATCH", key, json: { enabled: false } })).status).toBe(200);
    const { x1, x2 } = events(schoolId);
    await hubFor(env, schoolId).publish([x1, x2]);
    await drain(schoolId);
    expect((await callJson(`/v3/webhooks/${hook.id}`, { method: "PATCH", key, json: { enabled: true } })).status).toBe(200);
    failFirst(host, [x1]);
    const recovered = await callJson(`/v3/webhooks/${hook.id}/recover`, { method: "POST", key, json: { since } });
    expect([recovered.status, recovered.body.result]).toEqual([202, { queued: 2, exact: true }]);
    await drain(schoolId);
    expect(sent(host)).toEqual([x1.id]);

    await makeAllDue(schoolId);
    await drain(schoolId);
    expect(sent(host)).toEqual([x1.id, x1.id, x2.id]);
  });
});

describe('ordering "none"', () => {
  it("X's next event is not held by the failed first attempt", async () => {
    const { schoolId, key } = await newSchool("ordnone");
    const host = "ord-none.example.com";
    const hook = await register(key, `https://${host}/in`, { ordering: "none" });
    expect(hook.ordering).toBe("none");
    const { x1, x2 } = events(schoolId);
    failFirst(host, [x1]);
    await hubFor(env, schoolId).publish([x1, x2]);
    await drain(schoolId);
    expect(sent(host)).toEqual([x1.id, x2.id]);
    await makeAllDue(schoolId);
    await drain(schoolId);
    expect(sent(host)).toEqual([x1.id, x2.id, x1.id]);
  });

  it("a PATCH to none lets the held event go at once; GET and the list show the setting", async () => {
    const { schoolId, key } = await newSchool("ordpatch");
    const host = "ord-patch.example.com";
    const hook = await register(key, `https://${host}/in`);
    const { x1, x2 } = events(schoolId);
    failFirst(host, [x1]);
    await hubFor(env, schoolId).publish([x1, x2]);
    await drain(schoolId);
    expect(sent(host)).toEqual([x1.id]);
    const patched = await callJson(`/v3/webhooks/${hook.id}`, { method: "PATCH", key, json: { ordering: "none" } });
    expect([patched.status, patched.body.result.ordering]).toEqual([200, "none"]);
    await drain(schoolId);
    expect(sent(host)).toEqual([x1.id, x2.id]);
    expect((await callJson(`/v3/webhooks/${hook.id}`, { key })).body.result.ordering).toBe("none");
    expect((await callJson("/v3/webhooks", { key })).body.result.map((w: { ordering: string }) => w.ordering)).toEqual(["none"]);
  });
});

describe("the setting", () => {
  it.each([
    ["POST", { url: "https://ord-bad.example.com/in", ordering: "fifo" }],
    ["POST", { url: "https://ord-bad.example.com/in", ordering: null }],
    ["PATCH", { ordering: "Course" }],
    ["PATCH", { ordering: 1 }],
  ])("%s with %j: 400 VALIDATION_ERROR naming ordering", async (method, json) => {
    const { key } = await newSchool("ordbad");
    const hook = await register(key, "https://ord-bad.example.com/in");
    const path = method === "POST" ? "/v3/webhooks" : `/v3/webhooks/${hook.id}`;
    const { status, body } = await callJson(path, { method, key, json });
    expect([status, body.code]).toEqual([400, "VALIDATION_ERROR"]);
    expect(body.details).toContainEqual({ path: "ordering", message: "must be one of course, none" });
  });

  it("a registration stored before the setting reads none once migrated", async () => {
    const { schoolId, key } = await newSchool("ordold");
    await inHub(schoolId, (hub) => {
      const sql = ownStorage(hub).sql;
      schemaAsOf(sql, 6, migrateHub);
      sql.exec(
        "INSERT INTO webhooks (id, url, events, headers, secret, created_at, updated_at) VALUES ('wh_before_ordering', 'https://old.example.com/in', '[\"*\"]', '{}', 'whsec_x', 1, 1)",
      );
      migrateHub(sql);
    });
    const { status, body } = await callJson("/v3/webhooks/wh_before_ordering", { key });
    expect([status, body.result.ordering]).toEqual([200, "none"]);
  });
});

describe("the hold's queries", () => {
  it("read through queue_ready, queue_course and queue_held: no scan of the queue, no temp B-tree", async () => {
    const { key } = await newSchool("ordplan");
    const hook = await register(key, "https://ord-plan.example.com/in");
    await inCourier(hook.id, (courier) => {
      const sql = ownStorage(courier).sql;
      const seen: [string, unknown[]][] = [];
      const recorder = {
        exec: (query: string, ...params: unknown[]) => {
          seen.push([query, params]);
          return sql.exec(query, ...params);
        },
      } as unknown as SqlStorage;
      readDue(recorder, Date.now(), [1], 5, 0, true);
      nextDueAt(recorder, [1], 0, true);
      backlog(recorder, Date.now(), 8, true);
      // The held bounds: a course's probe, its held load and the registration's; the sendable load.
      const room = new HoldRoom(recorder);
      room.failingHead("crs_1");
      room.hold("crs_1", 10);
      awaited(recorder, "crs_1");
      queueLoad(recorder, true);
      // The triggers' statements, with NEW and OLD bound as an insert and a delete would.
      const triggers = sql.exec<{ sql: string }>(`SELECT sql FROM sqlite_master WHERE type = 'trigger' AND name IN ('queue_hold', 'queue_release')`).toArray();
      expect(triggers).toHaveLength(2);
      for (const { sql: text } of triggers) {
        const body = text.slice(text.indexOf("BEGIN") + 5, text.lastIndexOf("END"));
        for (const statement of body
          .split(";")
          .map((s) => s.trim())
          .filter(Boolean)) {
          seen.push([statement.replace(/\b(NEW|OLD)\.(course)\b/g, "'crs_1'").replace(/\b(NEW|OLD)\.(seq|id)\b/g, "7"), []]);
        }
      }
      expect(seen).toHaveLength(11);
      for (const [query, params] of seen) {
        const plan = sql
          .exec<{ detail: string }>(`EXPLAIN QUERY PLAN ${query}`, ...params)
          .toArray()
          .map((r) => r.detail);
        const what = `${query}\n${plan.join("\n")}`;
        // `nextDueAt` walks `queue_ready` in due order and stops at its first row not busy; a
        // load is counted over a walk of its partial index cut by its LIMIT.
        const walk = /LIMIT 1$|LIMIT \?1?\)$/.test(query) ? /^SCAN (queue|q) USING (COVERING )?INDEX (queue_ready|queue_held|queue_due)$/ : /^$/;
        expect(
          plan.filter((line) => /\bSCAN (?!json_each\b|CONSTANT ROW\b|\(subquery-\d+\))|TEMP B-TREE/.test(line) && !walk.test(line)),
          what,
        ).toEqual([]);
        expect(plan.join("\n"), what).toMatch(/queue_ready|queue_course|queue_held/);
      }
    });
  });
});
