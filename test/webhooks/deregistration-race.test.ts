/**
 * The deregistration promise (docs/reference.md § "DELETE /v3/webhooks/{id}") under concurrency and
 * restarts, judged from the receivers' logs:
 * 1. no event accepted after the delete is ever delivered to the deleted registration;
 * 2. no attempt to it starts after the delete answered;
 * 3. the deletion survives restarts of the hub; meanwhile other registrations lose nothing.
 * Plus isolation between schools' hubs.
 */
import { abortAllDurableObjects, runDurableObjectAlarm } from "cloudflare:test";
import { env } from "cloudflare:workers";
import fc from "fast-check";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { hubFor } from "../../src/events/hub-client";
import type { SchoolEvent } from "../../src/events/types";
import { courierFor, type Handover } from "../../src/webhooks/rpc";
import { callJson } from "../support/helpers";
import { courierConfig, courseEvent, drain, eventually, inHub, newSchool, queuedCount, register } from "../support/webhooks/harness";
import { SimulatedPlatform } from "../support/webhooks/platform-sim";
import { resetHub, settleCourier } from "../support/webhooks/reset";

const rx = new SimulatedPlatform();
beforeAll(() => {
  rx.install();
});
afterAll(() => rx.restore());
// Every dispatch stayed within the platform's limit (6 waiting per I/O context, none queued).
afterEach(() => rx.expectWithinLimit());

describe("the deregistration promise under a race", () => {
  it("hundreds of publishes interleaved with a delete: nothing after the delete reaches it, the other gets everything", async () => {
    const { schoolId, key } = await newSchool("race");
    const doomed = await register(key, "https://doomed.example.com/in");
    const kept = await register(key, "https://survivor.example.com/in");
    rx.delay = [0, 4];
    const hub = hubFor(env, schoolId);
    const before: SchoolEvent[] = [];
    const during: SchoolEvent[] = [];
    const after: SchoolEvent[] = [];
    const publishAll = (into: SchoolEvent[], n: number) =>
      Array.from({ length: n }, (_, i) => {
        const event = courseEvent(schoolId, "course.updated", i);
        into.push(event);
        return hub.publish([event]);
      });

    // Dispatch is running when the delete comes in: this wait is the test's precondition
    // (the receivers' log only grows, so no assertion after it repeats it).
    const first = publishAll(before, 100);
    await eventually(() => rx.to("doomed.example.com").length > 10, "deliveries to the doomed registration");
    // Publishes in flight on both sides of the delete, and alarm runs.
    const racing = [...publishAll(during, 150), runDurableObjectAlarm(hub)];
    const deleted = await callJson(`/v3/webhooks/${doomed.id}`, { method: "DELETE", key });
    const mark = rx.mark();
    expect(deleted.status).toBe(200);
    // Accepted after the delete answered.
    const later = [...publishAll(after, 150), runDurableObjectAlarm(hub)];
    await Promise.all([...first, ...racing, ...later]);
    await drain(schoolId);

    const toDoomed = rx.to("doomed.example.com");
    expect(toDoomed.filter((r) => r.seq > mark)).toEqual([]);
    const afterIds = new Set(after.map((e) => e.id));
    expect(toDoomed.filter((r) => afterIds.has(r.event.id))).toEqual([]);

    const survivor = rx.eventIds("survivor.example.com");
    for (const event of [...before, ...during, ...after]) expect(survivor.has(event.id)).toBe(true);
    expect(survivor.size).toBe(400);

    expect((await callJson(`/v3/webhooks/${doomed.id}`, { method: "DELETE", key })).status).toBe(404);
    expect(await queuedCount(doomed.id)).toBe(0);
    expect(await queuedCount(kept.id)).toBe(0);
  });

  it("deletes racing each other: exactly one 200, the others 404", async () => {
    const { key } = await newSchool("race2");
    const hook = await register(key, "https://twice.example.com/in");
    const answers = await Promise.all(Array.from({ length: 5 }, () => callJson(`/v3/webhooks/${hook.id}`, { method: "DELETE", key })));
    expect(answers.map((a) => a.status).sort()).toEqual([200, 404, 404, 404, 404]);
  });
});

