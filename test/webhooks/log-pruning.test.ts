/**
 * Every school's log is pruned (docs/reference.md § "Events feed: GET /v3/events": retained 7 days;
 * docs/architecture.md § Bounded work and storage): the hub arms its alarm whenever it
 * retains events — on a publish that reaches no registration (a school that uses only the
 * course API or the feed), and in the constructor of an instance whose prune chain had ended —
 * and its alarms alone, run on a virtual clock when it reaches them, delete the events older
 * than 7 days and keep the others.
 */
import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it } from "vitest";
import { hubFor } from "../../src/events/hub-client";
import { drainByAlarms, resetObject } from "../support/webhooks/alarms";
import { courseEvent, hubStub, inHub, newSchool } from "../support/webhooks/harness";
import { SimulatedPlatform } from "../support/webhooks/platform-sim";

let sim: SimulatedPlatform | undefined;
afterEach(() => {
  sim?.restore();
  sim = undefined;
});

const DAY = 86_400_000;

/** The ids of the events the hub's log holds, in log order. */
const logged = (schoolId: string) =>
  inHub(schoolId, (_h, state) =>
    state.storage.sql
      .exec<{ id: string }>(`SELECT id FROM events ORDER BY seq`)
      .toArray()
      .map((r) => r.id),
  );

/**
 * Runs the hub's own alarms, each when the virtual clock reaches it, for `days` of simulated
 * time (`drainByAlarms`, 10 days at most per call: it runs 100 alarms at most).
 */
async function liveDays(sim: SimulatedPlatform, schoolId: string, days: number): Promise<number[]> {
  return drainByAlarms(sim, [hubStub(schoolId)], days * DAY);
}

describe("a school whose events reach no registration", () => {
  it("has its alarm armed by the publish, and its alarms alone prune the events older than 7 days", async () => {
    sim = SimulatedPlatform.virtual().install();
    const { schoolId } = await newSchool("noreg");
    const t0 = sim.clock.now();
    const first = courseEvent(schoolId, "course.created", 1);
    await hubFor(env, schoolId).publish([first]);
    const armed = await inHub(schoolId, (_h, state) => state.storage.getAlarm());
    expect(armed, "the publish armed the hub's alarm").not.toBeNull();

    await sim.advance(3 * DAY);
    const second = courseEvent(schoolId, "course.updated", 2);
    await hubFor(env, schoolId).publish([second]);
    expect(await logged(schoolId)).toEqual([first.id, second.id]);

    // Day 8: the first event is older than 7 days, the second 5 days old.
    const ran = await liveDays(sim, schoolId, 5);
    expect(sim.clock.now()).toBe(t0 + 8 * DAY);
    expect(ran.length).toBeGreaterThan(0);
    expect(await logged(schoolId)).toEqual([second.id]);
    // Still armed for the event it retains; by day 11 it is gone too.
    expect(await inHub(schoolId, (_h, state) => state.storage.getAlarm())).not.toBeNull();
    await liveDays(sim, schoolId, 3);
    expect(await logged(schoolId)).toEqual([]);
  });
});

describe("a hub whose prune chain had ended", () => {
  it("arms its alarm when an instance starts, and its alarms prune the log again", async () => {
    sim = SimulatedPlatform.virtual().install();
    const { schoolId } = await newSchool("ended");
    const old = courseEvent(schoolId, "course.created", 1);
    await hubFor(env, schoolId).publish([old]);
    // The runtime resets the hub and its alarm is lost: the chain ended with events retained.
    await resetObject(sim, hubStub(schoolId), { loseAlarm: true });
    // A quiet week and more: nobody calls the school.
    await sim.advance(8 * DAY);

    // The next instance (started here by reading its alarm, as any call would) arms one itself.
    const armed = await runInDurableObject(hubStub(schoolId), (_h, state) => state.storage.getAlarm());
    expect(armed, "the new instance armed the alarm").not.toBeNull();
    expect(await logged(schoolId)).toEqual([old.id]);
    await liveDays(sim, schoolId, 1);
    expect(await logged(schoolId)).toEqual([]);
  });
});
