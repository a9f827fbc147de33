/**
 * No course held by another's failure (docs/reference.md § "Event delivery", ordering and
 * back-pressure; docs/architecture.md § Bounded work and storage): with `ordering: "course"`,
 * a head its receiver refuses for hours, with more than 1,000 later events of its course held
 * behind it, takes none of the room of other courses' events — they are delivered with the
 * same delay as to a control registration of the same school whose receiver refuses nothing.
 * The held ones have a bound of their own: past 1,000 per course they end `skipped`. On the
 * virtual clock, driven by the objects' own alarms.
 */
import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it } from "vitest";
import { hubFor } from "../../src/events/hub-client";
import type { SchoolEvent } from "../../src/events/types";
import { take } from "../../src/webhooks/courier/queue";
import type { HandedEvent } from "../../src/webhooks/rpc";
import { callJson } from "../support/helpers";
import { drainByAlarms } from "../support/webhooks/alarms";
import { courierStub, courseEvent, hubStub, inCourier, newSchool, ownStorage, register } from "../support/webhooks/harness";
import { SimulatedPlatform } from "../support/webhooks/platform-sim";

/** The contract's bounds on deliveries held behind one course's head, and in a whole registration. */
const COURSE_HELD = 1_000;
const REGISTRATION_HELD = 5_000;
const HOUR_MS = 3_600_000;

let sim: SimulatedPlatform | undefined;
afterEach(() => {
  sim?.restore();
  sim = undefined;
});

