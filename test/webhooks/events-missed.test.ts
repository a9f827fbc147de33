/**
 * A notice instead of silent loss (docs/reference.md § "Missed events", § "Events feed"): every
 * path that drops a registration's delivery unsent — the hub's 7-day retention before the
 * hand-over, a disable (queued rows and events accepted meanwhile), a course's full held
 * backlog — gives that registration one `webhook.events_missed` per gap, with the count, the
 * range of `createdAt` and the change cursor to resume from; a gap that goes on extends the
 * pending notice, and at most one is sent an hour. The feed's 410 names the cursor too.
 * On a virtual clock; absence is asserted after driving the alarms.
 */
import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it } from "vitest";
import { hubFor } from "../../src/events/hub-client";
import type { SchoolEvent } from "../../src/events/types";
import { encodeCursor } from "../../src/webhooks/api/feed";
import { callJson } from "../support/helpers";
import { drainByAlarms } from "../support/webhooks/alarms";
import { courierStub, courseEvent, hubStub, inHub, newSchool, register } from "../support/webhooks/harness";
import { SimulatedPlatform } from "../support/webhooks/platform-sim";

const HOUR = 3_600_000;
const DAY = 24 * HOUR;

let sim: SimulatedPlatform | undefined;
afterEach(() => {
  sim?.restore();
  sim = undefined;
});

/** A course event of course `n` created at `at` (ms), carrying change number `change` (`null`: no `changeCursor`). */
function changed(schoolId: string, n: number, change: number | null, at: number): SchoolEvent {
  const { id, changeCursor: _harness, ...rest } = courseEvent(schoolId, "course.updated", n);
  const event = { id, ...(change === null ? {} : { changeCursor: `chg_${change}` }), ...rest, createdAt: new Date(at).toISOString() };
  return event as SchoolEvent;
}

/** The `data` of each `webhook.events_missed` `host` received, in order. */
function notices(host: string): Record<string, unknown>[] {
  return sim!
    .to(host)
    .filter((r) => r.event.type === "webhook.events_missed")
    .map((r) => r.event.data);
}

/** The ids of the other events `host` received. */
function others(host: string): string[] {
  return sim!
    .to(host)
    .filter((r) => r.event.type !== "webhook.events_missed")
    .map((r) => r.event.id);
}

const iso = (at: number) => new Date(at).toISOString();
const patch = (key: string, id: string, json: unknown) => callJson(`/v3/webhooks/${id}`, { method: "PATCH", key, json });

