/**
 * Event delivery (docs/reference.md § "Event delivery"): signatures as a receiver verifies them, the
 * retry schedule (driven with runDurableObjectAlarm, never by sleeping), 410, timeouts,
 * idempotent publish, subscriptions, fairness between endpoints, pruning.
 */
import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { Webhook } from "standardwebhooks";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { hubFor } from "../../src/events/hub-client";
import { judgeAttempt, parseRetryAfter, parseRetrySchedule, parseTimeoutMs } from "../../src/webhooks/delivery/schedule";
import { courierFor } from "../../src/webhooks/rpc";
import { call, callJson } from "../support/helpers";
import { courseEvent, drain, eventually, inCourier, inHub, makeAllDue, newSchool, register } from "../support/webhooks/harness";
import { SimulatedPlatform } from "../support/webhooks/platform-sim";
import { withVirtualPlatform } from "../support/webhooks/virtual";

const rx = new SimulatedPlatform();
beforeAll(() => {
  rx.install();
});
afterAll(() => rx.restore());
// Every dispatch stayed within the platform's limit (6 waiting per I/O context, none queued).
afterEach(() => rx.expectWithinLimit());
beforeEach(() => {
  rx.delay = [0, 2];
});

/** The queue rows of a registration's courier (deliveries not yet succeeded or failed). */
/**
 * A new school whose one registration's receiver at `host` never answers, and the first
 * attempt at it, started (the hub's alarm handed the event over) and hanging.
 */
async function hangingAttempt(sim: SimulatedPlatform, label: string, host: string) {
  const { schoolId, key } = await newSchool(label);
  const hook = await register(key, `https://${host}/in`);
  sim.on(host, "hang");
  const hub = hubFor(env, schoolId);
  await hub.publish([courseEvent(schoolId)]);
  await runDurableObjectAlarm(hub);
  await eventually(() => sim.to(host).length === 1, "the attempt to start");
  return { schoolId, key, hook, req: sim.to(host)[0]! };
}

async function queueRows(webhookId: string) {
  return inCourier(webhookId, (_courier, state) =>
    state.storage.sql.exec<{ attempts: number; next_attempt_at: number }>(`SELECT attempts, next_attempt_at FROM queue ORDER BY id`).toArray(),
  );
}

describe("signatures", () => {
  it("every request verifies with the standardwebhooks package and the registration's secret", async () => {
    const { schoolId, key } = await newSchool("sig");
    const a = await register(key, "https://sig-a.example.com/in");
    const b = await register(key, "https://sig-b.example.com/in");
    const events = [courseEvent(schoolId, "course.created", 1), courseEvent(schoolId, "course.updated", 2)];
    const published = await hubFor(env, schoolId).publish(events);
    expect(published).toEqual({ accepted: 2, duplicates: 0, deliveries: 4 });
    await drain(schoolId);

    for (const [hook, host] of [
      [a, "sig-a.example.com"],
      [b, "sig-b.example.com"],
    ] as const) {
      const got = rx.to(host);
      expect(got.map((r) => r.event.id).sort()).toEqual(events.map((e) => e.id).sort());
      for (const req of got) {
        const payload = new Webhook(hook.secret).verify(req.body, req.headers);
        const sent = events.find((e) => e.id === req.event.id)!;
        expect(payload).toEqual(sent);
        expect(req.headers["webhook-id"]).toBe(sent.id);
        expect(req.headers["content-type"]).toBe("application/json");
        // The attempt's own instant (the platform's clock when it was sent), in seconds.
        expect(Number(req.headers["webhook-timestamp"])).toBe(Math.floor(req.sentAt / 1000));
        expect(req.headers["webhook-signature"]).toMatch(/^v1,[A-Za-z0-9+/]{43}=$/);
        // Signed with this registration's secret only.
        const other = hook === a ? b : a;
        expect(() => new Webhook(other.secret).verify(req.body, req.headers)).toThrow();
      }
    }
  });

  it("a tampered body or timestamp fails verification", async () => {
    const { schoolId, key } = await newSchool("sig");
    const a = await register(key, "https://sig-c.example.com/in");
    await hubFor(env, schoolId).publish([courseEvent(schoolId)]);
    await drain(schoolId);
    const [req] = rx.to("sig-c.example.com");
    const wh = new Webhook(a.secret);
    expect(() => wh.verify(req!.body.replace("Cours", "Kurs"), req!.headers)).toThrow();
    expect(() => wh.verify(req!.body, { ...req!.headers, "webhook-timestamp": String(Number(req!.headers["webhook-timestamp"]) + 1) })).toThrow();
  });
});

