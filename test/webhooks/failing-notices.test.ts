/**
 * Failing and recovered notices (docs/reference.md § "Failing and recovered notices"): a
 * registration whose attempts (of any events) fail 4 times in a row is announced once by
 * `webhook.failing`, and 3 successes in a row an hour or more after it by `webhook.recovered`,
 * to the school's other registrations that subscribe to them and in the feed; the record's
 * `failingSince` says so meanwhile. The streak is the courier's, kept across a reset; an
 * explicit refusal (`webhook-delivery: abort-message`) is not a failure. Absence is asserted
 * after driving every alarm and letting every call between objects end.
 */
import { env } from "cloudflare:workers";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { hubFor } from "../../src/events/hub-client";
import { callJson } from "../support/helpers";
import { courseEvent, drain, eventually, inCourier, makeAllDue, newSchool, ownStorage, register } from "../support/webhooks/harness";
import { SimulatedPlatform } from "../support/webhooks/platform-sim";
import { resetCourier } from "../support/webhooks/reset";

const rx = new SimulatedPlatform();
beforeAll(() => rx.install());
afterAll(() => rx.restore());
afterEach(() => rx.expectWithinLimit());

const NOTICES = ["webhook.failing", "webhook.recovered"];

/** A school with a registration at `label`.example.com answering 500 (every event) and a watcher of the notices. */
async function failingSchool(label: string) {
  const { schoolId, key } = await newSchool(label);
  const host = `${label}.example.com`;
  const watcher = `${label}-watch.example.com`;
  rx.on(host, 500).on(watcher, 200);
  const hook = await register(key, `https://${host}/in`);
  await register(key, `https://${watcher}/in`, { events: NOTICES });
  return { schoolId, key, host, watcher, hook };
}

/**
 * Drives everything that could send now: hand-overs, due attempts, the couriers' calls to
 * the hub (a notice), and the hand-overs those start.
 */
async function settle(schoolId: string): Promise<void> {
  await drain(schoolId);
  await rx.settle();
  await drain(schoolId);
}

/** One more failed attempt: every queued delivery made due, then driven. */
async function retryAll(schoolId: string): Promise<void> {
  await makeAllDue(schoolId);
  await settle(schoolId);
}

const record = async (key: string, id: string) => (await callJson(`/v3/webhooks/${id}`, { key })).body.result;
const feed = async (key: string) => (await callJson(`/v3/events?eventType=${NOTICES.join(",")}`, { key })).body.result as { id: string; type: string }[];
const received = (host: string) => rx.to(host).map((r) => r.event);

/** The instant of the registration's first logged attempt (the streak's first failure). */
async function firstAttemptAt(key: string, id: string): Promise<string> {
  const log = (await callJson(`/v3/webhooks/${id}/deliveries`, { key })).body.result as { attemptedAt: string }[];
  return log.at(-1)!.attemptedAt;
}

