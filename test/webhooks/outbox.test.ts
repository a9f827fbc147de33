/**
 * Course writes → outbox → hub → receiver (docs/reference.md § "Event delivery", docs/architecture.md § The outbox):
 * events checked at a receiver in the contract's order; the cron sweep re-publishes exactly
 * once when the hub call failed; a duplicate publish delivers nothing twice; the sweep is
 * fair per school: a failing or hanging hub holds up only its own school's events.
 */
import { createExecutionContext, createScheduledController, env, waitOnExecutionContext } from "cloudflare:test";
import { Webhook } from "standardwebhooks";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { failingPublishEnv } from "../../src/bench/faults";
import { shardBindings } from "../../src/db/shard-names";
import { shardFor } from "../../src/db/shards";
import { hubFor } from "../../src/events/hub-client";
import { pruneOutbox, publishEvents, SWEEP_AFTER_MS as SWEEP_AFTER_MS_OF_CODE, sweepOutbox } from "../../src/events/outbox";
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

/** Rows unpublished for longer than this are the sweep's (ms; 30 s, docs/architecture.md § Invariants). */
const SWEEP_AFTER_MS = 30_000;

const base = { name: "Réseaux", startDateTime: "2026-10-05T08:00:00Z", endDateTime: "2026-10-05T10:00:00Z" };

async function unpublished(schoolId: string): Promise<number> {
  const row = await (await shardOf(schoolId))
    .prepare("SELECT count(*) AS n FROM outbox WHERE school_id = ? AND published_at IS NULL")
    .bind(schoolId)
    .first<{ n: number }>();
  return row!.n;
}

