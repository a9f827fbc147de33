/**
 * Course writes → outbox → hub → receiver (API.md § "Event delivery", DESIGN.md outbox):
 * events checked at a receiver in the contract's order; the cron sweep re-publishes exactly
 * once when the hub call failed; a duplicate publish delivers nothing twice; the sweep is
 * fair per school: a failing or hanging hub holds up only its own school's events.
 */
import { createExecutionContext, createScheduledController, env, waitOnExecutionContext } from "cloudflare:test";
import { Webhook } from "standardwebhooks";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { hubFor } from "../../src/events/hub-client";
import { publishEvents, SWEEP_AFTER_MS, sweepOutbox } from "../../src/events/outbox";
import type { SchoolEvent } from "../../src/events/types";
import worker from "../../src/index";
import { callJson } from "../support/helpers";
import { checkEvent, checkResponse } from "../support/openapi-check";
import { shardOf } from "../support/shards";
import { courseEvent, drain, newSchool, register } from "../support/webhooks/harness";
import { Receivers } from "../support/webhooks/receivers";

const receivers = new Receivers();
beforeAll(() => {
  receivers.install();
});
afterAll(() => receivers.restore());

const base = { name: "Réseaux", startDateTime: "2026-10-05T08:00:00Z", endDateTime: "2026-10-05T10:00:00Z" };

async function unpublished(schoolId: string): Promise<number> {
  const row = await (await shardOf(schoolId))
    .prepare("SELECT count(*) AS n FROM outbox WHERE school_id = ? AND published_at IS NULL")
    .bind(schoolId)
    .first<{ n: number }>();
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
    const { payload } = (await (
      await shardOf(schoolId)
    )
      .prepare("SELECT payload FROM outbox WHERE school_id = ?")
      .bind(schoolId)
      .first<{ payload: string }>())!;
    const event = JSON.parse(payload) as SchoolEvent;
    expect(await hubFor(env, schoolId).publish([event])).toMatchObject({ accepted: 0, duplicates: 1, deliveries: 0 });
    expect(await publishEvents(env, await shardOf(schoolId), schoolId, [event])).toBe(true);

    await drain(schoolId);
    const got = receivers.to("sweep.example.com");
    expect(got.map((r) => r.event.id)).toEqual([event.id]);
    expect(got[0]!.event.type).toBe("course.created");
    checkEvent(JSON.parse(got[0]!.body));
  });

  it("prunes rows published more than 7 days ago", async () => {
    const old = Date.now() - 8 * 24 * 3600 * 1000;
    await env.SHARD_0.prepare("INSERT INTO outbox (event_id, school_id, payload, created_at, published_at) VALUES ('evt_old', 'sch_x', '{}', ?, ?)")
      .bind(old, old)
      .run();
    await env.SHARD_0.prepare("INSERT INTO outbox (event_id, school_id, payload, created_at, published_at) VALUES ('evt_recent', 'sch_x', '{}', ?, ?)")
      .bind(Date.now(), Date.now())
      .run();
    expect((await sweepOutbox(env)).pruned).toBe(1);
    const left = await env.SHARD_0.prepare("SELECT event_id FROM outbox WHERE school_id = 'sch_x'").all<{ event_id: string }>();
    expect(left.results.map((r) => r.event_id)).toEqual(["evt_recent"]);
  });
});

/** Puts `events` of `schoolId` in the outbox, unpublished, created from `createdAt` on (1 ms apart, in order). */
async function queueUnpublished(schoolId: string, events: SchoolEvent[], createdAt: number): Promise<void> {
  await (await shardOf(schoolId))
    .prepare("INSERT INTO outbox (event_id, school_id, payload, created_at) SELECT json_extract(value, '$.id'), ?, value, ? + key FROM json_each(?)")
    .bind(schoolId, createdAt, JSON.stringify(events))
    .run();
}

async function unpublishedIds(schoolId: string): Promise<string[]> {
  const { results } = await (await shardOf(schoolId))
    .prepare("SELECT event_id FROM outbox WHERE school_id = ? AND published_at IS NULL ORDER BY created_at")
    .bind(schoolId)
    .all<{ event_id: string }>();
  return results.map((r) => r.event_id);
}

const eventsOf = (schoolId: string, n: number) => Array.from({ length: n }, (_, i) => courseEvent(schoolId, "course.updated", i));

type Hub = { publish(events: SchoolEvent[]): Promise<unknown> };

/**
 * `env` whose hubs are `hubs[schoolId]` where given (the real SchoolHub otherwise), counting
 * the stubs taken per school: the sweep must take a fresh one per call.
 */