describe("a course whose head is refused for 3 hours", () => {
  it("holds 1,000 later events of its course, skips the rest, and delays no event of 10 other courses", async () => {
    sim = SimulatedPlatform.virtual().install();
    sim.delay = [10, 10];
    const { schoolId, key } = await newSchool("iso");
    const failing = await register(key, "https://iso-failing.example.com/in");
    const control = await register(key, "https://iso-control.example.com/in");
    // The failing registration's receiver refuses every event of course 0.
    sim.on("iso-failing.example.com", (req) => ((req.event.data.course as { id: string } | undefined)?.id === "crs_0" ? 500 : 204));
    const hub = hubFor(env, schoolId);
    const stubs = [hubStub(schoolId), courierStub(failing.id), courierStub(control.id)];

    // The head of course 0, then 1,005 later events of it.
    const blocked = Array.from({ length: 1 + COURSE_HELD + 5 }, () => courseEvent(schoolId, "course.updated", 0));
    for (let i = 0; i < blocked.length; i += 100) await hub.publish(blocked.slice(i, i + 100));
    await sim.advance(1_000);

    // For 3 hours, every 20 minutes, one event of each of courses 1 to 10.
    const published = new Map<string, number>();
    const others: SchoolEvent[] = [];
    for (let wave = 0; wave < 9; wave++) {
      const events = Array.from({ length: 10 }, (_, c) => courseEvent(schoolId, "course.updated", c + 1));
      for (const e of events) published.set(e.id, sim.clock.now());
      others.push(...events);
      await hub.publish(events);
      await drainByAlarms(sim, stubs, HOUR_MS / 3);
    }
    expect(sim.clock.now() - (published.get(others[0]!.id) ?? 0)).toBeGreaterThanOrEqual(3 * HOUR_MS);

    // The head was refused all along: retried, never let go; nothing later of its course sent.
    const toFailing = sim.to("iso-failing.example.com");
    const course0 = toFailing.filter((r) => (r.event.data.course as { id: string } | undefined)?.id === "crs_0");
    expect(course0.length).toBeGreaterThan(1);
    expect(new Set(course0.map((r) => r.event.id))).toEqual(new Set([blocked[0]!.id]));

    // Every event of the other courses reached both receivers once. A wave's 10 events start
    // 5 at once (the courier's slots) and 5 when the first answers come (10 ms): the failing
    // registration's delays are exactly those of a courier with nothing held, and none is
    // later than the control's (whose own slots also carry the failing one's notices).
    const delays = (host: string) => new Map(sim!.to(host).map((r) => [r.event.id, r.sentAt - (published.get(r.event.id) ?? Number.NaN)]));
    const sorted = (d: Map<string, number>) => others.map((e) => d.get(e.id) ?? Number.POSITIVE_INFINITY).sort((a, b) => a - b);
    const failingDelays = sorted(delays("iso-failing.example.com"));
    const controlDelays = sorted(delays("iso-control.example.com"));
    expect(failingDelays.filter((d) => d === Number.POSITIVE_INFINITY).length, "events of other courses not delivered").toBe(0);
    expect(failingDelays).toEqual([...Array<number>(45).fill(0), ...Array<number>(45).fill(10)]);
    expect(failingDelays.filter((d, i) => d > controlDelays[i]!)).toEqual([]);
    // Besides those, the registration was told of the 5 events past its course's bound (docs/reference.md § "Missed events").
    const missed = toFailing.filter((r) => r.event.type === "webhook.events_missed");
    expect(missed.reduce((n, r) => n + (r.event.data.missed as number), 0)).toBe(5);
    expect(toFailing.length - course0.length - missed.length).toBe(others.length);

    // Held: the course's 1,000 later events; the 5 past the bound ended skipped, recoverable.
    const queue = await inCourier(failing.id, (_c, state) =>
      state.storage.sql.exec<{ held: number; rows: number }>(`SELECT COUNT(*) AS rows, TOTAL(held) AS held FROM queue`).one(),
    );
    expect(queue).toEqual({ rows: 1 + COURSE_HELD, held: COURSE_HELD });
    const skipped = await callJson(`/v3/webhooks/${failing.id}/deliveries?status=skipped`, { key });
    expect(skipped.status).toBe(200);
    expect((skipped.body.result as { eventId: string; error: string }[]).map((d) => [d.eventId, d.error]).reverse()).toEqual(
      blocked.slice(1 + COURSE_HELD).map((e) => [e.id, "course backlog full"]),
    );
  }, 240_000);

  it("several failing courses: at most 5,000 held behind failing heads in the registration, the next course's events skipped, a new course still queued to send", async () => {
    const { key } = await newSchool("isoall");
    const hook = await register(key, "https://iso-all.example.com/in");
    await inCourier(hook.id, (courier) => {
      const sql = ownStorage(courier).sql;
      let seq = 0;
      const handed = (course: number): HandedEvent => {
        seq += 1;
        const body = JSON.stringify({ id: `evt_iso_${seq}`, type: "course.updated", data: { course: { id: `crs_${course}` } } });
        return { seq, id: `evt_iso_${seq}`, type: "course.updated", body, acceptedAt: Date.now(), skipped: false };
      };
      // Six courses' heads, each failed once (waiting for its retry), then 1,000 later events
      // of each, handed over 500 at a time.
      const heads = Array.from({ length: 6 }, (_, c) => handed(c));
      let cursor = take(sql, heads, 0, true, Date.now(), true).through ?? 0;
      sql.exec(`UPDATE queue SET attempts = 1, next_attempt_at = ? WHERE held = 0`, Date.now() + 300_000);
      const events = Array.from({ length: 6 }, (_, c) => Array.from({ length: COURSE_HELD }, () => handed(c))).flat();
      for (let i = 0; i < events.length; i += 500) {
        const taken = take(sql, events.slice(i, i + 500), cursor, true, Date.now(), true);
        expect(taken.full).toBe(false);
        cursor = taken.through ?? cursor;
      }
      expect(cursor).toBe(seq);
      const count = (where: string) => sql.exec<{ n: number }>(`SELECT COUNT(*) AS n FROM queue WHERE ${where}`).one().n;
      expect([count("held = 0"), count("held = 1")]).toEqual([6, REGISTRATION_HELD]);
      const skipped = sql
        .exec<{ course: string; n: number }>(
          `SELECT e.body ->> '$.data.course.id' AS course, COUNT(*) AS n FROM log l JOIN events e ON e.id = l.event_id
           WHERE l.status = 'skipped' AND l.error = 'course backlog full' GROUP BY course`,
        )
        .toArray();
      expect(skipped).toEqual([{ course: "crs_5", n: COURSE_HELD }]);
      // A course with nothing queued: its event is sendable at once.
      const fresh = handed(6);
      expect(take(sql, [fresh], cursor, true, Date.now(), true)).toEqual({ queued: 1, through: fresh.seq, full: false, gap: null });
      expect(sql.exec<{ held: number }>(`SELECT held FROM queue WHERE event_id = ?`, fresh.id).one().held).toBe(0);
    });
  }, 120_000);
});