describe("retries", () => {
  it("follows WEBHOOK_RETRY_SCHEDULE against a failing receiver, then the delivery is failed", async () => {
    // WEBHOOK_RETRY_SCHEDULE as wrangler.toml sets it (the contract's default), in seconds.
    const schedule = [5, 300, 1800, 7200, 18000, 36000, 36000];
    expect(parseRetrySchedule(env.WEBHOOK_RETRY_SCHEDULE)).toEqual(schedule);
    // Simulated time: each wait is measured exactly and the clock driven to it.
    await withVirtualPlatform(rx, async (sim) => {
      const { schoolId, key } = await newSchool("retry");
      const host = "fail.example.com";
      const hook = await register(key, `https://${host}/in`);
      sim.on(host, { status: 500, afterMs: 0 });
      const event = courseEvent(schoolId);
      const hub = hubFor(env, schoolId);
      await hub.publish([event]);
      await runDurableObjectAlarm(hub);
      const courier = () => courierFor(env, hook.id);
      /** Lets attempt `n` be sent, answered (at once) and logged, 1 simulated ms at a time. */
      const attempted = async (n: number) => {
        await eventually(() => sim.to(host).length === n, `attempt ${n} to be sent`);
        await eventually(async () => {
          await sim.advance(1);
          return (await inCourier(hook.id, (_c, state) => state.storage.sql.exec<{ n: number }>(`SELECT COUNT(*) AS n FROM log`).one().n)) === n;
        }, `attempt ${n} to be logged`);
      };
      await attempted(1);
      for (let i = 0; i < schedule.length; i++) {
        const [row] = await queueRows(hook.id);
        expect(row!.attempts).toBe(i + 1);
        // The schedule's wait lengthened by 0–10 % (jitter), from the attempt's end (it answered at once).
        const wait = row!.next_attempt_at - sim.to(host).at(-1)!.sentAt;
        expect(wait).toBeGreaterThanOrEqual(schedule[i]! * 1000);
        expect(wait).toBeLessThanOrEqual(schedule[i]! * 1100);
        // 1 ms before it is due, the courier's alarm sends nothing …
        await sim.advance(row!.next_attempt_at - 1 - sim.clock.now());
        await runDurableObjectAlarm(courier());
        await sim.advance(0);
        expect(sim.to(host)).toHaveLength(i + 1);
        // … and when the clock reaches it, the retry goes.
        await sim.advance(1);
        expect(await runDurableObjectAlarm(courier())).toBe(true);
        await attempted(i + 2);
      }
      expect(await queueRows(hook.id)).toEqual([]);
      const got = sim.to(host);
      expect(got).toHaveLength(1 + schedule.length);
      expect(new Set(got.map((r) => r.headers["webhook-id"]))).toEqual(new Set([event.id]));
      expect(new Set(got.map((r) => r.body)).size).toBe(1);
      const log = (await callJson(`/v3/webhooks/${hook.id}/deliveries`, { key })).body.result;
      expect(log.map((d: { attempt: number }) => d.attempt)).toEqual([8, 7, 6, 5, 4, 3, 2, 1]);
      expect(log[0]).toMatchObject({
        eventId: event.id,
        eventType: "course.updated",
        status: "failed",
        responseStatus: 500,
        error: "HTTP 500",
        nextAttemptAt: null,
        trigger: "retry",
        url: "https://fail.example.com/in",
        responseBody: "ok",
      });
      for (const entry of log.slice(1)) {
        expect(entry).toMatchObject({ status: "failed", responseStatus: 500, trigger: entry.attempt === 1 ? "event" : "retry" });
        expect(entry.durationMs).toEqual(expect.any(Number));
        const gap = Date.parse(entry.nextAttemptAt) - Date.parse(entry.attemptedAt);
        expect(gap).toBeGreaterThanOrEqual(schedule[entry.attempt - 1]! * 1000);
        expect(gap).toBeLessThanOrEqual(schedule[entry.attempt - 1]! * 1100);
      }
    });
  });

  it("a later 2xx ends the retries with succeeded", async () => {
    const { schoolId, key } = await newSchool("retry");
    const hook = await register(key, "https://flaky.example.com/in");
    let calls = 0;
    rx.on("flaky.example.com", () => (++calls === 1 ? 503 : 200));
    await hubFor(env, schoolId).publish([courseEvent(schoolId)]);
    await drain(schoolId);
    await makeAllDue(schoolId);
    await drain(schoolId);
    expect(calls).toBe(2);
    expect(await queueRows(hook.id)).toEqual([]);
    const log = (await callJson(`/v3/webhooks/${hook.id}/deliveries`, { key })).body.result;
    expect(log.map((d: { status: string; responseStatus: number }) => [d.status, d.responseStatus])).toEqual([
      ["succeeded", 200],
      ["failed", 503],
    ]);
  });

  it("410 Gone stops the retries of that delivery and disables the registration (gone)", async () => {
    const { schoolId, key } = await newSchool("gone");
    const hook = await register(key, "https://gone.example.com/in");
    await register(key, "https://gone-watch.example.com/in", { events: ["webhook.disabled"] });
    rx.on("gone.example.com", 410);
    await hubFor(env, schoolId).publish([courseEvent(schoolId)]);
    await drain(schoolId);
    expect(await queueRows(hook.id)).toEqual([]);
    await makeAllDue(schoolId);
    await drain(schoolId);
    expect(rx.to("gone.example.com")).toHaveLength(1);
    const [entry] = (await callJson(`/v3/webhooks/${hook.id}/deliveries`, { key })).body.result;
    expect(entry).toMatchObject({ attempt: 1, status: "failed", responseStatus: 410, nextAttemptAt: null });
    expect(entry.error).toMatch(/410/);
    // The receiver asked to be unsubscribed: the registration is disabled (gone), and
    // webhook.disabled reaches the school's other registrations that subscribe to it.
    const record = async () => (await callJson(`/v3/webhooks/${hook.id}`, { key })).body.result;
    await eventually(async () => (await record()).enabled === false, "the registration to be disabled");
    expect(await record()).toMatchObject({ enabled: false, disabledReason: "gone", disabledAt: expect.any(String) });
    await drain(schoolId);
    const watched = rx.to("gone-watch.example.com").map((r) => r.event);
    expect(watched.map((e) => [e.type, e.data])).toEqual([["webhook.disabled", { webhookId: hook.id, reason: "gone", failingSince: null }]]);
    // Disabled: the next event is not delivered; once enabled again, events are.
    rx.on("gone.example.com", 200);
    await hubFor(env, schoolId).publish([courseEvent(schoolId)]);
    await drain(schoolId);
    expect(rx.to("gone.example.com")).toHaveLength(1);
    expect((await callJson(`/v3/webhooks/${hook.id}`, { method: "PATCH", key, json: { enabled: true } })).status).toBe(200);
    await hubFor(env, schoolId).publish([courseEvent(schoolId)]);
    await drain(schoolId);
    // The new event, and the notice of the one skipped while disabled (docs/reference.md § "Missed events").
    expect(rx.to("gone.example.com").map((r) => (r.event.type === "webhook.events_missed" ? r.event.data.missed : r.event.type))).toEqual([
      "course.updated",
      1,
      "course.updated",
    ]);
  });

  it.each([
    ["network errors", 0, /^network error: /, null],
    ["redirects (not followed)", 302, /redirects are not followed/, 302],
    ["4xx answers", 400, /^HTTP 400$/, 400],
  ])("retries %s", async (_what, status, error, responseStatus) => {
    const { schoolId, key } = await newSchool("err");
    const host = `err${status}.example.com`;
    const hook = await register(key, `https://${host}/in`);
    rx.on(host, status);
    await hubFor(env, schoolId).publish([courseEvent(schoolId)]);
    await drain(schoolId);
    const [entry] = (await callJson(`/v3/webhooks/${hook.id}/deliveries`, { key })).body.result;
    expect(entry).toMatchObject({ attempt: 1, status: "failed", responseStatus });
    expect(entry.error).toMatch(error);
    expect((await queueRows(hook.id))[0]!.attempts).toBe(1);
  });

  it("an attempt is bounded by WEBHOOK_TIMEOUT_MS (1,000 ms in the suite: vitest.config.ts)", async () => {
    await withVirtualPlatform(rx, async (sim) => {
      const { key, hook, req } = await hangingAttempt(sim, "slow", "timeout.example.com");
      await sim.advance(req.sentAt + 999 - sim.clock.now());
      expect(req.abortedAt).toBeUndefined();
      await sim.advance(1);
      expect(req.abortedAt).toBe(req.sentAt + 1_000);
      await eventually(async () => {
        await sim.advance(1);
        return (await callJson(`/v3/webhooks/${hook.id}/deliveries`, { key })).body.result[0]?.attemptedAt != null;
      }, "the timed-out attempt to be logged");
      const [entry] = (await callJson(`/v3/webhooks/${hook.id}/deliveries`, { key })).body.result;
      expect(entry).toMatchObject({ status: "failed", responseStatus: null, durationMs: 1_000, error: "timed out after 1000 ms" });
    });
  });
});

