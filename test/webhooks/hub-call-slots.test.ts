/**
 * The hub's calls to its couriers share 6 slots (docs/architecture.md § The I/O context
 * budget): a hand-over that waited for a slot starts as soon as any call frees one, not at
 * the next alarm; and a resend whose hand-over waited for a slot while its registration was
 * deleted answers the contract's 404, not a 500 from an older failed hand-over. The hub's
 * calls are held (`holdCalls`: a slow courier) to fill its slots; virtual clock.
 */
import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it } from "vitest";
import { hubFor } from "../../src/events/hub-client";
import type { SchoolHub } from "../../src/webhooks/hub/school-hub";
import { callJson } from "../support/helpers";
import { courseEvent, eventually, inHub, newSchool, register } from "../support/webhooks/harness";
import { SimulatedPlatform } from "../support/webhooks/platform-sim";

let sim: SimulatedPlatform | undefined;
afterEach(() => {
  sim?.restore();
  sim = undefined;
});

/** The hub's calls waiting for a slot (its `Couriers`' queue). */
const waiting = (schoolId: string) => inHub(schoolId, (hub: SchoolHub) => (hub as unknown as { couriers: { waiters: unknown[] } }).couriers.waiters.length);

/** Six registrations, a test event of each forwarded by the hub and held (`holdCalls`): every slot in use. */
async function fillSlots(schoolId: string, key: string, label: string) {
  const holders = [];
  for (let i = 0; i < 6; i++) holders.push(await register(key, `https://${label}-${i}.example.com/in`, { events: ["course.created"] }));
  const release = sim!.holdCalls();
  const tests = holders.map((h) => callJson(`/v3/webhooks/${h.id}/test`, { method: "POST", key }));
  await eventually(
    async () => (await inHub(schoolId, (hub) => (hub as unknown as { couriers: { used: number } }).couriers.used)) === 6,
    "six calls of the hub under way",
  );
  return {
    release: async () => {
      release();
      for (const t of tests) expect((await t).status).toBe(202);
    },
  };
}

describe("the hub's call slots", () => {
  it("a hand-over waiting for a slot starts as soon as a forwarded call frees one", async () => {
    sim = SimulatedPlatform.virtual().install();
    sim.delay = [1, 1];
    const { schoolId, key } = await newSchool("slots");
    const host = "slots-target.example.com";
    await register(key, `https://${host}/in`, { events: ["course.updated"] });
    const held = await fillSlots(schoolId, key, "slots-hold");

    await hubFor(env, schoolId).publish([courseEvent(schoolId, "course.updated")]);
    expect(sim.to(host)).toHaveLength(0);
    await held.release();
    // No alarm is run: only the objects' own timers, for 1 s.
    await sim.advance(1_000);
    expect(sim.to(host)).toHaveLength(1);
  });

  it("a resend whose hand-over waited while its registration was deleted answers 404, despite an older failed hand-over", async () => {
    sim = SimulatedPlatform.virtual().install();
    sim.delay = [1, 1];
    const { schoolId, key } = await newSchool("stale");
    const hook = await register(key, "https://stale-target.example.com/in", { events: ["course.updated"] });
    // Its hand-over fails once (backed off: a failure on record).
    sim.failCalls = 1;
    const event = courseEvent(schoolId, "course.updated");
    await hubFor(env, schoolId).publish([event]);
    expect(sim.failCalls).toBe(0);
    const held = await fillSlots(schoolId, key, "stale-hold");

    const resend = callJson(`/v3/webhooks/${hook.id}/deliveries/${event.id}/resend`, { method: "POST", key });
    await eventually(async () => (await waiting(schoolId)) === 1, "the resend's hand-over to wait for a slot");
    const deleted = callJson(`/v3/webhooks/${hook.id}`, { method: "DELETE", key });
    await eventually(async () => (await waiting(schoolId)) === 2, "the delete's close to wait for a slot");
    await held.release();

    const answer = await resend;
    expect([answer.status, answer.body.code]).toEqual([404, "WEBHOOK_NOT_FOUND"]);
    expect((await deleted).status).toBe(200);
  });
});
