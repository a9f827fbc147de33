/**
 * Restart tests' tools: a reset of a real Durable Object that proves itself and records the
 * alarm the object left in storage, `drainByAlarms`, which drives objects by their own
 * alarms on the virtual clock and never calls an object's method (unlike `drain`), so that
 * "the work resumes with no new request" is what a test shows, and `hangingFirstAttempt`,
 * the attempt in flight that a reset cuts.
 */
import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { expect } from "vitest";
import { hubFor } from "../../../src/events/hub-client";
import { courseEvent, newSchool, register } from "./harness";
import type { SimulatedPlatform } from "./platform-sim";
import { abortObject } from "./reset";

/**
 * Resets the object behind `stub` (`abortObject`: the abort proven, the alarm recorded, and
 * lost with `loseAlarm`) and drops its timers on the virtual clock: they died with it.
 *
 * @returns the alarm the object had set (ms), as the runtime would fire it, or `null`.
 */
export async function resetObject(sim: SimulatedPlatform, stub: DurableObjectStub, opts: { loseAlarm?: boolean } = {}): Promise<number | null> {
  const { alarm } = await abortObject(stub, opts);
  sim.forgetTimersOf(stub.id.toString());
  return alarm;
}

/** The alarm set on `stub` (ms), or `null`. Reading it starts an instance, as the alarm would when it fires. */
async function alarmOf(stub: DurableObjectStub): Promise<number | null> {
  return runInDurableObject(stub, (_instance, state) => state.storage.getAlarm());
}

/**
 * Runs the alarms of `stubs`, earliest first, that fall within `withinMs` of simulated time
 * from now: the virtual clock is moved to each one (`sim.advance`, timers firing on the way),
 * the alarm runs (`runDurableObjectAlarm`), and the objects settle. Nothing else is called on
 * the objects. A reset object's alarm must be checked first (`resetObject` returns it):
 * reading an alarm here starts the object, whose constructor may arm one of its own.
 *
 * @returns the instants (ms) of the alarms run, in order.
 */
export async function drainByAlarms(sim: SimulatedPlatform, stubs: readonly DurableObjectStub[], withinMs: number): Promise<number[]> {
  const until = sim.clock.now() + withinMs;
  const ran: number[] = [];
  for (let round = 0; round < 100; round++) {
    let next: { stub: DurableObjectStub; at: number } | null = null;
    for (const stub of stubs) {
      const at = await alarmOf(stub);
      if (at !== null && at <= until && (next === null || at < next.at)) next = { stub, at };
    }
    if (next === null) break;
    await sim.advance(Math.max(0, next.at - sim.clock.now()));
    await runDurableObjectAlarm(next.stub);
    ran.push(next.at);
    await sim.advance(0);
  }
  await sim.advance(Math.max(0, until - sim.clock.now()));
  return ran;
}

/**
 * On `sim` (a virtual platform the caller installed, and restores): a school whose receiver
 * at `host` never answers, an event published, and its first attempt started and hanging.
 */
export async function hangingFirstAttempt(sim: SimulatedPlatform, label: string, host: string) {
  sim.delay = [1, 1];
  const { schoolId, key } = await newSchool(label);
  const hook = await register(key, `https://${host}/in`);
  sim.on(host, "hang");
  const event = courseEvent(schoolId);
  await hubFor(env, schoolId).publish([event]);
  await sim.advance(10);
  expect(sim.to(host)).toHaveLength(1);
  return { schoolId, key, host, hook, event };
}
