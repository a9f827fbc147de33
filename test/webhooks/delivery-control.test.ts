/**
 * Delivery control by the receiver (docs/reference.md § "Event delivery", Standard Webhooks
 * PR #291): an answer's `webhook-delivery: abort-message` ends that delivery at once,
 * `disable` also disables the registration as a 410 does (`disabledReason: "receiver"`,
 * `webhook.disabled` with `reason: "receiver"`); other values are ignored. Absence of a
 * retry is asserted after making every queued delivery due and driving the alarms.
 */
import { env } from "cloudflare:workers";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { hubFor } from "../../src/events/hub-client";
import { callJson } from "../support/helpers";
import { courseEvent, drain, eventually, inCourier, makeAllDue, newSchool, ownStorage, queuedCount, register } from "../support/webhooks/harness";
import { SimulatedPlatform } from "../support/webhooks/platform-sim";

const rx = new SimulatedPlatform();
beforeAll(() => rx.install());
afterAll(() => rx.restore());
afterEach(() => rx.expectWithinLimit());

type Entry = { eventId: string; attempt: number; status: string; responseStatus: number | null; error: string | null; nextAttemptAt: string | null };

const deliveries = async (key: string, id: string) => {
  const { status, body } = await callJson(`/v3/webhooks/${id}/deliveries`, { key });
  expect(status, JSON.stringify(body)).toBe(200);
  return body.result as Entry[];
};

const record = async (key: string, id: string) => (await callJson(`/v3/webhooks/${id}`, { key })).body.result;

/**
 * A school with one registration whose receiver at `host` answers `status` with
 * `webhook-delivery: value`, one event published to it and its first attempt driven.
 */
async function answered(label: string, status: number, value: string) {
  const { schoolId, key } = await newSchool(label);
  const host = `${label}.example.com`;
  rx.on(host, { status, headers: { "webhook-delivery": value } });
  const hook = await register(key, `https://${host}/in`);
  const event = courseEvent(schoolId);
  await hubFor(env, schoolId).publish([event]);
  await drain(schoolId);
  return { schoolId, key, host, hook, event };
}

/** Makes whatever is queued due now and drives every alarm: a retry, if one were left, is sent. */
async function driveRetries(schoolId: string): Promise<void> {
  await makeAllDue(schoolId);
  await drain(schoolId);
}

describe("webhook-delivery: abort-message", () => {
  it("with a 500: the delivery ends failed at once, no retry is ever sent, the registration stays enabled", async () => {
    const { schoolId, key, host, hook, event } = await answered("abort500", 500, "abort-message");
    const [entry, ...rest] = await deliveries(key, hook.id);
    expect(rest).toEqual([]);
    expect(entry).toMatchObject({ eventId: event.id, attempt: 1, status: "failed", responseStatus: 500, nextAttemptAt: null });
    expect(entry!.error).toBe("HTTP 500 (webhook-delivery: abort-message): retries stopped");
    expect(await queuedCount(hook.id)).toBe(0);
    await driveRetries(schoolId);
    expect(rx.to(host)).toHaveLength(1);
    expect(await deliveries(key, hook.id)).toHaveLength(1);
    expect(await record(key, hook.id)).toMatchObject({ enabled: true, disabledReason: null });
  });

  it("a refusal is not a failure of the auto-disable streak: it neither starts one nor crosses its line", async () => {
    const { schoolId, key, hook } = await answered("abortstreak", 422, "abort-message");
    // docs/reference.md § "Auto-disable": counted as in § "Failing and recovered notices".
    expect(await inCourier(hook.id, (courier) => ownStorage(courier).kv.get("failingSince"))).toBeUndefined();
    // A streak of counted failures began 121 hours ago (past the default 120): a refusal now does not disable.
    await inCourier(hook.id, (courier) => ownStorage(courier).kv.put("failingSince", Date.now() - 121 * 3_600_000));
    await hubFor(env, schoolId).publish([courseEvent(schoolId)]);
    await drain(schoolId);
    expect(await deliveries(key, hook.id)).toHaveLength(2);
    expect(await record(key, hook.id)).toMatchObject({ enabled: true, disabledReason: null });
  });

  it("with a 200: the delivery succeeded", async () => {
    const { schoolId, key, host, hook } = await answered("abort200", 200, "abort-message");
    expect(await deliveries(key, hook.id)).toMatchObject([{ attempt: 1, status: "succeeded", responseStatus: 200, error: null }]);
    await driveRetries(schoolId);
    expect(rx.to(host)).toHaveLength(1);
    expect(await record(key, hook.id)).toMatchObject({ enabled: true });
  });
});

describe("webhook-delivery: disable", () => {
  it("with a 200: the delivery succeeded, the registration is disabled (receiver), webhook.disabled reaches the others and the feed", async () => {
    const { schoolId, key } = await newSchool("dis200");
    const host = "dis200.example.com";
    rx.on(host, { status: 200, headers: { "webhook-delivery": "disable" } });
    const hook = await register(key, `https://${host}/in`);
    await register(key, "https://dis200-watch.example.com/in", { events: ["webhook.disabled"] });
    await hubFor(env, schoolId).publish([courseEvent(schoolId)]);
    await drain(schoolId);
    expect(await deliveries(key, hook.id)).toMatchObject([{ attempt: 1, status: "succeeded", responseStatus: 200 }]);

    await eventually(async () => (await record(key, hook.id)).enabled === false, "the registration to be disabled");
    expect(await record(key, hook.id)).toMatchObject({ enabled: false, disabledReason: "receiver", disabledAt: expect.any(String) });
    await drain(schoolId);
    const watched = rx.to("dis200-watch.example.com").map((r) => r.event);
    expect(watched.map((e) => [e.type, e.data])).toEqual([["webhook.disabled", { webhookId: hook.id, reason: "receiver", failingSince: null }]]);
    const feed = (await callJson("/v3/events?eventType=webhook.disabled", { key })).body.result as { id: string; data: unknown }[];
    expect(feed).toEqual([expect.objectContaining({ id: watched[0]!.id, data: { webhookId: hook.id, reason: "receiver", failingSince: null } })]);

    // Disabled as a 410 leaves it: the next event is not sent.
    await hubFor(env, schoolId).publish([courseEvent(schoolId)]);
    await driveRetries(schoolId);
    expect(rx.to(host)).toHaveLength(1);
  });

  it("with a 503 (the value trimmed, in any case): the delivery ends failed with no retry, and the registration is disabled (receiver)", async () => {
    const { schoolId, key, host, hook } = await answered("dis503", 503, " Disable ");
    expect(await deliveries(key, hook.id)).toMatchObject([{ attempt: 1, status: "failed", responseStatus: 503, nextAttemptAt: null }]);
    await eventually(async () => (await record(key, hook.id)).enabled === false, "the registration to be disabled");
    expect(await record(key, hook.id)).toMatchObject({ disabledReason: "receiver" });
    await driveRetries(schoolId);
    expect(rx.to(host)).toHaveLength(1);
  });
});

describe("other webhook-delivery values", () => {
  it("are ignored: a 500 with `webhook-delivery: pause` is retried on the schedule", async () => {
    const { schoolId, key, host, hook } = await answered("unknown", 500, "pause");
    const [entry] = await deliveries(key, hook.id);
    expect(entry).toMatchObject({ attempt: 1, status: "failed", responseStatus: 500, error: "HTTP 500" });
    expect(entry!.nextAttemptAt).not.toBeNull();
    await driveRetries(schoolId);
    expect(rx.to(host)).toHaveLength(2);
    expect(await record(key, hook.id)).toMatchObject({ enabled: true });
  });
});
