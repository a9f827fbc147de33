/**
 * Ordered at the receiver's pace (docs/reference.md § "Event delivery", ordering: "the moment
 * it ends, the next starts"): with `ordering: "course"`, the next delivery of a course starts
 * in the step that records the end of the previous one — also one handed over while that end
 * waits to be recorded with others — and an earlier event resent while a later one of its
 * course is in flight waits for that attempt to end. On the virtual clock:
 * every instant below is simulated milliseconds.
 */
import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it } from "vitest";
import { hubFor } from "../../src/events/hub-client";
import { callJson } from "../support/helpers";
import { courseEvent, newSchool, register } from "../support/webhooks/harness";
import { SimulatedPlatform } from "../support/webhooks/platform-sim";

/** The receivers' answer time (ms). */
const ANSWER_MS = 50;

let sim: SimulatedPlatform | undefined;
afterEach(() => {
  sim?.restore();
  sim = undefined;
});

describe('ordering "course" at the receiver\'s pace', () => {
  it("30 events of one course: each starts the moment the previous answer arrives (20 a second)", async () => {
    sim = SimulatedPlatform.virtual().install();
    sim.delay = [ANSWER_MS, ANSWER_MS];
    const { schoolId, key } = await newSchool("pace");
    const hook = await register(key, "https://pace.example.com/in");
    expect(hook.ordering).toBe("course");
    const events = Array.from({ length: 30 }, () => courseEvent(schoolId, "course.updated", 1));
    await hubFor(env, schoolId).publish(events);
    await sim.advance(2_000);

    const sent = sim.to("pace.example.com");
    expect(sent.map((r) => r.event.id)).toEqual(events.map((e) => e.id));
    const gaps = sent.slice(1).map((r, i) => r.sentAt - sent[i]!.sentAt);
    expect(gaps).toEqual(Array<number>(29).fill(ANSWER_MS));
    // 30 events within 1.5 s: at least 15 a second, the receiver's own pace.
    expect(sent.at(-1)!.sentAt - sent[0]!.sentAt).toBeLessThanOrEqual(1_500);
  });

  it("an event handed over while the previous answer's outcome waits to be recorded starts at once", async () => {
    sim = SimulatedPlatform.virtual().install();
    sim.delay = [ANSWER_MS, ANSWER_MS];
    const host = "pace-handed.example.com";
    const { schoolId, key } = await newSchool("pacehanded");
    await register(key, `https://${host}/in`);
    const hub = hubFor(env, schoolId);
    const first = courseEvent(schoolId, "course.updated", 1);
    await hub.publish([first]);
    await sim.advance(0);
    expect(sim.to(host).map((r) => r.event.id)).toEqual([first.id]);
    const started = sim.to(host)[0]!.sentAt;

    // The first answer arrives with nothing of its course waiting, so its outcome waits to be
    // recorded with others; the course's next event is handed over at that very instant.
    await sim.advance(ANSWER_MS);
    const second = courseEvent(schoolId, "course.updated", 1);
    await hub.publish([second]);
    await sim.advance(1_000);

    const sent = sim.to(host);
    expect(sent.map((r) => r.event.id)).toEqual([first.id, second.id]);
    expect(sent[1]!.sentAt - started).toBe(ANSWER_MS);
  });

  it("an earlier event resent while a later one of its course is in flight waits for that attempt to end", async () => {
    sim = SimulatedPlatform.virtual().install();
    sim.delay = [1, 1];
    const host = "pace-resend.example.com";
    const { schoolId, key } = await newSchool("paceresend");
    const hook = await register(key, `https://${host}/in`);
    const x1 = courseEvent(schoolId, "course.updated", 1);
    const x2 = courseEvent(schoolId, "course.updated", 1);
    // x2's first attempt is answered after 500 ms (within the attempt's timeout).
    let x2Seen = false;
    sim.on(host, (req) => {
      if (req.event.id !== x2.id || x2Seen) return 204;
      x2Seen = true;
      return { status: 204, afterMs: 500 };
    });
    await hubFor(env, schoolId).publish([x1]);
    await sim.advance(100);
    await hubFor(env, schoolId).publish([x2]);
    await sim.advance(10);
    expect(sim.to(host).map((r) => r.event.id)).toEqual([x1.id, x2.id]);
    const x2At = sim.to(host)[1]!.sentAt;

    const resent = await callJson(`/v3/webhooks/${hook.id}/deliveries/${x1.id}/resend`, { method: "POST", key });
    expect(resent.status).toBe(202);
    await sim.advance(100);
    expect(
      sim.to(host).map((r) => r.event.id),
      "x1 resent beside x2 in flight",
    ).toEqual([x1.id, x2.id]);

    await sim.advance(1_000);
    const sent = sim.to(host);
    expect(sent.map((r) => r.event.id)).toEqual([x1.id, x2.id, x1.id]);
    // It started the moment x2's answer arrived.
    expect(sent[2]!.sentAt).toBe(x2At + 500);
    const log = (await callJson(`/v3/webhooks/${hook.id}/deliveries?eventId=${x1.id}`, { key })).body.result as {
      attempt: number;
      trigger: string;
      status: string;
    }[];
    expect(log.map((d) => [d.attempt, d.trigger, d.status])).toEqual([
      [2, "resend", "succeeded"],
      [1, "event", "succeeded"],
    ]);
  });
});
