/**
 * Size is never a fault (docs/reference.md § Event delivery; docs/architecture.md §
 * Invariants): the largest events the contract allows — a course with 1,000 groups of
 * 64-character ids and 100 professors, about 75 KB an event — in a 101-event write, a burst
 * of writes, a backlog of 500, and a disable of a 40,000-row queue, all on the Workers
 * runtime behind production's size limits (test/support/setup.ts installs them: 2,000,000
 * bytes per bound value, 100 KB per statement, for D1 and for the objects' SQLite), shown for
 * D1 through a request to the Worker.
 */

import { env, runDurableObjectAlarm } from "cloudflare:test";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { hubFor } from "../../src/events/hub-client";
import type { SchoolEvent } from "../../src/events/types";
import { cutBatches, ItemTooLarge } from "../../src/lib/batches";
import { mintId } from "../../src/lib/ids";
import { courierFor } from "../../src/webhooks/rpc";
import { feedEvents } from "../support/feed";
import { callJson, loadFixture } from "../support/helpers";
import { shardOf } from "../support/shards";
import { courseEvent, drain, eventually, inCourier, inHub, newSchool, queuedCount, register } from "../support/webhooks/harness";
import { Receivers } from "../support/webhooks/receivers";

const rx = new Receivers();
beforeAll(() => {
  rx.install();
});
afterAll(() => rx.restore());

/** `n` distinct ids of exactly 64 characters. */
const longIds = (prefix: string, n: number) => Array.from({ length: n }, (_, i) => `${prefix}${String(i).padStart(64 - prefix.length, "0")}`);
// Built once, shared by every course and event of the file.
const GROUP_IDS = longIds("grp_", 1_000);
const PROFESSOR_IDS = longIds("prf_", 100);

/** Loads a school's 1,000 groups and 100 professors and `courses` courses holding them all (professors unsigned). */
async function largeSchool(label: string, courses: number): Promise<{ schoolId: string; key: string; courseIds: string[] }> {
  const { schoolId, key } = await newSchool(label);
  const courseIds = Array.from({ length: courses }, (_, i) => `crs_${label}_${i}`);
  await loadFixture({
    schools: [{ id: schoolId, name: `School ${schoolId}`, apiKeys: [key] }],
    groups: GROUP_IDS.map((id, i) => ({ id, schoolId, name: `Groupe ${i}` })),
    professors: PROFESSOR_IDS.map((id, i) => ({ id, schoolId, firstName: `Prénom${i}`, lastName: `Nom${i}`, email: `p${i}@lycee.fr` })),
    courses: courseIds.map((id) => ({
      id,
      schoolId,
      name: `Cours ${id}`,
      startDateTime: "2027-02-01T08:00:00Z",
      endDateTime: "2027-02-01T10:00:00Z",
      groupIds: GROUP_IDS,
      professors: PROFESSOR_IDS.map((professorId) => ({ professorId, signed: false })),
    })),
  });
  return { schoolId, key, courseIds };
}

/** The school's outbox: rows, and rows marked published. */
async function outboxOf(schoolId: string): Promise<{ ids: string[]; published: number; biggest: number }> {
  const { results } = await (await shardOf(schoolId))
    .prepare("SELECT event_id, published_at, length(CAST(payload AS BLOB)) AS bytes FROM outbox WHERE school_id = ? ORDER BY created_at, event_id")
    .bind(schoolId)
    .all<{ event_id: string; published_at: number | null; bytes: number }>();
  return {
    ids: results.map((r) => r.event_id),
    published: results.filter((r) => r.published_at !== null).length,
    biggest: Math.max(...results.map((r) => r.bytes)),
  };
}

