/**
 * Two contract details (docs/reference.md § Resend, § Secret rotation): a resend answered 202
 * always leads to one more attempt, also when an attempt of that delivery is in flight; a
 * rotation answers 200 only once the courier holds the new secrets — else 500, and a repeated
 * rotation pushes its own before its 200, as PATCH does.
 */
import { env } from "cloudflare:workers";
import { Webhook } from "standardwebhooks";
import { afterEach, describe, expect, it } from "vitest";
import { hubFor } from "../../src/events/hub-client";
import { callJson } from "../support/helpers";
import { courseEvent, drain, inCourier, newSchool, register } from "../support/webhooks/harness";
import { SimulatedPlatform } from "../support/webhooks/platform-sim";

let sim: SimulatedPlatform | undefined;
afterEach(() => {
  sim?.restore();
  sim = undefined;
});

describe("a resend while an attempt of that delivery is in flight", () => {
  it("answers 202 and one more attempt follows, although the attempt in flight succeeds", async () => {
    sim = SimulatedPlatform.virtual().install();
    sim.delay = [1, 1];
    const { schoolId, key } = await newSchool("rsinflight");
    const host = "rs-inflight.example.com";
    const hook = await register(key, `https://${host}/in`);
    // Its first and only scheduled attempt is answered 204 after 500 ms.
    sim.on(host, { status: 204, afterMs: 500 });
    const event = courseEvent(schoolId);
    await hubFor(env, schoolId).publish([event]);
    await sim.advance(10);
    expect(sim.to(host)).toHaveLength(1);

    const resent = await callJson(`/v3/webhooks/${hook.id}/deliveries/${event.id}/resend`, { method: "POST", key });
    expect(resent.status).toBe(202);
    await sim.advance(2_000);
    expect(sim.to(host).map((r) => r.event.id)).toEqual([event.id, event.id]);
    const log = (await callJson(`/v3/webhooks/${hook.id}/deliveries`, { key })).body.result as { status: string; trigger: string; attempt: number }[];
    expect(log.map((d) => [d.status, d.trigger])).toEqual([
      ["succeeded", "resend"],
      ["succeeded", "event"],
    ]);
  });
});

describe("a rotation its courier cannot hear at once", () => {
  it("answers 500; the repeated rotation pushes its secrets before its 200", async () => {
    sim = new SimulatedPlatform().install();
    const { schoolId, key } = await newSchool("rotfail");
    const host = "rotfail.example.com";
    const hook = await register(key, `https://${host}/in`);
    await hubFor(env, schoolId).publish([courseEvent(schoolId)]);
    await drain(schoolId);
    expect(sim.to(host)).toHaveLength(1);

    sim.failCalls = 1;
    const failed = await callJson(`/v3/webhooks/${hook.id}/secret/rotate`, { method: "POST", key, json: { graceSeconds: 0 } });
    expect([failed.status, failed.body.code]).toEqual([500, "INTERNAL_ERROR"]);
    expect(sim.failCalls).toBe(0);

    const repeated = await callJson(`/v3/webhooks/${hook.id}/secret/rotate`, { method: "POST", key, json: { graceSeconds: 0 } });
    expect(repeated.status).toBe(200);
    const secret = repeated.body.result.secret as string;
    // Before the 200 the courier held it (its stored config), with no previous secret.
    const held = await inCourier(hook.id, (_c, state) => state.storage.kv.get("config") as { secret: string; previousSecret: string | null });
    expect([held.secret, held.previousSecret]).toEqual([secret, null]);
    await hubFor(env, schoolId).publish([courseEvent(schoolId)]);
    await drain(schoolId);
    const req = sim.to(host).at(-1)!;
    expect(req.headers["webhook-signature"]).toMatch(/^v1,\S+$/);
    new Webhook(secret).verify(req.body, req.headers);
    expect(() => new Webhook(hook.secret).verify(req.body, req.headers)).toThrow();
  });
});
