/**
 * Faults of the real platform as normal events (docs/reference.md § "Event delivery", faults paragraph;
 * docs/architecture.md § "Invariants"): the runtime's own reset of a real Durable Object
 * (`state.abort()` inside `runInDurableObject`) hits the hub during a burst, a courier with
 * requests in flight, and each of them during a DELETE. After each: no accepted event lost,
 * nothing sent to a deleted registration, no attempt answered 2xx logged failed, no
 * registration disabled by the faults, at most one extra copy of an event per reset.
 */
import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { hubFor } from "../../src/events/hub-client";
import type { SchoolEvent } from "../../src/events/types";
import { courierFor } from "../../src/webhooks/rpc";
import { callJson } from "../support/helpers";
import { courierConfig, courseEvent, drain, eventually, inCourier, inHub, newSchool, register } from "../support/webhooks/harness";
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

/**
 * Publishes `n` events in batches of `batch`, one at a time, a new stub each time (one may
 * have seen a reset). A publish a reset of the hub cut is sent once more, as the outbox's
 * sweep republishes it in production (publish is idempotent by id); a second failure fails.
 *
 * @returns how many publishes were sent again: at most one per reset while it ran.
 */
async function publish(schoolId: string, n: number, batch: number, into: SchoolEvent[], from = 0): Promise<number> {
  let again = 0;
  for (let i = 0; i < n; i += batch) {
    const events = Array.from({ length: Math.min(batch, n - i) }, (_, k) => courseEvent(schoolId, "course.updated", from + i + k));
    into.push(...events);
    await hubFor(env, schoolId)
      .publish(events)
      .catch(() => {
        again += 1;
        return hubFor(env, schoolId).publish(events);
      });
  }
  return again;
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
    // Publishes go one at a time: the reset cut at most the one under way.
    expect(await first).toBeLessThanOrEqual(1);
    expect(await publish(schoolId, 60, 10, events, 1000)).toBe(0);
    await drain(schoolId);
    await expectNothingLost(key, ["burst-a.example.com", "burst-b.example.com"], events, 0);
  });

  it("during a DELETE: the DELETE it cuts answers 500, the alarm completes it (then 404); nothing more reaches the registration", async () => {
    const { schoolId, key } = await newSchool("hubdel");
    const doomed = await register(key, "https://hubdel-doomed.example.com/in");
    await register(key, "https://hubdel-kept.example.com/in");
    rx.delay = [1, 5];
    const events: SchoolEvent[] = [];
    expect(await publish(schoolId, 40, 10, events)).toBe(0);
    await eventually(() => rx.to("hubdel-doomed.example.com").length > 3, "deliveries to the doomed registration", 10_000);
    // The doomed courier takes no call until released, so the DELETE waits at its close
    // (the hub's tombstone written) when the reset comes.
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    let blocked = false;
    const holding = inCourier(doomed.id, (_c, state) =>
      state.blockConcurrencyWhile(() => {
        blocked = true;
        return held;
      }),
    );
    await eventually(() => blocked, "the courier to be held");
    const deleting = callJson(`/v3/webhooks/${doomed.id}`, { method: "DELETE", key });
    const courierState = () =>
      inHub(schoolId, (_h, state) =>
        state.storage.sql
          .exec<{ deletedAt: number | null; courier: number }>(`SELECT deleted_at AS deletedAt, courier FROM webhooks WHERE id = ?`, doomed.id)
          .one(),
      );
    await eventually(async () => (await courierState()).deletedAt !== null, "the DELETE to wait at the courier's close");
    await resetHub(schoolId);
    const cut = await deleting;
    // Cut before the close was confirmed: it promises nothing (docs/architecture.md § The deregistration promise).
    expect([cut.status, cut.body.code]).toEqual([500, "INTERNAL_ERROR"]);
    release();
    await holding;
    // The new hub armed its alarm for the close it owes; run (or joined), it completes the
    // close (courier state 2: confirmed closed), and the id is then already deleted.
    await runDurableObjectAlarm(hubFor(env, schoolId));
    await eventually(async () => (await courierState()).courier === 2, "the alarm to complete the close");
    expect((await callJson(`/v3/webhooks/${doomed.id}`, { method: "DELETE", key })).status).toBe(404);
    const mark = rx.mark();
    expect(await publish(schoolId, 40, 10, events, 1000)).toBe(0);
    await drain(schoolId);
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
    expect(await publish(schoolId, 30, 10, events)).toBe(0);
    await eventually(() => rx.to("inflight.example.com").length >= 3, "requests in flight", 10_000);
    const inFlight = rx.to("inflight.example.com").length;
    await resetCourier(hook.id);
    rx.delay = [0, 2];
    await drain(schoolId);
    await expectNothingLost(key, ["inflight.example.com"], events, 1);
    // The reset lost the outcomes of the requests it cut: those events were sent again.
    const copies = new Map<string, number>();
    for (const r of rx.to("inflight.example.com")) copies.set(r.event.id, (copies.get(r.event.id) ?? 0) + 1);
    expect([...copies.values()].filter((n) => n === 2).length).toBeGreaterThanOrEqual(1);
    expect(inFlight).toBeLessThan(events.length);
  });

  it("during a DELETE: the delete completes (200) and nothing more is sent", async () => {
    const { schoolId, key } = await newSchool("courierdel");
    const doomed = await register(key, "https://courierdel-doomed.example.com/in");
    await register(key, "https://courierdel-kept.example.com/in");
    rx.delay = [5, 15];
    const events: SchoolEvent[] = [];
    expect(await publish(schoolId, 30, 10, events)).toBe(0);
    await eventually(() => rx.to("courierdel-doomed.example.com").length >= 2, "deliveries to the doomed registration", 10_000);
    const deleting = callJson(`/v3/webhooks/${doomed.id}`, { method: "DELETE", key });
    await resetCourier(doomed.id);
    // One reset of the courier: a close it cut is retried once on a new stub, which reaches
    // the new instance (docs/architecture.md § The deregistration promise), so the DELETE completes.
    expect((await deleting).status).toBe(200);
    const mark = rx.mark();
    rx.delay = [0, 2];
    expect(await publish(schoolId, 20, 10, events, 1000)).toBe(0);
    await drain(schoolId);
    expect(rx.to("courierdel-doomed.example.com").filter((r) => r.seq > mark)).toEqual([]);
    // A closed courier stays closed across its own restarts: a late hand-over takes nothing.
    await resetCourier(doomed.id);
    const late = await courierFor(env, doomed.id).configure(
      courierConfig(schoolId, doomed.id, { url: "https://courierdel-doomed.example.com/in", secret: doomed.secret }),
    );
    expect(late.closed).toBe(true);
    await expectNothingLost(key, ["courierdel-kept.example.com"], events, 0);
  });
});