describe("the deregistration promise with couriers", () => {
  /** A hand-over as the hub makes it (a newer config, a new event), arriving at the courier late. */
  const lateHandover = (schoolId: string, webhookId: string, host: string): Handover => {
    const event = courseEvent(schoolId);
    const config = courierConfig(schoolId, webhookId, { url: `https://${host}/in` });
    return {
      config,
      events: [{ seq: 1_000, id: event.id, type: event.type, body: JSON.stringify(event), acceptedAt: Date.now(), skipped: false }],
      upTo: 1_000,
    };
  };

  it("an attempt still on its way to the courier when the delete closed it is refused, also after a restart", async () => {
    const { schoolId, key } = await newSchool("transit");
    const host = "transit.example.com";
    const hook = await register(key, `https://${host}/in`);
    rx.on(host, "hang");
    await hubFor(env, schoolId).publish([courseEvent(schoolId)]);
    await eventually(() => rx.to(host).length === 1, "the attempt to start");
    expect((await callJson(`/v3/webhooks/${hook.id}`, { method: "DELETE", key })).status).toBe(200);
    const mark = rx.mark();
    // The request under way was aborted by the close.
    await eventually(() => rx.to(host)[0]!.abortedAt !== undefined, "the abort");
    // A late hand-over is refused: the courier is closed, it takes nothing.
    expect(await courierFor(env, hook.id).deliver(lateHandover(schoolId, hook.id, host))).toMatchObject({ closed: true });
    await abortAllDurableObjects();
    expect(await courierFor(env, hook.id).deliver(lateHandover(schoolId, hook.id, host))).toMatchObject({ closed: true });
    await settleCourier(schoolId, hook.id);
    expect(rx.to(host).filter((r) => r.seq > mark)).toEqual([]);
  });

  it("attempts queued at the courier when the delete closes it are never sent", async () => {
    const { schoolId, key } = await newSchool("queued");
    const host = "queued.example.com";
    const hook = await register(key, `https://${host}/in`);
    rx.on(host, "hang");
    // One hand-over of ten deliveries: five sent (a courier's 5 slots, docs/architecture.md §
    // The I/O context budget), five queued at the courier.
    await hubFor(env, schoolId).publish(Array.from({ length: 10 }, (_, i) => courseEvent(schoolId, "course.updated", i)));
    await eventually(() => rx.to(host).length === 5, "the courier's slots to fill");
    expect((await callJson(`/v3/webhooks/${hook.id}`, { method: "DELETE", key })).status).toBe(200);
    const mark = rx.mark();
    // The close aborted the five: their slots are free, yet the queued five never go.
    await eventually(() => rx.to(host).every((r) => r.abortedAt !== undefined), "the aborts");
    await settleCourier(schoolId, hook.id);
    expect(rx.to(host).filter((r) => r.seq > mark)).toEqual([]);
    expect(rx.to(host)).toHaveLength(5);
  });

  it("a delete that cannot reach the courier answers 500 and promises nothing; repeating it completes it", async () => {
    const { schoolId, key } = await newSchool("outage");
    const host = "outage.example.com";
    const hook = await register(key, `https://${host}/in`);
    await hubFor(env, schoolId).publish([courseEvent(schoolId)]);
    await drain(schoolId);
    expect(rx.to(host)).toHaveLength(1);
    // The hub tries a close twice (a new stub each time): both fail.
    rx.failCalls = 2;
    const failed = await callJson(`/v3/webhooks/${hook.id}`, { method: "DELETE", key });
    expect(failed.status).toBe(500);
    expect(failed.body.code).toBe("INTERNAL_ERROR");
    // Already a tombstone: listed nowhere, sent nothing.
    expect((await callJson("/v3/webhooks", { key })).body.result).toEqual([]);
    expect((await callJson(`/v3/webhooks/${hook.id}`, { method: "DELETE", key })).status).toBe(200);
    expect((await callJson(`/v3/webhooks/${hook.id}`, { method: "DELETE", key })).status).toBe(404);
    const mark = rx.mark();
    expect(await courierFor(env, hook.id).deliver(lateHandover(schoolId, hook.id, host))).toMatchObject({ closed: true });
    await settleCourier(schoolId, hook.id);
    expect(rx.to(host).filter((r) => r.seq > mark)).toEqual([]);
  });

  it("deletes racing each other on a registration that had deliveries: exactly one 200, the others 404", async () => {
    const { schoolId, key } = await newSchool("race3");
    const host = "twice-used.example.com";
    const hook = await register(key, `https://${host}/in`);
    rx.on(host, "hang");
    // Two courses: with `ordering: course` (the default) one course's second event would wait for the first.
    await hubFor(env, schoolId).publish([courseEvent(schoolId, "course.updated", 1), courseEvent(schoolId, "course.updated", 2)]);
    await eventually(() => rx.to(host).length === 2, "the attempts to start");
    const answers = await Promise.all(Array.from({ length: 5 }, () => callJson(`/v3/webhooks/${hook.id}`, { method: "DELETE", key })));
    expect(answers.map((a) => a.status).sort()).toEqual([200, 404, 404, 404, 404]);
    const mark = rx.mark();
    await hubFor(env, schoolId).publish([courseEvent(schoolId)]);
    await drain(schoolId);
    expect(rx.to(host).filter((r) => r.seq > mark)).toEqual([]);
  });
});

