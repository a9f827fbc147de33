/**
 * Unconfirmed closes are retried a few at a time (docs/architecture.md § Bounded work and
 * storage): DELETEs that could not reach their couriers leave tombstones whose courier is
 * open; each run of the hub's alarm retries at most 2 of them, oldest first, and comes back
 * for the rest, so hand-overs never wait behind a backlog of closes. Each alarm is run by the
 * test, one at a time, and the tombstones still open are counted in the hub.
 */
import { runDurableObjectAlarm } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { hubFor } from "../../src/events/hub-client";
import { COURIER_OPEN } from "../../src/webhooks/hub/storage";
import { callJson } from "../support/helpers";
import { courseEvent, drain, inHub, newSchool, register } from "../support/webhooks/harness";
import { SimulatedPlatform } from "../support/webhooks/platform-sim";

const rx = new SimulatedPlatform();
beforeAll(() => rx.install());
afterAll(() => rx.restore());
afterEach(() => rx.expectWithinLimit());

/** The contract's bound: closes one alarm run retries at most. */
const CLOSES_PER_RUN = 2;

/** Tombstones of the school whose courier is not confirmed closed, by id. */
const unconfirmed = (schoolId: string) =>
  inHub(schoolId, (_h, state) =>
    state.storage.sql
      .exec<{ id: string }>(`SELECT id FROM webhooks WHERE deleted_at IS NOT NULL AND courier = ? ORDER BY id`, COURIER_OPEN)
      .toArray()
      .map((r) => r.id),
  );

describe("closes a DELETE could not confirm", () => {
  it("5 of them: each alarm run confirms at most 2, oldest first, and the runs go on until none is left", async () => {
    const { schoolId, key } = await newSchool("closes");
    const hooks = [];
    for (let i = 0; i < 5; i++) hooks.push(await register(key, `https://closes-${i}.example.com/in`));
    await hubFor(env, schoolId).publish([courseEvent(schoolId)]);
    await drain(schoolId);
    for (const hook of hooks) {
      // The hub tries a close twice (a new stub each time): both fail.
      rx.failCalls = 2;
      expect((await callJson(`/v3/webhooks/${hook.id}`, { method: "DELETE", key })).status).toBe(500);
    }
    const ids = hooks.map((h) => h.id);
    const sorted = (list: string[]) => [...list].sort();
    expect(await unconfirmed(schoolId)).toEqual(sorted(ids));

    // Deleted in order: each run confirms the oldest CLOSES_PER_RUN still open.
    const hub = hubFor(env, schoolId);
    const left: string[][] = [];
    for (let run = 0; run < 3; run++) {
      expect(await runDurableObjectAlarm(hub)).toBe(true);
      left.push(await unconfirmed(schoolId));
    }
    expect(left).toEqual([sorted(ids.slice(CLOSES_PER_RUN)), sorted(ids.slice(2 * CLOSES_PER_RUN)), []]);
    // Every DELETE now answers as done: the second one of each is a 404.
    for (const hook of hooks) expect((await callJson(`/v3/webhooks/${hook.id}`, { method: "DELETE", key })).status).toBe(404);
  });
});