describe("webhook.failing", () => {
  it("is sent once, at the 4th failed attempt in a row (any events), with its data; not at the 3rd, not again at the 5th", async () => {
    const { schoolId, key, host, watcher, hook } = await failingSchool("fail4");
    const hub = hubFor(env, schoolId);
    await hub.publish([courseEvent(schoolId, "course.updated", 1)]);
    await settle(schoolId);
    await retryAll(schoolId);
    await retryAll(schoolId);
    expect(rx.to(host)).toHaveLength(3);
    expect(received(watcher)).toEqual([]);
    expect(await feed(key)).toEqual([]);
    expect((await record(key, hook.id)).failingSince).toBeNull();

    // The 4th failure is another event's first attempt: the streak counts attempts, of any events.
    const since = await firstAttemptAt(key, hook.id);
    await hub.publish([courseEvent(schoolId, "course.created", 2)]);
    await settle(schoolId);
    expect(rx.to(host)).toHaveLength(4);
    await eventually(async () => received(watcher).length === 1, "the notice to reach the watcher");
    const [notice] = received(watcher);
    expect(notice).toMatchObject({
      type: "webhook.failing",
      schoolId,
      data: { webhookId: hook.id, failingSince: since, consecutiveFailures: 4, lastError: "HTTP 500" },
    });
    expect(Object.keys(notice!.data).sort()).toEqual(["consecutiveFailures", "failingSince", "lastError", "webhookId"]);
    expect(await record(key, hook.id)).toMatchObject({ enabled: true, failingSince: since });
    expect((await feed(key)).map((e) => [e.id, e.type])).toEqual([[notice!.id, "webhook.failing"]]);
    // Not to the failing registration itself (it subscribes to every event).
    expect(new Set(received(host).map((e) => e.type))).toEqual(new Set(["course.updated", "course.created"]));

    // The 5th and 6th failures: the streak goes on, no second notice.
    await retryAll(schoolId);
    expect(rx.to(host)).toHaveLength(6);
    expect(received(watcher).map((e) => e.type)).toEqual(["webhook.failing"]);
    expect((await feed(key)).map((e) => e.type)).toEqual(["webhook.failing"]);
  });

  it("the streak survives a reset of the courier: 3 failures, a reset, the 4th sends it", async () => {
    const { schoolId, key, host, watcher, hook } = await failingSchool("failreset");
    await hubFor(env, schoolId).publish([courseEvent(schoolId)]);
    await settle(schoolId);
    await retryAll(schoolId);
    await retryAll(schoolId);
    expect(rx.to(host)).toHaveLength(3);
    const since = await firstAttemptAt(key, hook.id);
    // `state.abort()` inside the courier, and a new instance proven (reset.ts).
    await resetCourier(hook.id);
    await retryAll(schoolId);
    expect(rx.to(host)).toHaveLength(4);
    await eventually(async () => received(watcher).length === 1, "the notice to reach the watcher");
    expect(received(watcher)[0]).toMatchObject({ type: "webhook.failing", data: { webhookId: hook.id, failingSince: since, consecutiveFailures: 4 } });
  });
});

/**
 * An hour passes for registration `id`'s run: the instant its `webhook.failing` was noted is
 * moved an hour back in the courier's KV (the real clock this file runs on cannot wait it).
 */
async function anHourLater(id: string): Promise<void> {
  await inCourier(id, (courier) => {
    const kv = ownStorage(courier).kv;
    const run = kv.get("streak") as { noticed: number };
    kv.put("streak", { ...run, noticed: run.noticed - 3_600_000 });
  });
}

describe("webhook.recovered", () => {
  it("follows 3 successes in a row an hour or more after webhook.failing, with its failingSince; the record is no longer failing", async () => {
    const { schoolId, key, host, watcher, hook } = await failingSchool("recov");
    const hub = hubFor(env, schoolId);
    await hub.publish([courseEvent(schoolId)]);
    await settle(schoolId);
    for (let i = 0; i < 3; i++) await retryAll(schoolId);
    await eventually(async () => received(watcher).length === 1, "webhook.failing");
    const since = await firstAttemptAt(key, hook.id);

    // 3 successes in a row within the hour: still failing.
    rx.on(host, 200);
    await retryAll(schoolId);
    for (let i = 0; i < 2; i++) {
      await hub.publish([courseEvent(schoolId)]);
      await settle(schoolId);
    }
    expect(rx.to(host)).toHaveLength(7);
    expect(received(watcher).map((e) => e.type)).toEqual(["webhook.failing"]);
    expect((await record(key, hook.id)).failingSince).toBe(since);

    // The hour passes: the next success, the 4th in a row, ends the streak.
    await anHourLater(hook.id);
    await hub.publish([courseEvent(schoolId)]);
    await settle(schoolId);
    await eventually(async () => received(watcher).length === 2, "webhook.recovered");
    const log = (await callJson(`/v3/webhooks/${hook.id}/deliveries`, { key })).body.result as { status: string; attemptedAt: string }[];
    expect(log[0]!.status).toBe("succeeded");
    const recovered = received(watcher)[1]!;
    expect(recovered).toMatchObject({
      type: "webhook.recovered",
      schoolId,
      data: { webhookId: hook.id, failingSince: since, recoveredAt: log[0]!.attemptedAt },
    });
    expect(Object.keys(recovered.data).sort()).toEqual(["failingSince", "recoveredAt", "webhookId"]);
    expect((await record(key, hook.id)).failingSince).toBeNull();
    expect((await feed(key)).map((e) => e.type)).toEqual(["webhook.failing", "webhook.recovered"]);

    // Another success: no streak ended, nothing more.
    await hub.publish([courseEvent(schoolId)]);
    await settle(schoolId);
    expect(received(watcher).map((e) => e.type)).toEqual(["webhook.failing", "webhook.recovered"]);
  });

  it("is not sent when the streak a success ends never reached 4 failures", async () => {
    const { schoolId, key, host, watcher, hook } = await failingSchool("norecov");
    await hubFor(env, schoolId).publish([courseEvent(schoolId)]);
    await settle(schoolId);
    await retryAll(schoolId);
    await retryAll(schoolId);
    rx.on(host, 200);
    await retryAll(schoolId);
    expect(rx.to(host).length).toBe(4);
    expect((await callJson(`/v3/webhooks/${hook.id}/deliveries`, { key })).body.result[0].status).toBe("succeeded");
    expect(received(watcher)).toEqual([]);
    expect(await feed(key)).toEqual([]);
    expect((await record(key, hook.id)).failingSince).toBeNull();
  });
});