describe("the deregistration promise, property-based", () => {
  type Op = { kind: "publish"; n: number } | { kind: "delete"; hook: number } | { kind: "alarm" } | { kind: "pause"; ms: number };
  const op: fc.Arbitrary<Op> = fc.oneof(
    { weight: 6, arbitrary: fc.record({ kind: fc.constant("publish" as const), n: fc.integer({ min: 1, max: 4 }) }) },
    { weight: 1, arbitrary: fc.record({ kind: fc.constant("delete" as const), hook: fc.integer({ min: 0, max: 2 }) }) },
    { weight: 2, arbitrary: fc.record({ kind: fc.constant("alarm" as const) }) },
    { weight: 2, arbitrary: fc.record({ kind: fc.constant("pause" as const), ms: fc.integer({ min: 0, max: 4 }) }) },
  );
  let run = 0;

  it("random interleavings of publishes, deletes and alarm runs keep the promise", async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(op, { minLength: 5, maxLength: 40 }), async (ops) => {
        run += 1;
        const { schoolId, key } = await newSchool("prop");
        const hosts = [0, 1, 2].map((i) => `p${run}-h${i}.example.com`);
        const hooks = await Promise.all(hosts.map((h) => register(key, `https://${h}/in`)));
        const hub = hubFor(env, schoolId);
        const deletedAt = new Map<number, number>(); // hook index → receivers' mark when its DELETE answered
        const published: { id: string; deletedBefore: Set<number> }[] = [];
        const pending: Promise<unknown>[] = [];
        for (const o of ops) {
          if (o.kind === "publish") {
            const events = Array.from({ length: o.n }, () => courseEvent(schoolId));
            for (const e of events) published.push({ id: e.id, deletedBefore: new Set(deletedAt.keys()) });
            pending.push(hub.publish(events));
          } else if (o.kind === "delete") {
            const res = await callJson(`/v3/webhooks/${hooks[o.hook]!.id}`, { method: "DELETE", key });
            expect(res.status).toBe(deletedAt.has(o.hook) ? 404 : 200);
            if (!deletedAt.has(o.hook)) deletedAt.set(o.hook, rx.mark());
          } else if (o.kind === "alarm") {
            pending.push(runDurableObjectAlarm(hub));
          } else {
            await new Promise((r) => setTimeout(r, o.ms));
          }
        }
        await Promise.all(pending);
        await drain(schoolId);
        for (let i = 0; i < 3; i++) {
          const got = rx.to(hosts[i]!);
          const mark = deletedAt.get(i);
          if (mark !== undefined) expect(got.filter((r) => r.seq > mark)).toEqual([]);
          const ids = new Set(got.map((r) => r.event.id));
          for (const p of published) {
            if (p.deletedBefore.has(i)) expect(ids.has(p.id)).toBe(false);
            else if (mark === undefined) expect(ids.has(p.id)).toBe(true);
          }
        }
      }),
      { numRuns: 12 },
    );
  });
});

