/**
 * `maxPerSecond` (docs/reference.md § "POST /v3/webhooks"): no more attempts to a registration start
 * within any one-second window; waiting for the throttle is not part of an attempt's timeout
 * and holds up no other registration. On the simulated platform's virtual clock: every
 * instant below is simulated milliseconds.
 */
import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it } from "vitest";
import { hubFor } from "../../src/events/hub-client";
import { callJson } from "../support/helpers";
import { courseEvent, newSchool, register } from "../support/webhooks/harness";
import { SimulatedPlatform } from "../support/webhooks/platform-sim";

let sim: SimulatedPlatform | undefined;
afterEach(() => {
  sim?.restore();
  sim = undefined;
});

describe("maxPerSecond", () => {
  it("starts at most N attempts in any second, without holding up another registration or timing out", async () => {
    sim = SimulatedPlatform.virtual().install();
    sim.delay = [10, 10];
    const { schoolId, key } = await newSchool("throttle");
    const slow = await register(key, "https://throttled.example.com/in", { maxPerSecond: 2 });
    await register(key, "https://free.example.com/in");
    const t0 = sim.clock.now();
    await hubFor(env, schoolId).publish(Array.from({ length: 7 }, (_, i) => courseEvent(schoolId, "course.updated", i)));
    await sim.advance(5_000);

    const throttled = sim.to("throttled.example.com").map((r) => r.sentAt);
    expect(throttled).toHaveLength(7);
    // Any two attempts two apart started at least a second apart: at most 2 in any second.
    for (let i = 2; i < throttled.length; i++) expect(throttled[i]! - throttled[i - 2]!).toBeGreaterThanOrEqual(1000);
    // The other registration got everything at once.
    const free = sim.to("free.example.com").map((r) => r.sentAt);
    expect(free).toHaveLength(7);
    for (const at of free) expect(at - t0).toBeLessThan(100);
    // Waiting for the throttle is not part of the timeout: every attempt succeeded first time.
    const log = (await callJson(`/v3/webhooks/${slow.id}/deliveries`, { key })).body.result as { status: string; attempt: number }[];
    expect(log.map((d) => [d.status, d.attempt])).toEqual(Array.from({ length: 7 }, () => ["succeeded", 1]));
  });
});
