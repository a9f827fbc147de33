import { afterEach, describe, expect, it } from "vitest";
import { migrate } from "../../src/webhooks/courier/storage";
import { callJson } from "../support/helpers";
import { drainByAlarms, hangingFirstAttempt, resetObject } from "../support/webhooks/alarms";
import { courierStub, inCourier, ownStorage, schemaAsOf } from "../support/webhooks/harness";
import { SimulatedPlatform } from "../support/webhooks/platform-sim";

let sim: SimulatedPlatform | undefined;
afterEach(() => {
  sim?.restore();
  sim = undefined;
});

/** A new stub of the courier each time: a stub that saw a reset stays broken. */

/** The log entries of event `eventId` at registration `webhookId`, newest first: [attempt, status, trigger]. */
async function entries(key: string, webhookId: string, eventId: string): Promise<[number, string, string][]> {
  const { status, body } = await callJson(`/v3/webhooks/${webhookId}/deliveries?eventId=${eventId}`, { key });
  expect(status, JSON.stringify(body)).toBe(200);
  return (body.result as { attempt: number; status: string; trigger: string }[]).map((d) => [d.attempt, d.status, d.trigger]);
}

/**
 * POST …/deliveries/{eventId}/resend, expecting its 202. With `afterReset`, the courier was
 * reset since the hub last called it: the hub's stub of it is broken, so that first call may
 * answer 500 (nothing queued, docs/architecture.md § "Faults are normal") and is repeated
 * once, as a client would; the repeat must be the 202.
 */
async function resend(key: string, webhookId: string, eventId: string, afterReset = false): Promise<void> {
  const post = () => callJson(`/v3/webhooks/${webhookId}/deliveries/${eventId}/resend`, { method: "POST", key });
  let answer = await post();
  if (afterReset && answer.status === 500) answer = await post();
  expect(answer.status, JSON.stringify(answer.body)).toBe(202);
}

describe("attempt numbers under a hanging receiver, a reset and resends", () => {
  it("are 1..k in the order the attempts are logged: no number twice, none skipped", async () => {
    sim = SimulatedPlatform.virtual().install();
    const { key, host, hook, event } = await hangingFirstAttempt(sim, "atnum", "at-num.example.com");

    // The first attempt times out (1,000 ms in the suite) and is logged; its retry waits 5 s.
    await sim.advance(1_000 + 10);
    expect(await entries(key, hook.id, event.id)).toEqual([[1, "failed", "event"]]);

    // A resend makes it due now: its attempt starts and hangs …
    await resend(key, hook.id, event.id);
    await sim.advance(1);
    expect(sim.to(host)).toHaveLength(2);
    // … and the courier is reset under it: that outcome is lost, never logged.
    await resetObject(sim, courierStub(hook.id));
    // The new instance's alarm sends the delivery again, answered this time.
    sim.on(host, 204);
    await drainByAlarms(sim, [courierStub(hook.id)], 61_000);
    expect(sim.to(host)).toHaveLength(3);
    expect(await entries(key, hook.id, event.id)).toEqual([
      [2, "succeeded", "resend"],
      [1, "failed", "event"],
    ]);

    // The delivery has ended; a resend queues it again and its attempt hangs: the entry
    // waiting for it already shows the number it will be logged with.
    sim.on(host, "hang");
    await resend(key, hook.id, event.id, true);
    await sim.advance(1);
    expect(sim.to(host)).toHaveLength(4);
    expect(await entries(key, hook.id, event.id)).toEqual([
      [3, "pending", "resend"],
      [2, "succeeded", "resend"],
      [1, "failed", "event"],
    ]);

    // It times out, and its retry (driven by the courier's alarm) is answered.
    sim.on(host, 204);
    await sim.advance(1_000 + 10);
    await drainByAlarms(sim, [courierStub(hook.id)], 6_000);
    expect(sim.to(host)).toHaveLength(5);
    expect(await entries(key, hook.id, event.id)).toEqual([
      [4, "succeeded", "retry"],
      [3, "failed", "resend"],
      [2, "succeeded", "resend"],
      [1, "failed", "event"],
    ]);
  });

  it("a skipped entry takes the next number, and a recover goes on from it", async () => {
    sim = SimulatedPlatform.virtual().install();
    const { key, host, hook, event } = await hangingFirstAttempt(sim, "atskip", "at-skip.example.com");
    await sim.advance(1_000 + 10);
    expect(await entries(key, hook.id, event.id)).toEqual([[1, "failed", "event"]]);

    // Disabled with its retry pending: the delivery ends skipped, logged as its second entry.
    const since = new Date(sim.clock.now() - 60_000).toISOString();
    expect((await callJson(`/v3/webhooks/${hook.id}`, { method: "PATCH", key, json: { enabled: false } })).status).toBe(200);
    expect(await entries(key, hook.id, event.id)).toEqual([
      [2, "skipped", "retry"],
      [1, "failed", "event"],
    ]);

    // Enabled and recovered: the next attempt is the third.
    sim.on(host, 204);
    expect((await callJson(`/v3/webhooks/${hook.id}`, { method: "PATCH", key, json: { enabled: true } })).status).toBe(200);
    const recovered = await callJson(`/v3/webhooks/${hook.id}/recover`, { method: "POST", key, json: { since } });
    expect(recovered.body.result).toEqual({ queued: 1, exact: true });
    await drainByAlarms(sim, [courierStub(hook.id)], 1_000);
    // The event's second attempt, and the notice of its delivery the disable skipped (docs/reference.md § "Missed events").
    expect(sim.to(host).map((r) => (r.event.type === "webhook.events_missed" ? r.event.data.missed : r.event.id))).toEqual([event.id, 1, event.id]);
    expect(await entries(key, hook.id, event.id)).toEqual([
      [3, "succeeded", "recover"],
      [2, "skipped", "retry"],
      [1, "failed", "event"],
    ]);
  });
});

describe("the courier's schema migration", () => {
  it("a log kept before the events' counter existed goes on from each event's highest number", async () => {
    await inCourier("wh_attempt_numbers_migration", (courier) => {
      const sql = ownStorage(courier).sql;
      // The courier's schema as its second migration left it: no counter yet.
      schemaAsOf(sql, 2, migrate);
      sql.exec(`INSERT INTO events (id, type, body, accepted_at) VALUES ('evt_a', 'course.updated', '{}', 1), ('evt_b', 'course.updated', '{}', 1)`);
      sql.exec(
        `INSERT INTO log (event_id, event_type, attempt, status, trigger, attempted_at)
         VALUES ('evt_a', 'course.updated', 1, 'pending', 'event', 1), ('evt_a', 'course.updated', 2, 'succeeded', 'retry', 2)`,
      );
      migrate(sql);
      expect(sql.exec(`SELECT id, last_attempt FROM events ORDER BY id`).toArray()).toEqual([
        { id: "evt_a", last_attempt: 2 },
        { id: "evt_b", last_attempt: 0 },
      ]);
    });
  });
});
