/**
 * The retry schedule's jitter (docs/reference.md § Event delivery): each wait is lengthened by
 * a random 0–10 %, drawn for each attempt. Both bounds are checked over many draws, and the
 * draws must spread over the whole range: a schedule without jitter, or with a narrower or
 * wider one, fails. On a virtual clock, so each wait is measured exactly.
 */
import { runDurableObjectAlarm } from "cloudflare:test";
import { env } from "cloudflare:workers";
import fc from "fast-check";
import { afterEach, describe, expect, it } from "vitest";
import { hubFor } from "../../src/events/hub-client";
import { judgeAttempt } from "../../src/webhooks/delivery/schedule";
import { courseEvent, eventually, inCourier, newSchool, register } from "../support/webhooks/harness";
import { SimulatedPlatform } from "../support/webhooks/platform-sim";

let sim: SimulatedPlatform | undefined;
afterEach(() => {
  sim?.restore();
  sim = undefined;
});

/** Draws: 200 deliveries, each failing once, each retry's wait drawn on its own. */
const DRAWS = 200;

describe("retry jitter", () => {
  it("every first retry waits 5 s lengthened by 0–10 %, and the waits spread over the whole range", async () => {
    sim = SimulatedPlatform.virtual().install();
    const platform = sim;
    const { schoolId, key } = await newSchool("jitter");
    const host = "jitter.example.com";
    platform.on(host, { status: 500, afterMs: 0 });
    const hook = await register(key, `https://${host}/in`);
    const hub = hubFor(env, schoolId);
    await hub.publish(Array.from({ length: DRAWS }, (_, i) => courseEvent(schoolId, "course.updated", i)));
    await runDurableObjectAlarm(hub);
    /** The logged attempts: when each was sent (it was answered at once) and its next attempt. */
    const logged = () =>
      inCourier(hook.id, (_c, state) =>
        state.storage.sql.exec<{ attempted_at: number; next_attempt_at: number }>(`SELECT attempted_at, next_attempt_at FROM log`).toArray(),
      );
    await eventually(
      async () => {
        await platform.advance(10);
        return (await logged()).length === DRAWS;
      },
      `${DRAWS} first attempts to be logged`,
      20_000,
    );
    const waits = (await logged()).map((r) => r.next_attempt_at - r.attempted_at);
    expect(waits).toHaveLength(DRAWS);
    // Both bounds: never shorter than the schedule's 5 s, never more than 10 % longer.
    for (const wait of waits) {
      expect(wait).toBeGreaterThanOrEqual(5_000);
      expect(wait).toBeLessThanOrEqual(5_500);
    }
    // Each tenth of the range (50 ms) is drawn: with a uniform 0–10 % over 200 draws, a tenth
    // stays empty with a probability under 1e-8; without jitter, nine of them are empty.
    const tenths = new Set(waits.map((w) => Math.min(9, Math.floor((w - 5_000) / 50))));
    expect([...tenths].sort((a, b) => a - b)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
  });

  it("judgeAttempt lengthens every scheduled wait by jitter × 10 %, for any jitter in [0, 1)", () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 36_000 }), fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }), (seconds, jitter) => {
        const verdict = judgeAttempt(500, 1, [seconds], null, jitter);
        expect(verdict.status).toBe("pending");
        const wait = (verdict as { retryInMs: number }).retryInMs;
        expect(wait).toBeGreaterThanOrEqual(seconds * 1_000);
        expect(wait).toBeLessThanOrEqual(seconds * 1_100);
        expect(Math.abs(wait - seconds * 1_000 * (1 + jitter / 10))).toBeLessThanOrEqual(0.5);
      }),
      { seed: 2026, numRuns: 500 },
    );
  });
});