describe("publish", () => {
  it("is idempotent by event id", async () => {
    const { schoolId, key } = await newSchool("idem");
    await register(key, "https://idem.example.com/in");
    const hub = hubFor(env, schoolId);
    const event = courseEvent(schoolId);
    const results = await Promise.all([hub.publish([event]), hub.publish([event, event])]);
    expect(results.reduce((n, r) => n + r.accepted, 0)).toBe(1);
    expect(results.reduce((n, r) => n + r.duplicates, 0)).toBe(2);
    await drain(schoolId);
    expect(await hub.publish([event])).toEqual({ accepted: 0, duplicates: 1, deliveries: 0 });
    await drain(schoolId);
    expect(rx.to("idem.example.com").map((r) => r.event.id)).toEqual([event.id]);
  });

  it("queues for the registrations subscribed at that instant, by event type", async () => {
    const { schoolId, key } = await newSchool("subs");
    await register(key, "https://only-created.example.com/in", { events: ["course.created"] });
    await register(key, "https://all.example.com/in");
    const hub = hubFor(env, schoolId);
    const created = courseEvent(schoolId, "course.created");
    const updated = courseEvent(schoolId, "course.updated");
    const archived = courseEvent(schoolId, "course.archived");
    const test = { ...courseEvent(schoolId), type: "webhook.test" as const };
    // A webhook.test event never enters the school's log (it is sent by POST …/test only).
    expect(await hub.publish([created, updated, archived, test])).toEqual({ accepted: 3, duplicates: 0, deliveries: 4 });
    // Registered after the publish: receives none of those events.
    await register(key, "https://late.example.com/in");
    await drain(schoolId);
    expect([...rx.eventIds("only-created.example.com")]).toEqual([created.id]);
    expect(rx.eventIds("all.example.com")).toEqual(new Set([created.id, updated.id, archived.id]));
    expect(rx.to("late.example.com")).toEqual([]);
  });
});