describe("webhook.events_missed", () => {
  it("a disable ends queued deliveries and skips new events: one notice once enabled again, with count, range and resume cursor", async () => {
    sim = SimulatedPlatform.virtual().install();
    const host = "missed-disable.example.com";
    sim.on(host, 500);
    const { schoolId, key } = await newSchool("mdis");
    const hook = await register(key, `https://${host}/in`);
    const t0 = sim.clock.now();
    // Three deliveries queued (their first attempts fail), then ended skipped by the disable.
    await hubFor(env, schoolId).publish([changed(schoolId, 1, 12, t0), changed(schoolId, 2, 11, t0 + 1), changed(schoolId, 3, 13, t0 + 2)]);
    await sim.advance(1_000);
    expect((await patch(key, hook.id, { enabled: false })).status).toBe(200);
    // Two accepted while disabled: logged skipped at the hand-over.
    await hubFor(env, schoolId).publish([changed(schoolId, 4, 14, t0 + 3), changed(schoolId, 5, 15, t0 + 4)]);
    await sim.advance(HOUR);
    await drainByAlarms(sim, [hubStub(schoolId), courierStub(hook.id)], HOUR);
    expect(notices(host), "nothing is sent while disabled").toEqual([]);

    sim.on(host, 200);
    expect((await patch(key, hook.id, { enabled: true })).status).toBe(200);
    await sim.advance(1_000);
    expect(notices(host)).toEqual([{ webhookId: hook.id, from: iso(t0), to: iso(t0 + 4), missed: 5, resumeCursor: "chg_10" }]);
    // The notice does not feed back: hours of alarms later, still one.
    await drainByAlarms(sim, [hubStub(schoolId), courierStub(hook.id)], 3 * HOUR);
    expect(notices(host)).toHaveLength(1);
  });

  it("many gaps within an hour: one notice at once, the rest coalesced into one an hour after it", async () => {
    sim = SimulatedPlatform.virtual().install();
    const host = "missed-many.example.com";
    sim.on(host, 200);
    const { schoolId, key } = await newSchool("mmany");
    const hook = await register(key, `https://${host}/in`);
    const t0 = sim.clock.now();
    // Six gaps of one skipped event each, ten minutes apart: disable, publish, enable.
    for (let i = 0; i < 6; i++) {
      expect((await patch(key, hook.id, { enabled: false })).status).toBe(200);
      await hubFor(env, schoolId).publish([changed(schoolId, i, 30 - i, t0 + i * 600_000)]);
      await sim.advance(1_000);
      expect((await patch(key, hook.id, { enabled: true })).status).toBe(200);
      await sim.advance(600_000 - 1_000);
    }
    expect(notices(host)).toEqual([{ webhookId: hook.id, from: iso(t0), to: iso(t0), missed: 1, resumeCursor: "chg_29" }]);
    await drainByAlarms(sim, [hubStub(schoolId), courierStub(hook.id)], 4 * HOUR);
    expect(notices(host)).toEqual([
      { webhookId: hook.id, from: iso(t0), to: iso(t0), missed: 1, resumeCursor: "chg_29" },
      { webhookId: hook.id, from: iso(t0 + 600_000), to: iso(t0 + 5 * 600_000), missed: 5, resumeCursor: "chg_24" },
    ]);
  });

  it("never feeds back: a notice a disable ends skipped is folded into the gap, not counted as missed", async () => {
    sim = SimulatedPlatform.virtual().install();
    const host = "missed-fold.example.com";
    const { schoolId, key } = await newSchool("mfold");
    const hook = await register(key, `https://${host}/in`);
    const t0 = sim.clock.now();
    expect((await patch(key, hook.id, { enabled: false })).status).toBe(200);
    await hubFor(env, schoolId).publish([changed(schoolId, 1, 7, t0), changed(schoolId, 2, 6, t0 + 1)]);
    await sim.advance(1_000);
    // Enabled with its receiver down: the notice is queued, its first attempt fails.
    sim.on(host, 500);
    expect((await patch(key, hook.id, { enabled: true })).status).toBe(200);
    await sim.advance(1_000);
    const gap = { webhookId: hook.id, from: iso(t0), to: iso(t0 + 1), missed: 2, resumeCursor: "chg_5" };
    expect(notices(host)).toEqual([gap]);
    // Disabled again: the queued notice ends skipped; enabled with the receiver back, the same gap is sent once more.
    expect((await patch(key, hook.id, { enabled: false })).status).toBe(200);
    sim.on(host, 200);
    expect((await patch(key, hook.id, { enabled: true })).status).toBe(200);
    await drainByAlarms(sim, [hubStub(schoolId), courierStub(hook.id)], 3 * HOUR);
    expect(notices(host)).toEqual([gap, gap]);
    expect(others(host)).toEqual([]);
  });

  it("a registration disabled for 10 days, across the retention: one notice for the whole outage", async () => {
    sim = SimulatedPlatform.virtual().install();
    const host = "missed-outage.example.com";
    sim.on(host, 200);
    const { schoolId, key } = await newSchool("mout");
    const hook = await register(key, `https://${host}/in`);
    expect((await patch(key, hook.id, { enabled: false })).status).toBe(200);
    const t0 = sim.clock.now();
    for (let day = 0; day < 10; day++) {
      await hubFor(env, schoolId).publish([changed(schoolId, day, 100 + day, t0 + day * DAY)]);
      await drainByAlarms(sim, [hubStub(schoolId), courierStub(hook.id)], DAY);
    }
    // The hub pruned the oldest of them meanwhile.
    const retained = await inHub(schoolId, (_h, state) => state.storage.sql.exec<{ n: number }>(`SELECT COUNT(*) AS n FROM events`).one().n);
    expect(retained).toBeLessThan(10);
    expect(notices(host)).toEqual([]);
    expect((await patch(key, hook.id, { enabled: true })).status).toBe(200);
    await drainByAlarms(sim, [hubStub(schoolId), courierStub(hook.id)], 3 * HOUR);
    expect(notices(host)).toEqual([{ webhookId: hook.id, from: iso(t0), to: iso(t0 + 9 * DAY), missed: 10, resumeCursor: "chg_99" }]);
    expect(others(host)).toEqual([]);
  });

  it("events that aged out of the hub before their hand-over: one notice, the events never sent", async () => {
    sim = SimulatedPlatform.virtual().install();
    const host = "missed-retention.example.com";
    sim.on(host, 200);
    const { schoolId, key } = await newSchool("mret");
    const hook = await register(key, `https://${host}/in`);
    const now = sim.clock.now();
    const old = now - 8 * DAY;
    // Fixture: four course events and a notice addressed to it 8 days ago, never handed over
    // (as when its queue stayed at its bound, or its courier was unreachable, for 7 days).
    const events = [changed(schoolId, 1, 41, old), changed(schoolId, 2, 40, old + 1), changed(schoolId, 3, 42, old + 2), changed(schoolId, 4, null, old + 3)];
    const notice = { id: "evt_notice1", type: "webhook.recovered", createdAt: iso(old + 4), schoolId, data: {} };
    await inHub(schoolId, (_h, state) => {
      for (const e of [...events.slice(0, 3), notice]) {
        state.storage.sql.exec(`INSERT INTO events (id, type, body, created_at) VALUES (?, ?, ?, ?)`, e.id, e.type, JSON.stringify(e), old);
        state.storage.sql.exec(`INSERT INTO targets (webhook_id, seq) VALUES (?, last_insert_rowid())`, hook.id);
      }
    });
    await inHub(schoolId, (h) => h.alarm());
    await sim.advance(60_000);
    expect(notices(host)).toEqual([{ webhookId: hook.id, from: iso(old), to: iso(old + 4), missed: 4, resumeCursor: "chg_39" }]);
    expect(others(host)).toEqual([]);
    // Acknowledged: later alarms hand nothing over again.
    await drainByAlarms(sim, [hubStub(schoolId), courierStub(hook.id)], 3 * HOUR);
    expect(notices(host)).toHaveLength(1);

    // A course event without a change cursor (stored before events carried one) among those missed: resume from chg_0.
    await inHub(schoolId, (_h, state) => {
      const e = events[3]!;
      state.storage.sql.exec(`INSERT INTO events (id, type, body, created_at) VALUES (?, ?, ?, ?)`, e.id, e.type, JSON.stringify(e), old);
      state.storage.sql.exec(`INSERT INTO targets (webhook_id, seq) VALUES (?, last_insert_rowid())`, hook.id);
    });
    await inHub(schoolId, (h) => h.alarm());
    await drainByAlarms(sim, [hubStub(schoolId), courierStub(hook.id)], 2 * HOUR);
    expect(notices(host).at(-1)).toEqual({ webhookId: hook.id, from: iso(old + 3), to: iso(old + 3), missed: 1, resumeCursor: "chg_0" });
    expect(notices(host)).toHaveLength(2);
  });

  it("a course's held backlog full: the events past it are noticed, once per gap", async () => {
    sim = SimulatedPlatform.virtual().install();
    sim.delay = [1, 1];
    const host = "missed-course.example.com";
    // Course 1's deliveries fail (its head holds the rest); every other event succeeds.
    sim.on(host, (req) => ((req.event.data.course as { id?: string } | undefined)?.id === "crs_1" ? 500 : 200));
    const { schoolId, key } = await newSchool("mcrs");
    const hook = await register(key, `https://${host}/in`);
    const t0 = sim.clock.now();
    const hub = hubFor(env, schoolId);
    await hub.publish([changed(schoolId, 1, 1, t0)]);
    await sim.advance(1_000);
    // 1,000 held behind the failing head (its course's bound), then 3 past it.
    for (let i = 0; i < 1_000; i += 250) await hub.publish(Array.from({ length: 250 }, (_, j) => changed(schoolId, 1, 2 + i + j, t0 + 1)));
    await sim.advance(1_000);
    await hub.publish([changed(schoolId, 1, 1_002, t0 + 2), changed(schoolId, 1, 1_003, t0 + 3), changed(schoolId, 1, 1_004, t0 + 4)]);
    await sim.advance(1_000);
    // Another course delivered: the receiver works, so the notice goes.
    await hub.publish([changed(schoolId, 2, 1_005, t0 + 5)]);
    await sim.advance(20 * 60_000);
    const first = { webhookId: hook.id, from: iso(t0 + 2), to: iso(t0 + 4), missed: 3, resumeCursor: "chg_1001" };
    expect(notices(host)).toEqual([first]);
    // A second gap within the hour waits for it, then is noticed once.
    await hub.publish([changed(schoolId, 1, 1_007, t0 + 6), changed(schoolId, 1, 1_006, t0 + 7)]);
    await sim.advance(20 * 60_000);
    expect(notices(host)).toEqual([first]);
    await drainByAlarms(sim, [hubStub(schoolId), courierStub(hook.id)], 2 * HOUR);
    expect(notices(host)).toEqual([first, { webhookId: hook.id, from: iso(t0 + 6), to: iso(t0 + 7), missed: 2, resumeCursor: "chg_1005" }]);
  });
});