describe("notices are given to registrations that can take them", () => {
  it("a failing registration gets no notice about another one; a disabled one neither", async () => {
    const { schoolId, key, host, watcher, hook } = await failingSchool("noticeto");
    const other = "noticeto-other.example.com";
    const paused = "noticeto-paused.example.com";
    rx.on(other, 500).on(paused, 200);
    const second = await register(key, `https://${other}/in`);
    const off = await register(key, `https://${paused}/in`, { events: NOTICES });
    expect((await callJson(`/v3/webhooks/${off.id}`, { method: "PATCH", key, json: { enabled: false } })).status).toBe(200);
    // The second registration fails 4 in a row first (its own events only), then the first.
    const hub = hubFor(env, schoolId);
    await hub.publish([courseEvent(schoolId)]);
    await settle(schoolId);
    for (let i = 0; i < 3; i++) await retryAll(schoolId);
    await eventually(async () => received(watcher).length === 2, "two webhook.failing");
    expect(
      received(watcher)
        .map((e) => e.data.webhookId)
        .sort(),
    ).toEqual([hook.id, second.id].sort());
    // Every hand-over of the notices made and its first attempt sent (retries are not due yet).
    await settle(schoolId);
    // Whichever was announced first, the other, failing by then, was not given the later notice.
    const types = (h: string) => received(h).filter((e) => e.type.startsWith("webhook."));
    expect(types(host).length + types(other).length).toBe(1);
    expect(rx.to(paused)).toEqual([]);
    const targets = (await callJson(`/v3/webhooks/${off.id}/deliveries`, { key })).body.result as unknown[];
    expect(targets).toEqual([]);
  });
});

describe("an explicit refusal", () => {
  it("4xx answers with webhook-delivery: abort-message, 5 in a row, make no webhook.failing; the record is not failing", async () => {
    const { schoolId, key } = await newSchool("refuse");
    const host = "refuse.example.com";
    const watcher = "refuse-watch.example.com";
    rx.on(host, { status: 422, headers: { "webhook-delivery": "abort-message" } }).on(watcher, 200);
    const hook = await register(key, `https://${host}/in`);
    await register(key, `https://${watcher}/in`, { events: NOTICES });
    const hub = hubFor(env, schoolId);
    for (let i = 0; i < 5; i++) {
      await hub.publish([courseEvent(schoolId, "course.updated", i)]);
      await settle(schoolId);
    }
    await retryAll(schoolId);
    expect(rx.to(host)).toHaveLength(5);
    expect(received(watcher)).toEqual([]);
    expect(await feed(key)).toEqual([]);
    expect((await record(key, hook.id)).failingSince).toBeNull();
  });
});
