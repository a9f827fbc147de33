/**
 * A new hub instance wakes each live courier (docs/architecture.md § Faults are normal: work
 * is woken after any restart) and keeps trying, backed off, until the courier is reached —
 * not a fixed number of times. On the virtual clock; no alarm is run: only the hub's timers.
 */
import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it } from "vitest";
import { hubFor } from "../../src/events/hub-client";
import { courierFor } from "../../src/webhooks/rpc";
import { resetObject } from "../support/webhooks/alarms";
import { courseEvent, newSchool, register } from "../support/webhooks/harness";
import { SimulatedPlatform } from "../support/webhooks/platform-sim";

let sim: SimulatedPlatform | undefined;
afterEach(() => {
  sim?.restore();
  sim = undefined;
});

describe("waking couriers after a hub restart", () => {
  it("a courier the first wake-ups cannot reach is woken by a later try, and sends its due retry", async () => {
    sim = SimulatedPlatform.virtual().install();
    sim.delay = [1, 1];
    const { schoolId, key } = await newSchool("wake");
    const host = "wake.example.com";
    sim.on(host, 500);
    const hook = await register(key, `https://${host}/in`);
    await hubFor(env, schoolId).publish([courseEvent(schoolId)]);
    await sim.advance(10);
    expect(sim.to(host)).toHaveLength(1);

    // Both objects restart with every alarm lost (wrangler dev); the courier holds a retry.
    await resetObject(sim, courierFor(env, hook.id) as unknown as DurableObjectStub, { loseAlarm: true });
    await resetObject(sim, hubFor(env, schoolId) as unknown as DurableObjectStub, { loseAlarm: true });
    sim.on(host, 204);
    // The next 6 calls between objects fail: the hub's first 6 wake-ups.
    sim.failCalls = 6;
    await runInDurableObject(hubFor(env, schoolId) as unknown as DurableObjectStub, () => undefined);
    await sim.advance(120_000);

    expect(sim.failCalls).toBe(0);
    expect(sim.to(host)).toHaveLength(2);
  });
});