describe("the feed's 410 CURSOR_EXPIRED", () => {
  it("names the change cursor from which the change query returns every course the reader could have missed", async () => {
    sim = SimulatedPlatform.virtual().install();
    const { schoolId, key } = await newSchool("m410");
    const hub = hubFor(env, schoolId);
    const t0 = sim.clock.now();
    await hub.publish([changed(schoolId, 1, 5, t0)]);
    await sim.advance(DAY);
    await hub.publish([changed(schoolId, 2, 9, t0 + DAY), changed(schoolId, 3, 8, t0 + DAY)]);
    const seqs = await inHub(schoolId, (_h, state) =>
      state.storage.sql
        .exec<{ seq: number }>(`SELECT seq FROM events ORDER BY seq`)
        .toArray()
        .map((r) => r.seq),
    );
    const expired = async (seq: number) => {
      const res = await callJson(`/v3/events?after=${encodeCursor({ seq, at: sim!.clock.now() - 8 * DAY })}`, { key });
      expect([res.status, res.body.code]).toEqual([410, "CURSOR_EXPIRED"]);
      return res.body.details;
    };
    const resume = (cursor: string) => [{ parameter: "after", message: `older than the retention; resume the change query after ${cursor}` }];
    // Before everything: the lowest change, minus 1.
    expect(await expired(seqs[0]! - 1)).toEqual(resume("chg_4"));
    // After the first day's event: the second day's lowest, minus 1.
    expect(await expired(seqs[0]!)).toEqual(resume("chg_7"));
    // After every event: no course change missed, the highest known.
    expect(await expired(seqs[2]!)).toEqual(resume("chg_9"));
    // A course event without a change cursor after the position: from the start.
    await sim.advance(DAY);
    await hub.publish([changed(schoolId, 4, null, t0 + 2 * DAY)]);
    expect(await expired(seqs[2]!)).toEqual(resume("chg_0"));
  });
});
