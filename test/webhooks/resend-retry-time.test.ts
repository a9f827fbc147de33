/**
 * A resend or recover that makes a waiting retry due now (docs/reference.md § "Resend",
 * § "Recover") leaves no stale retry time in the delivery log: the failed entry's
 * `nextAttemptAt` (the portal's "Next attempt") reads when the next attempt became due. On
 * the simulated platform's virtual clock: every instant below is simulated milliseconds.
 */
import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it } from "vitest";
import { hubFor } from "../../src/events/hub-client";
import { RETRY_REPLACED_SQL } from "../../src/webhooks/courier/queue";
import { callJson } from "../support/helpers";
import { courseEvent, inCourier, newSchool, register } from "../support/webhooks/harness";
import { SimulatedPlatform } from "../support/webhooks/platform-sim";

let sim: SimulatedPlatform | undefined;
afterEach(() => {
  sim?.restore();
  sim = undefined;
});

type Entry = { attempt: number; status: string; trigger: string; attemptedAt: string | null; nextAttemptAt: string | null };

async function entries(key: string, webhookId: string, eventId: string): Promise<Entry[]> {
  const { status, body } = await callJson(`/v3/webhooks/${webhookId}/deliveries?eventId=${eventId}`, { key });
  expect(status, JSON.stringify(body)).toBe(200);
  return (body.result as Entry[]).map(({ attempt, status, trigger, attemptedAt, nextAttemptAt }) => ({ attempt, status, trigger, attemptedAt, nextAttemptAt }));
}

const iso = (ms: number) => new Date(ms).toISOString();

describe("a retry that a resend or recover replaced", () => {
  it("the log's failed entry shows when the next attempt became due, not the retry it replaced", async () => {
    sim = SimulatedPlatform.virtual().install();
    sim.delay = [1, 1];
    const host = "stale-retry.example.com";
    const { schoolId, key } = await newSchool("staleretry");
    const hook = await register(key, `https://${host}/in`);
    // Retry-After: 3600 puts the retry an hour away (no earlier than the receiver asked).
    sim.on(host, { status: 503, headers: { "retry-after": "3600" } });
    const [first, second] = [courseEvent(schoolId, "course.updated", 1), courseEvent(schoolId, "course.updated", 2)];
    await hubFor(env, schoolId).publish([first, second]);
    await sim.advance(10);
    const failedAt = sim.to(host)[0]!.sentAt;
    const [before] = await entries(key, hook.id, first.id);
    expect(before).toEqual({ attempt: 1, status: "failed", trigger: "event", attemptedAt: iso(failedAt), nextAttemptAt: iso(failedAt + 1 + 3_600_000) });

    // A resend a minute later makes it due then: sent at once, answered 204.
    await sim.advance(60_000);
    sim.on(host, 204);
    const resentAt = sim.clock.now();
    const resent = await callJson(`/v3/webhooks/${hook.id}/deliveries/${first.id}/resend`, { method: "POST", key });
    expect(resent.status, JSON.stringify(resent.body)).toBe(202);
    await sim.advance(10);
    expect(await entries(key, hook.id, first.id)).toEqual([
      { attempt: 2, status: "succeeded", trigger: "resend", attemptedAt: iso(resentAt), nextAttemptAt: null },
      { attempt: 1, status: "failed", trigger: "event", attemptedAt: iso(failedAt), nextAttemptAt: iso(resentAt) },
    ]);

    // A recover makes the other one's retry due now, the same way.
    await sim.advance(60_000);
    const recoveredAt = sim.clock.now();
    const recovered = await callJson(`/v3/webhooks/${hook.id}/recover`, { method: "POST", key, json: { since: iso(recoveredAt - 3_600_000) } });
    expect(recovered.status, JSON.stringify(recovered.body)).toBe(202);
    await sim.advance(10);
    const [done, retried] = await entries(key, hook.id, second.id);
    expect(done).toMatchObject({ attempt: 2, status: "succeeded", trigger: "recover", attemptedAt: iso(recoveredAt) });
    expect(retried).toMatchObject({ attempt: 1, status: "failed", nextAttemptAt: iso(recoveredAt) });

    // One entry found through the event's index: no scan of the log.
    const plan = await inCourier(hook.id, (_courier, state) =>
      state.storage.sql
        .exec<{ detail: string }>(`EXPLAIN QUERY PLAN ${RETRY_REPLACED_SQL}`, "evt_x", 0)
        .toArray()
        .map((r) => r.detail)
        .join("\n"),
    );
    expect(plan, plan).toMatch(/SEARCH log USING (COVERING )?INDEX log_event_at \(event_id=\?\)/);
    expect(plan, plan).toMatch(/SEARCH log USING INTEGER PRIMARY KEY \(rowid=\?\)/);
    expect(plan, plan).not.toMatch(/SCAN log|TEMP B-TREE/);
  });
});