describe("dispatch", () => {
  it("a slow endpoint does not hold the others back", async () => {
    const { schoolId, key } = await newSchool("fair");
    await register(key, "https://stuck.example.com/in");
    await register(key, "https://quick.example.com/in");
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    rx.on("stuck.example.com", () => gate.then(() => 200));
    const events = Array.from({ length: 30 }, (_, i) => courseEvent(schoolId, "course.updated", i));
    await hubFor(env, schoolId).publish(events);
    // The alarm fires by itself; awaiting runDurableObjectAlarm would wait for the stuck attempts.
    await eventually(() => rx.eventIds("quick.example.com").size === 30, "the quick endpoint to get every event");
    // The stuck one holds at most its own share of attempts in flight: its courier's 5 slots
    // (docs/architecture.md § The I/O context budget).
    expect(rx.to("stuck.example.com")).toHaveLength(5);
    release();
    await drain(schoolId);
    expect(rx.eventIds("stuck.example.com").size).toBe(30);
  });

  it("prunes log rows and events older than 7 days", async () => {
    // On a virtual clock: "now" stands still, so the next alarm is measured from the instant
    // the pruning ran, never from the wall clock.
    await withVirtualPlatform(rx, async (sim) => {
      sim.delay = [1, 1];
      const { schoolId, key } = await newSchool("prune");
      const hook = await register(key, "https://prune.example.com/in");
      const hub = hubFor(env, schoolId);
      const recent = courseEvent(schoolId);
      await hub.publish([recent]);
      await sim.advance(10);
      expect(sim.to("prune.example.com")).toHaveLength(1);
      const old = sim.clock.now() - 7 * 86_400_000 - 60_000;
      // An old event in the hub's log, and its copy and attempt in the courier's.
      await runInDurableObject(hub, (_h, state) => {
        state.storage.sql.exec(`INSERT INTO events (id, type, body, created_at) VALUES ('evt_old', 'course.updated', '{}', ?)`, old);
      });
      await inCourier(hook.id, (_c, state) => {
        state.storage.sql.exec(`INSERT INTO events (id, type, body, accepted_at) VALUES ('evt_old', 'course.updated', '{}', ?)`, old);
        state.storage.sql.exec(
          `INSERT INTO log (event_id, event_type, attempt, status, trigger, url, response_status, error, attempted_at, next_attempt_at)
           VALUES ('evt_old', 'course.updated', 1, 'succeeded', 'event', 'https://prune.example.com/in', 200, NULL, ?, NULL)`,
          old,
        );
      });
      // Older than 7 days: never listed, even before pruning.
      const listed = (await callJson(`/v3/webhooks/${hook.id}/deliveries`, { key })).body.result;
      expect(listed.map((d: { eventId: string }) => d.eventId)).toEqual([recent.id]);
      const courier = courierFor(env, hook.id);
      const pruned = sim.clock.now();
      await runInDurableObject(hub, (_h, state) => state.storage.setAlarm(pruned));
      await runDurableObjectAlarm(hub);
      await inCourier(hook.id, (_c, state) => state.storage.setAlarm(pruned));
      await runDurableObjectAlarm(courier);
      const ids = (state: DurableObjectState, table: string, column = "id") =>
        state.storage.sql
          .exec<{ id: string }>(`SELECT ${column} AS id FROM ${table}`)
          .toArray()
          .map((r) => r.id);
      expect(await runInDurableObject(hub, (_h, state) => ids(state, "events"))).toEqual([recent.id]);
      expect(await inCourier(hook.id, (_c, state) => ({ events: ids(state, "events"), log: ids(state, "log", "event_id") }))).toEqual({
        events: [recent.id],
        log: [recent.id],
      });
      // With a log to prune and nothing queued, each alarm stays armed for a later pruning: not
      // a busy re-run (nothing is left to prune now), and within the 7-day retention.
      for (const alarm of [
        await runInDurableObject(hub, (_h, state) => state.storage.getAlarm()),
        await inCourier(hook.id, (_c, state) => state.storage.getAlarm()),
      ]) {
        expect(alarm).not.toBeNull();
        expect(alarm! - pruned).toBeGreaterThan(30 * 60_000);
        expect(alarm! - pruned).toBeLessThanOrEqual(604_800_000);
      }
    });
  });
});