describe("hub restarts", () => {
  it("restart between publish and hand-over: the hub's own alarm hands over, nothing reaches the registration deleted meanwhile", async () => {
    // On a virtual clock the alarm the hub arms never fires by itself: the test runs it.
    rx.restore();
    const sim = SimulatedPlatform.virtual().install();
    try {
      const { schoolId, key } = await newSchool("evict");
      const doomed = await register(key, "https://evict-doomed.example.com/in");
      await register(key, "https://evict-keep.example.com/in");
      const events = Array.from({ length: 20 }, (_, i) => courseEvent(schoolId, "course.created", i));
      // Both hand-overs are lost (the couriers cannot be reached): the events wait at the hub.
      sim.failCalls = 2;
      await hubFor(env, schoolId).publish(events);
      await sim.settle();
      expect(sim.failCalls).toBe(0);
      expect(sim.log).toEqual([]);
      // The runtime resets the hub (its memory, its timers, its back-off are gone).
      await resetHub(schoolId);
      const deleted = await callJson(`/v3/webhooks/${doomed.id}`, { method: "DELETE", key });
      expect(deleted.status).toBe(200);
      await abortAllDurableObjects();
      // The hub armed its alarm itself (the test set none) for the pending hand-overs: within
      // 60 s, not its daily prune; run when the clock reaches it, it takes them up again.
      const alarmAt = await inHub(schoolId, (_hub, state) => state.storage.getAlarm());
      expect(alarmAt).not.toBeNull();
      expect(alarmAt! - sim.clock.now()).toBeLessThanOrEqual(60_000);
      await sim.advance(Math.max(0, alarmAt! - sim.clock.now()));
      expect(await runDurableObjectAlarm(hubFor(env, schoolId))).toBe(true);
      await sim.advance(1_000);
      expect(sim.to("evict-doomed.example.com")).toEqual([]);
      expect(sim.eventIds("evict-keep.example.com")).toEqual(new Set(events.map((e) => e.id)));
      // The deletion survived both restarts.
      expect((await callJson(`/v3/webhooks/${doomed.id}`, { method: "DELETE", key })).status).toBe(404);
      expect((await callJson("/v3/webhooks", { key })).body.result.map((h: { id: string }) => h.id)).not.toContain(doomed.id);
    } finally {
      sim.restore();
      rx.install();
    }
  });

  it("restart with attempts in flight: they are sent again (at least once), never to a registration deleted after", async () => {
    const { schoolId, key } = await newSchool("abort");
    const doomed = await register(key, "https://abort-doomed.example.com/in");
    await register(key, "https://abort-keep.example.com/in");
    // Both endpoints hang: the attempts are in flight when the hub is torn down.
    rx.on("abort-doomed.example.com", () => new Promise<number>(() => {}));
    rx.on("abort-keep.example.com", () => new Promise<number>(() => {}));
    const events = Array.from({ length: 12 }, (_, i) => courseEvent(schoolId, "course.updated", i));
    await hubFor(env, schoolId).publish(events);
    await eventually(() => rx.to("abort-keep.example.com").length >= 5 && rx.to("abort-doomed.example.com").length >= 5, "attempts in flight");
    await abortAllDurableObjects();

    rx.on("abort-doomed.example.com", 204);
    rx.on("abort-keep.example.com", 204);
    // The new instance: delete first, then let the alarm (re-armed by the constructor) run.
    const deleted = await callJson(`/v3/webhooks/${doomed.id}`, { method: "DELETE", key });
    expect(deleted.status).toBe(200);
    const mark = rx.mark();
    await drain(schoolId);
    expect(rx.to("abort-doomed.example.com").filter((r) => r.seq > mark)).toEqual([]);
    expect(rx.eventIds("abort-keep.example.com")).toEqual(new Set(events.map((e) => e.id)));
    const log = (await callJson(`/v3/webhooks/${(await callJson("/v3/webhooks", { key })).body.result[0].id}/deliveries`, { key })).body.result;
    expect(log.filter((d: { status: string }) => d.status === "succeeded")).toHaveLength(12);
  });
});

describe("isolation between schools", () => {
  it("a school's events reach only its own registrations", async () => {
    const x = await newSchool("isox");
    const y = await newSchool("isoy");
    await register(x.key, "https://iso-x.example.com/in");
    await register(y.key, "https://iso-y.example.com/in");
    const ex = courseEvent(x.schoolId);
    const ey = courseEvent(y.schoolId);
    await hubFor(env, x.schoolId).publish([ex]);
    await hubFor(env, y.schoolId).publish([ey]);
    await drain(x.schoolId);
    await drain(y.schoolId);
    expect([...rx.eventIds("iso-x.example.com")]).toEqual([ex.id]);
    expect([...rx.eventIds("iso-y.example.com")]).toEqual([ey.id]);
    expect(rx.to("iso-x.example.com")[0]!.event.schoolId).toBe(x.schoolId);
  });
});
