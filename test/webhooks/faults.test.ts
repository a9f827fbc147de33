/**
 * Faults of the real platform as normal events (docs/reference.md § "Event delivery", faults paragraph;
 * docs/architecture.md § "Invariants"): the runtime's own reset of a real Durable Object
 * (`state.abort()` inside `runInDurableObject`) hits the hub during a burst, a courier with
 * requests in flight, and each of them during a DELETE. After each: no accepted event lost,
 * nothing sent to a deleted registration, no attempt answered 2xx logged failed, no
 * registration disabled by the faults, at most one extra copy of an event per reset.
 */
import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { hubFor } from "../../src/events/hub-client";
import type { SchoolEvent } from "../../src/events/types";
import { courierFor } from "../../src/webhooks/rpc";
import { callJson } from "../support/helpers";
import { courseEvent, drain, eventually, newSchool, register } from "../support/webhooks/harness";
import { SimulatedPlatform } from "../support/webhooks/platform-sim";
import { resetCourier, resetHub } from "../support/webhooks/reset";

const rx = new SimulatedPlatform();
beforeAll(() => {
  rx.install();
});
afterAll(() => rx.restore());
afterEach(() => {
  rx.delay = [0, 2];
  rx.expectWithinLimit();
});

/** Publishes `n` events in batches of `batch`, a new stub each time (one may have seen a reset). */
async function publish(schoolId: string, n: number, batch: number, into: SchoolEvent[], from = 0): Promise<void> {
  for (let i = 0; i < n; i += batch) {
    const events = Array.from({ length: Math.min(batch, n - i) }, (_, k) => courseEvent(schoolId, "course.updated", from + i + k));
    into.push(...events);
    for (let tries = 0; ; tries++) {
      try {
        await hubFor(env, schoolId).publish(events);
        break;
      } catch (err) {
        // The outbox sweep republishes what a reset interrupted; publish is idempotent by id.
        if (tries > 5) throw err;
      }
    }
  }
}

/** Drains, retrying once around a reset that is still settling. */
async function settle(schoolId: string): Promise<void> {
  for (let tries = 0; ; tries++) {
    try {
      return await drain(schoolId);
    } catch (err) {
      if (tries > 3) throw err;
    }
  }
}

/** The promises every fault test checks, for `hosts` that must have received `events`. */
async function expectNothingLost(key: string, hosts: string[], events: SchoolEvent[], resets: number): Promise<void> {
  for (const host of hosts) {
    const got = rx.to(host);
    const copies = new Map<string, number>();
    for (const r of got) copies.set(r.event.id, (copies.get(r.event.id) ?? 0) + 1);
    for (const event of events) expect(copies.get(event.id) ?? 0, `${host} got ${event.id}`).toBeGreaterThanOrEqual(1);
    for (const n of copies.values()) expect(n).toBeLessThanOrEqual(1 + resets);
  }
  const hooks = (await callJson("/v3/webhooks", { key })).body.result as { id: string; enabled: boolean }[];
  for (const hook of hooks) {
    expect(hook.enabled, `${hook.id} stays enabled`).toBe(true);
    const failed = (await callJson(`/v3/webhooks/${hook.id}/deliveries?status=failed`, { key })).body.result;
    expect(failed, "no attempt logged failed").toEqual([]);
  }
}