describe("delete", () => {
  it("drops pending retries: nothing more is sent to the registration", async () => {
    const { schoolId, key } = await newSchool("drop");
    const hook = await register(key, "https://drop.example.com/in");
    rx.on("drop.example.com", 500);
    // Two courses: with `ordering: course` one course's second event would wait for the first.
    await hubFor(env, schoolId).publish([courseEvent(schoolId, "course.updated", 1), courseEvent(schoolId, "course.updated", 2)]);
    await drain(schoolId);
    expect(rx.to("drop.example.com")).toHaveLength(2);
    expect(await queueRows(hook.id)).toHaveLength(2);
    expect((await call(`/v3/webhooks/${hook.id}`, { method: "DELETE", key })).status).toBe(200);
    // Its rows are left to the closed courier's erasure, never started: even made due now.
    await makeAllDue(schoolId);
    await drain(schoolId);
    expect(await queueRows(hook.id)).toEqual([]);
    await hubFor(env, schoolId).publish([courseEvent(schoolId)]);
    await drain(schoolId);
    expect(rx.to("drop.example.com")).toHaveLength(2);
  });

  it("aborts an attempt in flight and records nothing for it", async () => {
    await withVirtualPlatform(rx, async (sim) => {
      const { schoolId, key, hook, req } = await hangingAttempt(sim, "abort", "hang.example.com");
      expect((await call(`/v3/webhooks/${hook.id}`, { method: "DELETE", key })).status).toBe(200);
      // Simulated time stood still, so no timeout ended it: the delete aborted it, at once.
      expect(req.abortedAt).toBe(req.sentAt);
      await inHub(schoolId, (h) => h.whenIdle());
      await inCourier(hook.id, (c) => c.whenIdle());
      const counts = await inCourier(hook.id, (_c, state) => ({
        queued: state.storage.sql.exec<{ n: number }>(`SELECT COUNT(*) AS n FROM queue`).one().n,
        logged: state.storage.sql.exec<{ n: number }>(`SELECT COUNT(*) AS n FROM log`).one().n,
      }));
      // Nothing logged; its queue row is left to the closed courier's erasure (its alarm).
      expect(counts).toEqual({ queued: 1, logged: 0 });
    });
  });
});