it("the code's sweep delay is the 30,000 ms this file drives", () => {
  expect(SWEEP_AFTER_MS_OF_CODE).toBe(30_000);
});

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
    const unreachable = failingPublishEnv(env);
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
    // Read while unpublished: publishing empties a row's payload.
    const event = await unpublishedEvent(schoolId);

    // Too young for the sweep (30 s): nothing happens.
    expect((await sweepOutbox(env)).republished).toBe(0);
    // Later: the sweep publishes it and marks it.
    const later = Date.now() + SWEEP_AFTER_MS + 1000;
    expect(await sweepOutbox(env, later)).toMatchObject({ republished: 1, failed: 0 });
    expect(await unpublished(schoolId)).toBe(0);
    expect(await sweepOutbox(env, later)).toMatchObject({ republished: 0 });

    // The scheduled handler runs the same sweep: a row written through the unreachable hub is
    // published by it.
    const second = await worker.fetch(
      new Request("http://api.test/v3/courses", {
        method: "POST",
        headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
        body: JSON.stringify({ ...base, name: "Réseaux 2" }),
      }),
      unreachable,
      createExecutionContext(),
    );
    expect(second.status).toBe(201);
    expect(await unpublished(schoolId)).toBe(1);
    const other = await unpublishedEvent(schoolId);
    // Written a minute ago, as far as the sweep (on the real clock) can tell.
    await (await shardOf(schoolId))
      .prepare("UPDATE outbox SET created_at = created_at - 60000 WHERE school_id = ? AND published_at IS NULL")
      .bind(schoolId)
      .run();
    const ctx = createExecutionContext();
    await worker.scheduled(createScheduledController({ scheduledTime: Date.now(), cron: "* * * * *" }), env, ctx);
    await waitOnExecutionContext(ctx);
    expect(await unpublished(schoolId)).toBe(0);

    // A publish repeated by hand (as a sweep racing a slow request would) is a duplicate.
    expect(await hubFor(env, schoolId).publish([event])).toMatchObject({ accepted: 0, duplicates: 1, deliveries: 0 });
    expect(await publishEvents(env, await shardOf(schoolId), schoolId, [event])).toBe(1);

    await drain(schoolId);
    const got = receivers.to("sweep.example.com");
    expect(got.map((r) => r.event.id)).toEqual([event.id, other.id]);
    expect(got.map((r) => r.event.type)).toEqual(["course.created", "course.created"]);
    for (const r of got) checkEvent(JSON.parse(r.body));
  });

  it("prunes rows published more than 7 days ago", async () => {
    const old = Date.now() - 8 * 24 * 3600 * 1000;
    await env.SHARD_0.prepare("INSERT INTO outbox (event_id, school_id, payload, created_at, published_at) VALUES ('evt_old', 'sch_x', '{}', ?, ?)")
      .bind(old, old)
      .run();
    await env.SHARD_0.prepare("INSERT INTO outbox (event_id, school_id, payload, created_at, published_at) VALUES ('evt_recent', 'sch_x', '{}', ?, ?)")
      .bind(Date.now(), Date.now())
      .run();
    expect(await pruneOutbox(env.SHARD_0)).toBe(1);
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

/** The school's one unpublished outbox row's event. */
async function unpublishedEvent(schoolId: string): Promise<SchoolEvent> {
  const row = await (await shardOf(schoolId))
    .prepare("SELECT payload FROM outbox WHERE school_id = ? AND published_at IS NULL")
    .bind(schoolId)
    .first<{ payload: string }>();
  return JSON.parse(row!.payload) as SchoolEvent;
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

    // Once the hubs answer again, the next sweep publishes the rows never tried at once; the
    // failed ones back off a minute first (then each goes alone), a fresh stub per call.
    const { env: recovered } = envWithHubs({ [failing.schoolId]: { publish: async () => ({}) }, [hanging.schoolId]: { publish: async () => ({}) } });
    expect(await sweepOutbox(recovered, later)).toMatchObject({ schools: 1, republished: 500, failed: 0 });
    expect(await unpublishedIds(failing.schoolId)).toHaveLength(100);
    expect(await unpublishedIds(hanging.schoolId)).toHaveLength(3);
    expect(await sweepOutbox(recovered, later + 60_000)).toMatchObject({ schools: 2, republished: 103, failed: 0 });
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

describe("the outbox sweep is not stuck by failures", () => {
  const later = Date.now() + 30_000 + 60_000;
  const hour = 3_600_000;

  /** The outbox's retry state of `eventId`. */
  const retryState = async (eventId: string) => {
    for (const b of shardBindings(env)) {
      const row = await shardFor(env, b)
        .prepare("SELECT attempts, retry_at AS retryAt, published_at IS NOT NULL AS published FROM outbox WHERE event_id = ?")
        .bind(eventId)
        .first();
      if (row) return row;
    }
    return null;
  };

  it("a hub that refuses one event: that row backs off (1 min, doubling), the school's later rows and other schools are published", async () => {
    const [refusing, other] = [await newSchool("poison"), await newSchool("bystander")];
    const events = eventsOf(refusing.schoolId, 5);
    const poison = events[1]!.id;
    await queueUnpublished(refusing.schoolId, events, later - hour);
    const published: string[] = [];
    const { env: picky } = envWithHubs({
      [refusing.schoolId]: {
        publish: async (batch) => {
          if (batch.some((e) => e.id === poison)) throw new Error("refused");
          published.push(...batch.map((e) => e.id));
          return {};
        },
      },
    });
    // The first sweep publishes the five together: refused, all five back off one minute.
    expect(await sweepOutbox(picky, later)).toMatchObject({ republished: 0, failed: 5 });
    expect(await retryState(events[4]!.id)).toEqual({ attempts: 1, retryAt: later + 60_000, published: 0 });
    // Meanwhile the school's new row and another school's rows are not held back.
    const fresh = eventsOf(refusing.schoolId, 1);
    await queueUnpublished(refusing.schoolId, fresh, later - 1_000 - 30_000);
    await queueUnpublished(other.schoolId, eventsOf(other.schoolId, 2), later - hour);
    // One school per sweep: the backing-off rows take no slot, the oldest due rows lead.
    expect(await sweepOutbox(picky, later, { schools: 1 })).toMatchObject({ schools: 1, republished: 2, failed: 0 });
    expect(await unpublishedIds(other.schoolId)).toEqual([]);
    expect(await sweepOutbox(picky, later, { schools: 1 })).toMatchObject({ schools: 1, republished: 1, failed: 0 });
    expect(published).toEqual([fresh[0]!.id]);
    // A minute later each failed row goes alone: all but the refused one are published.
    expect(await sweepOutbox(picky, later + 60_000)).toMatchObject({ republished: 4, failed: 1 });
    expect(await unpublishedIds(refusing.schoolId)).toEqual([poison]);
    expect(await retryState(poison)).toEqual({ attempts: 2, retryAt: later + 60_000 + 120_000, published: 0 });
    // Not due before its back-off ends; then retried, and its wait doubles again.
    expect(await sweepOutbox(picky, later + 60_000 + 119_000)).toMatchObject({ schools: 0 });
    expect(await sweepOutbox(picky, later + 60_000 + 120_000)).toMatchObject({ schools: 1, republished: 0, failed: 1 });
    expect(await retryState(poison)).toEqual({ attempts: 3, retryAt: later + 180_000 + 240_000, published: 0 });
    expect(published).toEqual([fresh[0]!.id, ...events.filter((e) => e.id !== poison).map((e) => e.id)]);
  });

  it("its back-off is capped at one hour", async () => {
    const { schoolId } = await newSchool("capped");
    const [event] = eventsOf(schoolId, 1);
    await queueUnpublished(schoolId, [event!], later - hour);
    await (await shardOf(schoolId)).prepare("UPDATE outbox SET attempts = 12 WHERE event_id = ?").bind(event!.id).run();
    const { env: down } = envWithHubs({ [schoolId]: { publish: () => Promise.reject(new Error("down")) } });
    expect(await sweepOutbox(down, later)).toMatchObject({ failed: 1 });
    expect(await retryState(event!.id)).toEqual({ attempts: 13, retryAt: later + 3_600_000, published: 0 });
  });
});