describe("a reset, proven", () => {
  it("throws workerd's abort at the test and leaves a new instance; without one, the instance stays", async () => {
    const { schoolId } = await newSchool("proof");
    const stub = () => hubFor(env, schoolId) as unknown as DurableObjectStub;
    const first = await runInDurableObject(stub(), (instance) => instance as object);
    // Two calls without a reset meet one instance: a new instance is the reset's doing.
    expect(await runInDurableObject(stub(), (instance) => instance as object)).toBe(first);
    const proof = await resetHub(schoolId);
    expect(proof.before).toBe(first);
    expect(proof.error).toMatchObject({ durableObjectReset: true, message: expect.stringMatching(/^reset by the test #\d+$/) });
    expect(await runInDurableObject(stub(), (instance) => instance as object)).toBe(proof.after);
  });
});

describe("a reset of the hub", () => {
  it("during a burst: every event reaches every registration, none twice", async () => {
    const { schoolId, key } = await newSchool("hubreset");
    await register(key, "https://burst-a.example.com/in");
    await register(key, "https://burst-b.example.com/in");
    rx.delay = [1, 5];
    const events: SchoolEvent[] = [];
    const first = publish(schoolId, 120, 10, events);
    await eventually(() => rx.to("burst-a.example.com").length > 5, "the first deliveries", 10_000);
    await resetHub(schoolId);
    // The reset came mid-stream: most of the burst was still to be delivered.
    expect(rx.to("burst-a.example.com").length).toBeLessThan(120);
    await first;
    await publish(schoolId, 60, 10, events, 1000);
    await settle(schoolId);
    await expectNothingLost(key, ["burst-a.example.com", "burst-b.example.com"], events, 0);
  });

  it("during a DELETE: once a DELETE answers 200, nothing more reaches the registration", async () => {
    const { schoolId, key } = await newSchool("hubdel");
    const doomed = await register(key, "https://hubdel-doomed.example.com/in");
    await register(key, "https://hubdel-kept.example.com/in");
    rx.delay = [1, 5];
    const events: SchoolEvent[] = [];
    await publish(schoolId, 40, 10, events);
    await eventually(() => rx.to("hubdel-doomed.example.com").length > 3, "deliveries to the doomed registration", 10_000);
    const deleting = callJson(`/v3/webhooks/${doomed.id}`, { method: "DELETE", key });
    await resetHub(schoolId);
    const first = await deleting;
    expect([200, 404, 500]).toContain(first.status);
    // Repeated until it answers: 200 completes an interrupted delete, 404 means an earlier 200.
    let answer = first.status;
    for (let i = 0; i < 5 && answer === 500; i++) answer = (await callJson(`/v3/webhooks/${doomed.id}`, { method: "DELETE", key })).status;
    expect([200, 404]).toContain(answer);
    const mark = rx.mark();
    await publish(schoolId, 40, 10, events, 1000);
    await settle(schoolId);
    expect(rx.to("hubdel-doomed.example.com").filter((r) => r.seq > mark)).toEqual([]);
    expect((await callJson(`/v3/webhooks/${doomed.id}`, { key })).status).toBe(404);
    await expectNothingLost(key, ["hubdel-kept.example.com"], events, 0);
  });
});

describe("a reset of a courier", () => {
  it("with requests in flight: they are sent again once, never logged failed", async () => {
    const { schoolId, key } = await newSchool("courierreset");
    const hook = await register(key, "https://inflight.example.com/in");
    rx.delay = [20, 40];
    const events: SchoolEvent[] = [];
    await publish(schoolId, 30, 10, events);
    await eventually(() => rx.to("inflight.example.com").length >= 3, "requests in flight", 10_000);
    const inFlight = rx.to("inflight.example.com").length;
    await resetCourier(hook.id);
    rx.delay = [0, 2];
    await settle(schoolId);
    await expectNothingLost(key, ["inflight.example.com"], events, 1);
    // The reset lost the outcomes of the requests it cut: those events were sent again.
    const copies = new Map<string, number>();
    for (const r of rx.to("inflight.example.com")) copies.set(r.event.id, (copies.get(r.event.id) ?? 0) + 1);
    expect([...copies.values()].filter((n) => n === 2).length).toBeGreaterThanOrEqual(1);
    expect(inFlight).toBeLessThan(events.length);
  });

  it("during a DELETE: the delete completes (200, or 500 then 200) and nothing more is sent", async () => {
    const { schoolId, key } = await newSchool("courierdel");
    const doomed = await register(key, "https://courierdel-doomed.example.com/in");
    await register(key, "https://courierdel-kept.example.com/in");
    rx.delay = [5, 15];
    const events: SchoolEvent[] = [];
    await publish(schoolId, 30, 10, events);
    await eventually(() => rx.to("courierdel-doomed.example.com").length >= 2, "deliveries to the doomed registration", 10_000);
    const deleting = callJson(`/v3/webhooks/${doomed.id}`, { method: "DELETE", key });
    await resetCourier(doomed.id);
    let answer = (await deleting).status;
    expect([200, 500]).toContain(answer);
    for (let i = 0; i < 5 && answer === 500; i++) answer = (await callJson(`/v3/webhooks/${doomed.id}`, { method: "DELETE", key })).status;
    expect(answer).toBe(200);
    const mark = rx.mark();
    rx.delay = [0, 2];
    await publish(schoolId, 20, 10, events, 1000);
    await settle(schoolId);
    expect(rx.to("courierdel-doomed.example.com").filter((r) => r.seq > mark)).toEqual([]);
    // A closed courier stays closed across its own restarts: a late hand-over takes nothing.
    await resetCourier(doomed.id);
    const late = await courierFor(env, doomed.id).configure({
      webhookId: doomed.id,
      schoolId,
      hubId: env.SCHOOL_HUB.idFromName(schoolId).toString(),
      version: 1_000,
      url: "https://courierdel-doomed.example.com/in",
      secret: doomed.secret,
      previousSecret: null,
      previousExpiresAt: null,
      headers: {},
      maxPerSecond: null,
      enabled: true,
      disables: 0,
    });
    expect(late.closed).toBe(true);
    await expectNothingLost(key, ["courierdel-kept.example.com"], events, 0);
  });
});