describe("delivery rules (pure)", () => {
  it("judgeAttempt: 2xx succeeded, 410 failed, others pending until the schedule is exhausted", () => {
    const s = [5, 300];
    expect(judgeAttempt(200, 1, s)).toEqual({ status: "succeeded" });
    expect(judgeAttempt(299, 3, s)).toEqual({ status: "succeeded" });
    expect(judgeAttempt(410, 1, s)).toEqual({ status: "failed" });
    expect(judgeAttempt(500, 1, s)).toEqual({ status: "pending", retryInMs: 5000 });
    expect(judgeAttempt(undefined, 2, s)).toEqual({ status: "pending", retryInMs: 300_000 });
    expect(judgeAttempt(500, 3, s)).toEqual({ status: "failed" });
    expect(judgeAttempt(301, 1, [])).toEqual({ status: "failed" });
  });

  it("judgeAttempt: a 429/503 Retry-After waits at least that long, never less than the schedule", () => {
    const s = [5, 300];
    expect(judgeAttempt(429, 1, s, 120_000)).toEqual({ status: "pending", retryInMs: 120_000 });
    expect(judgeAttempt(503, 2, s, 1_000)).toEqual({ status: "pending", retryInMs: 300_000 });
    expect(judgeAttempt(500, 1, s, 120_000)).toEqual({ status: "pending", retryInMs: 5_000 });
    expect(judgeAttempt(429, 3, s, 120_000)).toEqual({ status: "failed" });
  });

  it("parseRetryAfter: delay-seconds or any of the three HTTP-date forms, capped at 24 h", () => {
    const now = Date.parse("2026-09-07T08:00:00.000Z");
    expect(parseRetryAfter("120", now)).toBe(120_000);
    expect(parseRetryAfter(" 0 ", now)).toBe(0);
    expect(parseRetryAfter("Mon, 07 Sep 2026 09:00:00 GMT", now)).toBe(3_600_000);
    expect(parseRetryAfter("Monday, 07-Sep-26 08:00:30 GMT", now)).toBe(30_000);
    expect(parseRetryAfter("Mon Sep  7 08:01:00 2026", now)).toBe(60_000);
    expect(parseRetryAfter("Mon, 07 Sep 2026 07:00:00 GMT", now)).toBe(0);
    expect(parseRetryAfter("99999999", now)).toBe(86_400_000);
    expect(parseRetryAfter("Tue, 07 Sep 2027 08:00:00 GMT", now)).toBe(86_400_000);
    for (const junk of [null, undefined, "", "soon", "-5", "1.5", "2026-09-07T09:00:00Z"]) expect(parseRetryAfter(junk, now)).toBeNull();
  });

  it("parses the deployment settings, falling back to the defaults", () => {
    expect(parseRetrySchedule(undefined)).toEqual([5, 300, 1800, 7200, 18000, 36000, 36000]);
    expect(parseRetrySchedule(" 1, 2 ,3")).toEqual([1, 2, 3]);
    expect(parseRetrySchedule("")).toEqual([]);
    expect(parseRetrySchedule("5,soon")).toEqual([5, 300, 1800, 7200, 18000, 36000, 36000]);
    expect(parseTimeoutMs("2500")).toBe(2500);
    expect(parseTimeoutMs(undefined)).toBe(15_000);
    expect(parseTimeoutMs("0")).toBe(15_000);
    expect(parseTimeoutMs("fast")).toBe(15_000);
  });
});
