/**
 * The deregistration promise extended to the lifecycle (docs/reference.md § "DELETE /v3/webhooks/{id} (beta)": "neither by the
 * schedule, nor by resend, recover, test or PATCH, which all answer 404"), under a race:
 * resend and recover calls interleaved with the DELETE, judged from the receivers' log.
 * Disable is not delete: a disabled registration keeps its log and can be recovered.
 */
import { env } from "cloudflare:workers";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { hubFor } from "../../src/events/hub-client";
import type { SchoolEvent } from "../../src/events/types";
import { callJson } from "../support/helpers";
import { courseEvent, drain, eventually, makeAllDue, newSchool, queuedCount, register } from "../support/webhooks/harness";
import { SimulatedPlatform } from "../support/webhooks/platform-sim";
import { settleCourier } from "../support/webhooks/reset";

const rx = new SimulatedPlatform();
beforeAll(() => {
  rx.install();
});
afterAll(() => rx.restore());
afterEach(() => rx.expectWithinLimit());

const post = (key: string, path: string, json?: unknown) => callJson(path, { method: "POST", key, json });

describe("the deregistration promise with resend and recover", () => {
  it("resend and recover calls interleaved with a DELETE: after its 200 every call is a 404 and nothing more is sent", async () => {
    const { schoolId, key } = await newSchool("lrace");
    const host = "lrace-doomed.example.com";
    rx.on(host, 410);
    const doomed = await register(key, `https://${host}/in`);
    await register(key, "https://lrace-other.example.com/in");
    const events: SchoolEvent[] = Array.from({ length: 40 }, (_, i) => courseEvent(schoolId, "course.updated", i));
    const since = new Date(Date.now() - 1000).toISOString();
    await hubFor(env, schoolId).publish(events);
    await drain(schoolId);
    // Every delivery to it failed (410) or was skipped (the 410 disabled it: gone): resend and
    // recover have work to do once it is enabled again, and it now answers.
    await eventually(async () => (await callJson(`/v3/webhooks/${doomed.id}`, { key })).body.result.disabledReason === "gone", "the 410 to disable it");
    expect((await callJson(`/v3/webhooks/${doomed.id}`, { method: "PATCH", key, json: { enabled: true } })).status).toBe(200);
    rx.on(host, 200);
    rx.delay = [0, 4];

    // Calls racing the DELETE may each be taken before it (202) or after it (404): the order
    // the test sees their answers in is not the order the courier took them.
    const calls: Promise<number>[] = [];
    const fire = (path: string, json?: unknown) => calls.push(post(key, path, json).then((r) => r.status));
    for (let i = 0; i < 20; i++) {
      fire(`/v3/webhooks/${doomed.id}/deliveries/${events[i]!.id}/resend`);
      if (i % 5 === 0) fire(`/v3/webhooks/${doomed.id}/recover`, { since });
    }
    const deleted = callJson(`/v3/webhooks/${doomed.id}`, { method: "DELETE", key });
    for (let i = 20; i < 40; i++) {
      fire(`/v3/webhooks/${doomed.id}/deliveries/${events[i]!.id}/resend`);
      if (i % 5 === 0) fire(`/v3/webhooks/${doomed.id}/recover`, { since });
    }
    expect((await deleted).status).toBe(200);
    const mark = rx.mark();
    // Calls sent once the 200 is known: all 404, also PATCH, test and rotate, one at a time …
    for (const [method, path, json] of [
      ["POST", `/v3/webhooks/${doomed.id}/deliveries/${events[0]!.id}/resend`, undefined],
      ["POST", `/v3/webhooks/${doomed.id}/recover`, { since }],
      ["POST", `/v3/webhooks/${doomed.id}/test`, undefined],
      ["POST", `/v3/webhooks/${doomed.id}/secret/rotate`, undefined],
      ["PATCH", `/v3/webhooks/${doomed.id}`, { enabled: true }],
      ["GET", `/v3/webhooks/${doomed.id}/deliveries`, undefined],
    ] as const) {
      const res = await callJson(path, { method, key, json });
      expect([method, path, res.status, res.body.code]).toEqual([method, path, 404, "WEBHOOK_NOT_FOUND"]);
    }
    // … and all at once.
    const after = await Promise.all([
      ...events.map((e) => post(key, `/v3/webhooks/${doomed.id}/deliveries/${e.id}/resend`)),
      ...Array.from({ length: 5 }, () => post(key, `/v3/webhooks/${doomed.id}/recover`, { since })),
    ]);
    expect(after.map((r) => [r.status, r.body.code])).toEqual(after.map(() => [404, "WEBHOOK_NOT_FOUND"]));
    const racing = await Promise.all(calls);
    for (const status of racing) expect([202, 404]).toContain(status);
    // What a racing 202 queued, the delete dropped: driven to the end, the courier sends nothing.
    await makeAllDue(schoolId);
    await drain(schoolId);
    await settleCourier(schoolId, doomed.id);
    expect(rx.to(host).filter((r) => r.seq > mark)).toEqual([]);
    expect(await queuedCount(doomed.id)).toBe(0);
  });

  it("disable is not delete: a disabled registration keeps its log and is recovered once enabled; a deleted one cannot be", async () => {
    const { schoolId, key } = await newSchool("dnd");
    rx.on("dnd-a.example.com", 410).on("dnd-b.example.com", 410);
    // Course events only: the webhook.disabled each one's 410 publishes reaches neither.
    const a = await register(key, "https://dnd-a.example.com/in", { events: ["course.updated"] });
    const b = await register(key, "https://dnd-b.example.com/in", { events: ["course.updated"] });
    const since = new Date(Date.now() - 1000).toISOString();
    await hubFor(env, schoolId).publish([courseEvent(schoolId)]);
    await drain(schoolId);
    for (const hook of [a, b]) expect((await callJson(`/v3/webhooks/${hook.id}`, { method: "PATCH", key, json: { enabled: false } })).status).toBe(200);
    expect((await callJson(`/v3/webhooks/${b.id}`, { method: "DELETE", key })).status).toBe(200);
    expect((await callJson(`/v3/webhooks/${a.id}/deliveries`, { key })).body.result).toHaveLength(1);
    expect((await callJson(`/v3/webhooks/${b.id}/deliveries`, { key })).status).toBe(404);
    expect((await callJson(`/v3/webhooks/${a.id}`, { method: "PATCH", key, json: { enabled: true } })).status).toBe(200);
    expect((await callJson(`/v3/webhooks/${b.id}`, { method: "PATCH", key, json: { enabled: true } })).status).toBe(404);
    rx.on("dnd-a.example.com", 200);
    const mark = rx.mark();
    expect((await post(key, `/v3/webhooks/${a.id}/recover`, { since })).body.result).toEqual({ queued: 1, exact: true });
    expect((await post(key, `/v3/webhooks/${b.id}/recover`, { since })).status).toBe(404);
    await drain(schoolId);
    expect(rx.log.filter((r) => r.seq > mark).map((r) => r.host)).toEqual(["dnd-a.example.com"]);
  });
});
