/**
 * Course writes → outbox → hub → receiver (API.md § "Event delivery", DESIGN.md outbox):
 * events checked at a receiver in the contract's order; the cron sweep re-publishes exactly
 * once when the hub call failed; a duplicate publish delivers nothing twice.
 */
import { createExecutionContext, createScheduledController, env, waitOnExecutionContext } from "cloudflare:test";
import { Webhook } from "standardwebhooks";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { hubFor } from "../src/events/hub-client";
import { publishEvents, SWEEP_AFTER_MS, sweepOutbox } from "../src/events/outbox";
import type { SchoolEvent } from "../src/events/types";
import worker from "../src/index";
import { callJson } from "./helpers";
import { checkEvent, checkResponse } from "./openapi-check";
import { drain, newSchool, register } from "./webhooks/harness";
import { Receivers } from "./webhooks/receivers";

const receivers = new Receivers();
beforeAll(() => {
  receivers.install();
});
afterAll(() => receivers.restore());

const base = { name: "Réseaux", startDateTime: "2026-10-05T08:00:00Z", endDateTime: "2026-10-05T10:00:00Z" };

async function unpublished(schoolId: string): Promise<number> {
  const row = await env.DB.prepare("SELECT count(*) AS n FROM outbox WHERE school_id = ? AND published_at IS NULL").bind(schoolId).first<{ n: number }>();
  return row!.n;
}

describe("course writes deliver their events", () => {
  it("in the contract's order, signed, with the course after the write", async () => {
    const { schoolId, key } = await newSchool("w");
    const hook = await register(key, "https://writes.example.com/hook");
    const created = await callJson("/v3/courses", { method: "POST", key, json: base });
    const id = created.body.result.id;
    await callJson(`/v3/courses/${id}`, { method: "PATCH", key, json: { archived: true, absencesSent: true } });
    await callJson(`/v3/courses/${id}`, { method: "PATCH", key, json: { archived: true } }); // no-op
    const last = await callJson(`/v3/courses/${id}`, { method: "PATCH", key, json: { archived: false, name: "Réseaux 2" } });
    expect(await unpublished(schoolId)).toBe(0);
    await drain(schoolId);
    const got = receivers.to("writes.example.com");
    expect(got.map((r) => r.event.type)).toEqual([
      "course.created",
      "course.updated",
      "course.archived",
      "course.absences_sent",
      "course.updated",
      "course.unarchived",
    ]);
    const wh = new Webhook(hook.secret);
    for (const r of got) expect(wh.verify(r.body, r.headers)).toMatchObject({ id: r.event.id, schoolId });
    // Each delivered body is as the document's `webhooks` describes it.
    for (const r of got) checkEvent(JSON.parse(r.body));
    expect(got.at(-1)!.event.data.course).toEqual(last.body.result);
  });
});

describe("the outbox sweep", () => {
  it("re-publishes exactly once when the hub call failed, and a duplicate publish delivers nothing twice", async () => {
    const { schoolId, key } = await newSchool("o");
    await register(key, "https://sweep.example.com/hook");
    // A hub that cannot be reached: the write still succeeds, its events stay in the outbox.
    const unreachable = {
      ...env,
      SCHOOL_HUB: { idFromName: () => ({}), get: () => ({ publish: () => Promise.reject(new Error("hub unreachable")) }) },
    } as unknown as typeof env;
    const post = await worker.fetch(
      new Request("http://api.test/v3/courses", {
        method: "POST",
        headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
        body: JSON.stringify(base),
      }),
      unreachable,
      createExecutionContext(),
    );
    expect(post.status).toBe(201);
    await checkResponse("POST", "http://api.test/v3/courses", post);
    expect(await unpublished(schoolId)).toBe(1);

    // Too young for the sweep (30 s): nothing happens.
    expect((await sweepOutbox(env)).republished).toBe(0);
    // Later: the sweep publishes it and marks it.
    const later = Date.now() + SWEEP_AFTER_MS + 1000;
    expect(await sweepOutbox(env, later)).toMatchObject({ republished: 1, failed: 0 });
    expect(await unpublished(schoolId)).toBe(0);
    expect(await sweepOutbox(env, later)).toMatchObject({ republished: 0 });

    // The scheduled handler runs the same sweep.
    const ctx = createExecutionContext();
    await worker.scheduled(createScheduledController({ scheduledTime: new Date(later), cron: "* * * * *" }), env, ctx);
    await waitOnExecutionContext(ctx);

    // A publish repeated by hand (as a sweep racing a slow request would) is a duplicate.
    const { payload } = (await env.DB.prepare("SELECT payload FROM outbox WHERE school_id = ?").bind(schoolId).first<{ payload: string }>())!;
    const event = JSON.parse(payload) as SchoolEvent;
    expect(await hubFor(env, schoolId).publish([event])).toMatchObject({ accepted: 0, duplicates: 1, deliveries: 0 });
    expect(await publishEvents(env, schoolId, [event])).toBe(true);

    await drain(schoolId);
    const got = receivers.to("sweep.example.com");
    expect(got.map((r) => r.event.id)).toEqual([event.id]);
    expect(got[0]!.event.type).toBe("course.created");
    checkEvent(JSON.parse(got[0]!.body));
  });

  it("prunes rows published more than 7 days ago", async () => {
    const old = Date.now() - 8 * 24 * 3600 * 1000;
    await env.DB.prepare("INSERT INTO outbox (event_id, school_id, payload, created_at, published_at) VALUES ('evt_old', 'sch_x', '{}', ?, ?)")
      .bind(old, old)
      .run();
    await env.DB.prepare("INSERT INTO outbox (event_id, school_id, payload, created_at, published_at) VALUES ('evt_recent', 'sch_x', '{}', ?, ?)")
      .bind(Date.now(), Date.now())
      .run();
    expect((await sweepOutbox(env)).pruned).toBe(1);
    const left = await env.DB.prepare("SELECT event_id FROM outbox WHERE school_id = 'sch_x'").all<{ event_id: string }>();
    expect(left.results.map((r) => r.event_id)).toEqual(["evt_recent"]);
  });
});