function envWithHubs(hubs: Record<string, Hub>) {
  const stubsTaken = new Map<string, number>();
  const SCHOOL_HUB = {
    idFromName: (name: string) => ({ name }),
    get: ({ name }: { name: string }) => {
      stubsTaken.set(name, (stubsTaken.get(name) ?? 0) + 1);
      return hubs[name] ?? env.SCHOOL_HUB.get(env.SCHOOL_HUB.idFromName(name));
    },
  };
  return { env: { ...env, SCHOOL_HUB } as unknown as typeof env, stubsTaken };
}

describe("the outbox sweep is fair per school", () => {
  const later = Date.now() + SWEEP_AFTER_MS + 60_000;
  const hour = 3_600_000;

  it("a failing hub and a hanging hub hold up only their own school; the others' events are published", async () => {
    const [failing, hanging, healthy] = [await newSchool("fail"), await newSchool("hang"), await newSchool("ok")];
    // The failing school's backlog is older and larger than a batch: a sweep that took the
    // oldest rows of all schools together would leave the healthy school's events behind it.
    await queueUnpublished(failing.schoolId, eventsOf(failing.schoolId, 600), later - 3 * hour);
    await queueUnpublished(hanging.schoolId, eventsOf(hanging.schoolId, 3), later - 2 * hour);
    const healthyEvents = eventsOf(healthy.schoolId, 2);
    await queueUnpublished(healthy.schoolId, healthyEvents, later - hour);

    const { env: flaky, stubsTaken } = envWithHubs({
      [failing.schoolId]: { publish: () => Promise.reject(new Error("hub overloaded")) },
      [hanging.schoolId]: { publish: () => new Promise(() => {}) },
    });
    // A short publish timeout, so that the hanging hub is given up on quickly.
    const result = await sweepOutbox(flaky, later, { publishTimeoutMs: 50 });
    expect(result).toMatchObject({ schools: 3, republished: 2, failed: 100 + 3 });
    expect(await unpublishedIds(healthy.schoolId)).toEqual([]);
    expect(await unpublishedIds(hanging.schoolId)).toHaveLength(3);
    expect(await unpublishedIds(failing.schoolId)).toHaveLength(600);
    // One stub per call: the failing school's hub was called once (its first batch failed).
    expect(stubsTaken.get(failing.schoolId)).toBe(1);
    // The healthy school's hub holds its events (a second publish is all duplicates).
    expect(await hubFor(env, healthy.schoolId).publish(healthyEvents)).toMatchObject({ accepted: 0, duplicates: 2 });

    // Once the hubs answer again, the next sweep publishes the rest, a fresh stub per call.
    const { env: recovered } = envWithHubs({ [failing.schoolId]: { publish: async () => ({}) }, [hanging.schoolId]: { publish: async () => ({}) } });
    expect(await sweepOutbox(recovered, later)).toMatchObject({ schools: 2, republished: 603, failed: 0 });
    expect([...(await unpublishedIds(failing.schoolId)), ...(await unpublishedIds(hanging.schoolId))]).toEqual([]);
  });

  it("drains a healthy school's backlog beyond one batch in one sweep, oldest first", async () => {
    const { schoolId } = await newSchool("backlog");
    const events = eventsOf(schoolId, 250);
    await queueUnpublished(schoolId, events, later - hour);
    const published: string[] = [];
    const { env: recording } = envWithHubs({
      [schoolId]: {
        publish: async (batch) => {
          published.push(...batch.map((e) => e.id));
          return {};
        },
      },
    });
    expect(await sweepOutbox(recording, later, { batch: 100 })).toMatchObject({ schools: 1, republished: 250, failed: 0 });
    expect(published).toEqual(events.map((e) => e.id));
  });

  it("handles at most `schools` schools per sweep, those with the oldest due rows first; rows younger than 30 s wait", async () => {
    const schools = [await newSchool("a"), await newSchool("b"), await newSchool("c"), await newSchool("d")];
    const [newest, oldest, middle, young] = schools.map((s) => s.schoolId) as [string, string, string, string];
    await queueUnpublished(newest, eventsOf(newest, 1), later - 1 * hour);
    await queueUnpublished(oldest, eventsOf(oldest, 1), later - 3 * hour);
    await queueUnpublished(middle, eventsOf(middle, 1), later - 2 * hour);
    await queueUnpublished(young, eventsOf(young, 1), later - 1_000);
    const ok = { publish: async () => ({}) };
    const { env: fake } = envWithHubs(Object.fromEntries(schools.map((s) => [s.schoolId, ok])));
    expect(await sweepOutbox(fake, later, { schools: 2 })).toMatchObject({ schools: 2, republished: 2 });
    expect(await Promise.all([oldest, middle, newest, young].map(async (id) => (await unpublishedIds(id)).length))).toEqual([0, 0, 1, 1]);
    expect(await sweepOutbox(fake, later, { schools: 2 })).toMatchObject({ schools: 1, republished: 1 });
    expect(await unpublishedIds(young)).toHaveLength(1);
    await (await shardOf(young)).prepare("DELETE FROM outbox WHERE school_id = ?").bind(young).run();
  });
});