describe("production's limits, as the tests run them", () => {
  it("an object's SQL refuses a bound value over 2,000,000 bytes, a statement over 100,000 bytes, 101 parameters", async () => {
    const { schoolId } = await newSchool("seam");
    const refused = await inHub(schoolId, (hub) => {
      const sql = (hub as unknown as { sql: SqlStorage }).sql;
      const attempt = (run: () => unknown) => {
        try {
          run();
          return "ran";
        } catch (err) {
          return String(err).replace(/ \(.*$/, "");
        }
      };
      return [
        attempt(() => sql.exec("SELECT length(?)", "é".repeat(1_000_000)).one()),
        attempt(() => sql.exec("SELECT length(?)", "é".repeat(1_000_001)).one()),
        attempt(() => sql.exec(`SELECT 1 ${" ".repeat(100_000)}`).one()),
        attempt(() => sql.exec(`SELECT ${Array.from({ length: 101 }, () => "?").join(",")}`, ...Array.from({ length: 101 }, () => 1)).one()),
      ];
    });
    expect(refused).toEqual([
      "ran",
      "Error: string or blob too big: SQLITE_TOOBIG",
      "Error: statement too long: SQLITE_TOOBIG",
      "Error: too many SQL variables: SQLITE_RANGE",
    ]);
  });

  it("a request to the Worker whose statement production refuses (a string over 2,000,000 bytes) answers 500 and writes nothing", async () => {
    // 30,000 students of 64-character ids, beyond the 1,000 a write may send (an import cannot
    // make such a course either: its state row would pass 2,000,000 bytes, which the seam
    // refuses as production would): reading its state builds a list of 30,000 × 67 =
    // 2,010,000 bytes, which production's D1 refuses to build. The test writes the relation
    // rows itself, in statements within the limits.
    const { schoolId, key } = await newSchool("seamreq");
    const students = longIds("stu_", 30_000);
    await loadFixture({
      schools: [{ id: schoolId, name: `School ${schoolId}`, apiKeys: [key] }],
      students: students.map((id, i) => ({ id, schoolId, firstName: `P${i}`, lastName: `N${i}`, email: `s${i}@lycee.fr` })),
      courses: [{ id: "crs_seamreq", schoolId, name: "Cours trop lourd", startDateTime: "2027-02-01T08:00:00Z", endDateTime: "2027-02-01T10:00:00Z" }],
    });
    const shard = await shardOf(schoolId);
    const insert = shard.prepare("INSERT INTO course_students (school_id, course_id, student_id) SELECT ?, 'crs_seamreq', value FROM json_each(?)");
    await shard.batch([0, 10_000, 20_000].map((from) => insert.bind(schoolId, JSON.stringify(students.slice(from, from + 10_000)))));
    const before = await callJson("/v3/courses/crs_seamreq", { key });
    expect([before.status, before.body.result.name, before.body.result.version]).toEqual([200, "Cours trop lourd", 1]);
    const patched = await callJson("/v3/courses/crs_seamreq", { method: "PATCH", key, json: { name: "Renommé" } });
    expect([patched.status, patched.body.code]).toEqual([500, "INTERNAL_ERROR"]);
    // Nothing half-written: the course as it was, no event in the outbox.
    const after = await callJson("/v3/courses/crs_seamreq", { key });
    expect(after.body.result).toEqual(before.body.result);
    expect((await outboxOf(schoolId)).ids).toEqual([]);
  }, 60_000);
});

describe("cutBatches", () => {
  it("cuts by count and by the UTF-8 bytes of each batch's JSON array, in order, each batch's json parsing back to its items", () => {
    const items = ["é".repeat(10), "a".repeat(20), "b", "c", "d"];
    // '"éé…"' is 22 bytes (10 × 2 + the quotes), '"aa…"' 22, '"b"' 3: the first two make an array of 47.
    const batches = cutBatches(items, { count: 2, bytes: 50 });
    expect(batches.map((b) => b.items)).toEqual([[items[0], items[1]], ["b", "c"], ["d"]]);
    for (const b of batches) expect(JSON.parse(b.json)).toEqual(b.items);
    expect(cutBatches(items, { count: 10, bytes: 47 }).map((b) => b.items.length)).toEqual([2, 3]);
    expect(cutBatches(items, { count: 10, bytes: 46 }).map((b) => b.items.length)).toEqual([1, 4]);
    expect(cutBatches([], { count: 1, bytes: 10 })).toEqual([]);
  });

  it("an item whose array alone is over the bytes is refused, whatever the count", () => {
    expect(() => cutBatches(["x".repeat(9)], { count: 10, bytes: 12 })).toThrow(ItemTooLarge);
    expect(cutBatches(["x".repeat(8)], { count: 10, bytes: 12 })).toEqual([{ items: ["x".repeat(8)], json: `["${"x".repeat(8)}"]` }]);
  });

  it("an encoder splices JSON it already holds: the batch binds it once, unescaped", () => {
    const body = JSON.stringify({ a: 'é"' });
    const [batch] = cutBatches([body], { count: 1, bytes: 100 }, (b) => `[1,${b}]`);
    expect(batch!.json).toBe(`[[1,${body}]]`);
  });
});

describe("bodies spliced in as JSON, not escaped again", () => {
  it("a body is delivered byte for byte as published: escapes, non-ASCII, lone surrogates, numbers", async () => {
    const { schoolId, key } = await newSchool("bytes");
    await register(key, "https://bytes.example.com/in");
    const event = courseEvent(schoolId);
    const tricky = `quote " backslash \\ tab \t nl \n u2028 \u2028 é 😀 lone \ud800 nul \u0000 </script>`;
    const published = { ...event, data: { course: { ...event.data.course!, name: tricky, classroom: "1e21 0.1 -0" } } };
    await hubFor(env, schoolId).publish([published]);
    await drain(schoolId);
    expect(rx.to("bytes.example.com").map((r) => r.body)).toEqual([JSON.stringify(published)]);
  });
});

const signAll = { professors: PROFESSOR_IDS.map((professorId) => ({ professorId, signed: true })) };

describe("the largest events the contract allows", () => {
  it("a PATCH signing all 100 professors of a course with 1,000 groups: 101 events accepted, in the feed, delivered, marked published", async () => {
    const { schoolId, key, courseIds } = await largeSchool("big", 1);
    await register(key, "https://big.example.com/in");
    const patched = await callJson(`/v3/courses/${courseIds[0]}`, { method: "PATCH", key, json: signAll });
    expect(patched.status).toBe(200);
    const outbox = await outboxOf(schoolId);
    expect(outbox.ids).toHaveLength(101);
    // Published rows keep no payload; the events (about 75 KB each) are the hub's now.
    expect(outbox.biggest).toBe(0);
    expect(outbox.published).toBe(101);
    // The feed holds them in the write's order: the update, then one signature per professor.
    const feed = await feedEvents(key);
    expect(feed.map((e) => e.id).sort()).toEqual([...outbox.ids].sort());
    expect(feed.map((e) => e.type)).toEqual(["course.updated", ...PROFESSOR_IDS.map(() => "course.professor_signed")]);
    await drain(schoolId);
    const got = rx.to("big.example.com");
    expect([...new Set(got.map((r) => r.event.id))].sort()).toEqual([...outbox.ids].sort());
    expect(Math.min(...got.map((r) => r.body.length))).toBeGreaterThan(70_000);
  });

  it("a burst of 60 such course writes at once: every event delivered to both registrations", async () => {
    const { schoolId, key, courseIds } = await largeSchool("burst", 60);
    await register(key, "https://burst-a.example.com/in");
    await register(key, "https://burst-b.example.com/in");
    const answers = await Promise.all(
      courseIds.map((id, i) =>
        callJson(`/v3/courses/${id}`, {
          method: "PATCH",
          key,
          json: { name: `Renommé ${i}`, professors: [{ professorId: PROFESSOR_IDS[i % 100], signed: true }] },
        }),
      ),
    );
    expect(answers.map((a) => a.status)).toEqual(courseIds.map(() => 200));
    const outbox = await outboxOf(schoolId);
    expect([outbox.ids.length, outbox.published]).toEqual([120, 120]);
    await drain(schoolId);
    for (const host of ["burst-a.example.com", "burst-b.example.com"]) {
      expect([...rx.eventIds(host)].sort(), host).toEqual([...outbox.ids].sort());
    }
    // Loading 60 courses of 1,000 groups into local D1 and writing them takes most of it.
  }, 60_000);

  it("a hand-over backlog of 500 events of 75 KB: the courier takes and delivers all 500", async () => {
    const { schoolId, key } = await newSchool("backlog");
    await register(key, "https://backlog.example.com/in");
    const template = courseEvent(schoolId);
    const data = { course: { ...template.data.course!, groupIds: GROUP_IDS, professorIds: PROFESSOR_IDS } };
    const events: SchoolEvent[] = Array.from({ length: 500 }, () => ({ ...template, id: mintId("evt"), data }));
    expect(JSON.stringify(events[0]).length).toBeGreaterThan(70_000);
    // Accepted in one synchronous run of the hub: the first hand-over is under way with the
    // first 25 while the other 475 (about 35 MB) wait behind the courier's cursor.
    const accepted = await inHub(schoolId, (h) => {
      let n = 0;
      for (let i = 0; i < 500; i += 25) n += h.publish(events.slice(i, i + 25)).accepted;
      return n;
    });
    expect(accepted).toBe(500);
    await eventually(() => rx.eventIds("backlog.example.com").size === 500, "500 deliveries", 50_000);
    expect([...rx.eventIds("backlog.example.com")].sort()).toEqual(events.map((e) => e.id).sort());
  }, 60_000);
});

/** Fills registration `webhookId`'s queue with `n` deliveries due in a day (none starts meanwhile). */
async function fillQueue(webhookId: string, n: number): Promise<void> {
  await inCourier(webhookId, (_c, state) => {
    state.storage.sql.exec(
      `WITH RECURSIVE k(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM k WHERE i < ?1)
       INSERT INTO queue (event_id, event_type, trigger, attempts, next_attempt_at, created_at)
       SELECT printf('evt_%026d', i), 'course.professor_signed', 'event', 0, ?2, ?3 FROM k`,
      n,
      Date.now() + 86_400_000,
      Date.now(),
    );
  });
}

/** Log entries of a courier `skipped`. */
const skippedCount = (webhookId: string) =>
  inCourier(webhookId, (_c, state) => state.storage.sql.exec<{ n: number }>(`SELECT count(*) AS n FROM log WHERE status = 'skipped'`).one().n);

/**
 * Runs registration `webhookId`'s alarm until its queue is empty (a disable's skip, in steps
 * behind its mark: docs/architecture.md § Bounded work and storage), each run ending at most
 * 500 rows. Asserts the bound on every run.
 */
async function skipByAlarms(webhookId: string): Promise<void> {
  for (let run = 0, left = await queuedCount(webhookId); left > 0 && run < 200; run++) {
    await runDurableObjectAlarm(courierFor(env, webhookId));
    const now = await queuedCount(webhookId);
    expect(left - now, `alarm run ${run}`).toBeLessThanOrEqual(500);
    left = now;
  }
}

describe("a disable holds for a queue of 40,000 deliveries", () => {
  it("by PATCH: 200, the queue empty and logged skipped; a repeated PATCH is also 200", async () => {
    const { schoolId, key } = await newSchool("disable");
    const hook = await register(key, "https://down.example.com/in");
    await hubFor(env, schoolId).publish([courseEvent(schoolId)]);
    await drain(schoolId);
    await fillQueue(hook.id, 40_000);
    const first = await callJson(`/v3/webhooks/${hook.id}`, { method: "PATCH", key, json: { enabled: false } });
    expect([first.status, first.body.result?.enabled]).toEqual([200, false]);
    // The PATCH's own step ended a bounded part; the courier's alarm ends the rest.
    expect(await queuedCount(hook.id)).toBeGreaterThan(0);
    await skipByAlarms(hook.id);
    expect(await queuedCount(hook.id)).toBe(0);
    expect(await skippedCount(hook.id)).toBe(40_000);
    const again = await callJson(`/v3/webhooks/${hook.id}`, { method: "PATCH", key, json: { enabled: false } });
    expect(again.status).toBe(200);
    // The courier's stored config is the disabled one (a new instance reads it back).
    expect(await inCourier(hook.id, (_c, state) => (state.storage.kv.get("config") as { enabled: boolean }).enabled)).toBe(false);
  });

  it("by auto-disable (a 410): the registration disabled, the queue empty and logged skipped", async () => {
    const { schoolId, key } = await newSchool("gone");
    const hook = await register(key, "https://gone.example.com/in");
    const event = courseEvent(schoolId);
    await hubFor(env, schoolId).publish([event]);
    await drain(schoolId);
    await fillQueue(hook.id, 40_000);
    rx.on("gone.example.com", 410);
    // A queue past its bound takes no hand-over (back-pressure): a resend queues the attempt that gets the 410.
    expect((await callJson(`/v3/webhooks/${hook.id}/deliveries/${event.id}/resend`, { method: "POST", key })).status).toBe(202);
    await eventually(async () => (await callJson(`/v3/webhooks/${hook.id}`, { key })).body.result.enabled === false, "the auto-disable", 10_000);
    await eventually(
      async () => (await inCourier(hook.id, (_c, state) => state.storage.kv.get("skipping") !== undefined)) || (await queuedCount(hook.id)) === 0,
      "the disable at the courier",
      10_000,
    );
    await skipByAlarms(hook.id);
    expect(await queuedCount(hook.id)).toBe(0);
    const got = await callJson(`/v3/webhooks/${hook.id}`, { key });
    expect([got.body.result.enabled, got.body.result.disabledReason]).toEqual([false, "gone"]);
    expect(await skippedCount(hook.id)).toBe(40_000);
    expect(await inCourier(hook.id, (_c, state) => (state.storage.kv.get("config") as { enabled: boolean }).enabled)).toBe(false);
  });
});
