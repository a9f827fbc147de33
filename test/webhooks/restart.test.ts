/**
 * Work woken after any restart (docs/reference.md § Event delivery, restarts;
 * docs/architecture.md § Invariants, wake-ups): an object reset with work pending has left an
 * alarm that comes within the attempt's timeout (1,000 ms in the suite) plus 60 s, and
 * driving only that alarm finishes the work; a hub that starts wakes its couriers, so even
 * with every alarm lost (`wrangler dev`) one request to the hub resumes delivery. Nothing is
 * sent to the objects after a reset: the virtual clock and the alarms drive them.
 */
import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it } from "vitest";
import { hubFor } from "../../src/events/hub-client";
import { callJson } from "../support/helpers";
import { drainByAlarms, hangingFirstAttempt, resetObject } from "../support/webhooks/alarms";
import { courierStub, courseEvent, hubStub, newSchool, queuedCount, register } from "../support/webhooks/harness";
import { SimulatedPlatform } from "../support/webhooks/platform-sim";

let sim: SimulatedPlatform | undefined;
afterEach(() => {
  sim?.restore();
  sim = undefined;
});

/** The statuses of a registration's log, newest first. */
async function statuses(key: string, webhookId: string): Promise<string[]> {
  const { body } = await callJson(`/v3/webhooks/${webhookId}/deliveries`, { key });
  return (body.result as { status: string }[]).map((d) => d.status);
}

describe("a courier reset with an attempt in flight", () => {
  it("has an alarm within the timeout + 60 s, and that alarm alone sends the delivery again", async () => {
    sim = SimulatedPlatform.virtual().install();
    const { key, host, hook } = await hangingFirstAttempt(sim, "rsflight", "rs-flight.example.com");

    const resetAt = sim.clock.now();
    const alarm = await resetObject(sim, courierStub(hook.id));
    expect(alarm).not.toBeNull();
    expect(alarm! - resetAt).toBeLessThanOrEqual(1_000 + 60_000);

    sim.on(host, 204);
    const ran = await drainByAlarms(sim, [courierStub(hook.id)], 61_000);
    expect(ran.length).toBeGreaterThanOrEqual(1);
    expect(sim.to(host)).toHaveLength(2);
    expect(await statuses(key, hook.id)).toEqual(["succeeded"]);
  });
});

describe("a hub reset with a hand-over owed", () => {
  it("has an alarm within 60 s, and that alarm alone hands the event over", async () => {
    sim = SimulatedPlatform.virtual().install();
    sim.delay = [1, 1];
    const { schoolId, key } = await newSchool("rshub");
    const host = "rs-hub.example.com";
    const hook = await register(key, `https://${host}/in`);
    // The receiver hangs: the courier keeps a backlog, so the hub spaces its next hand-over
    // (an in-memory wait) — the moment of the reset.
    sim.on(host, "hang");
    await hubFor(env, schoolId).publish(Array.from({ length: 20 }, (_, i) => courseEvent(schoolId, "course.updated", i)));
    await sim.advance(1);
    expect(await queuedCount(hook.id)).toBe(20);
    await hubFor(env, schoolId).publish([courseEvent(schoolId, "course.updated", 20)]);
    expect(await queuedCount(hook.id)).toBe(20);

    const resetAt = sim.clock.now();
    const alarm = await resetObject(sim, hubStub(schoolId));
    expect(alarm).not.toBeNull();
    expect(alarm! - resetAt).toBeLessThanOrEqual(60_000);

    const ran = await drainByAlarms(sim, [hubStub(schoolId)], 60_000);
    expect(ran.length).toBeGreaterThanOrEqual(1);
    expect(await queuedCount(hook.id)).toBe(21);
  });
});

describe("every alarm lost at a restart (wrangler dev)", () => {
  it("one request to the hub wakes the courier, which sends its attempt again", async () => {
    sim = SimulatedPlatform.virtual().install();
    const { schoolId, key, host, hook } = await hangingFirstAttempt(sim, "rslost", "rs-lost.example.com");

    await resetObject(sim, courierStub(hook.id), { loseAlarm: true });
    await resetObject(sim, hubStub(schoolId), { loseAlarm: true });
    sim.on(host, 204);
    const list = await callJson("/v3/webhooks", { key });
    expect(list.status).toBe(200);
    // No alarm is run: only the objects' own timers, for 60 s.
    await sim.advance(60_000);
    expect(sim.to(host)).toHaveLength(2);
    expect(await statuses(key, hook.id)).toEqual(["succeeded"]);
  });
});
