/**
 * Bytes of event bodies held at once (docs/architecture.md § The outbox): the sweep reads
 * stored payloads one slice of at most 1,000,000 bytes per hub, at most 5 hubs at a time, so
 * no more than 5,000,000 bytes of bodies are read and not yet acknowledged at once; the
 * largest course write (a PATCH signing 100 professors of a course with 1,000 groups: 101
 * events of about 150 KB stored) binds one body, not 101, and publishes 1,000,000 bytes a
 * call at most. Measured at the bindings: what D1 returns and is bound, what the hub receives.
 */
import { createExecutionContext, env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { shardFor } from "../../src/db/shards";
import { sweepOutbox } from "../../src/events/outbox";
import type { SchoolEvent } from "../../src/events/types";
import worker from "../../src/index";
import { utf8Bytes } from "../../src/lib/batches";
import { recordingD1 } from "../support/d1-statements";
import { loadFixture, shardNameOf } from "../support/shards";
import { courseEvent, newSchool } from "../support/webhooks/harness";

const hour = 3_600_000;
const later = Date.now() + hour;
const ids = (prefix: string, n: number) => Array.from({ length: n }, (_, i) => `${prefix}${String(i).padStart(64 - prefix.length, "0")}`);
const GROUPS = ids("grp_", 1_000);
const PROFESSORS = ids("prf_", 100);

/** An event of the contract's largest course, with its `previous` (as the outbox stores it): about 150 KB. */
function largestEvent(schoolId: string): SchoolEvent {
  const e = courseEvent(schoolId);
  return {
    ...e,
    data: { course: { ...e.data.course!, groupIds: GROUPS, professorIds: PROFESSORS } },
    previous: { trainingId: null, groupIds: GROUPS, professorIds: PROFESSORS },
  };
}

/** `n` unpublished rows of `schoolId` on SHARD_0, each the largest event under its own id, an hour before `later`. */
async function largestRows(schoolId: string, n: number): Promise<void> {
  await env.SHARD_0.prepare(
    `WITH RECURSIVE k(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM k WHERE i < ?3 - 1)
     INSERT INTO outbox (event_id, school_id, payload, created_at)
     SELECT printf('evt_%s_%04d', ?1, i), ?1, json_set(?2, '$.id', printf('evt_%s_%04d', ?1, i)), ?4 + i FROM k`,
  )
    .bind(schoolId, JSON.stringify(largestEvent(schoolId)), n, later - hour)
    .run();
}

/**
 * `db` whose statements' results are counted: each payload read is alive (by event id) until
 * `release` names it; `peak` is the most bytes alive at once, `largestRead` the most payload
 * bytes one statement returned.
 */
function payloadMeter(db: D1Database) {
  const alive = new Map<string, number>();
  const m = {
    peak: 0,
    largestRead: 0,
    release: (eventIds: string[]) => {
      for (const id of eventIds) alive.delete(id);
    },
  };
  const count = (rows: Record<string, unknown>[]) => {
    let read = 0;
    for (const r of rows) {
      if (typeof r.payload !== "string" || typeof r.event_id !== "string") continue;
      read += utf8Bytes(r.payload);
      alive.set(r.event_id, utf8Bytes(r.payload));
    }
    m.largestRead = Math.max(m.largestRead, read);
    m.peak = Math.max(
      m.peak,
      [...alive.values()].reduce((a, b) => a + b, 0),
    );
  };
  const statement = (s: D1PreparedStatement): D1PreparedStatement =>
    new Proxy(s, {
      get(t, p) {
        if (p === "bind") return (...v: unknown[]) => statement(t.bind(...v));
        if (p === "all") {
          return async () => {
            const r = await t.all();
            count(r.results as Record<string, unknown>[]);
            return r;
          };
        }
        const v = Reflect.get(t, p, t);
        return typeof v === "function" ? v.bind(t) : v;
      },
    });
  const wrap = <D extends object>(d: D): D =>
    new Proxy(d, {
      get(t, p) {
        const target = t as unknown as D1Database;
        if (p === "prepare") return (q: string) => statement(target.prepare(q));
        if (p === "withSession") return (...a: Parameters<D1Database["withSession"]>) => wrap(target.withSession(...a));
        const v = Reflect.get(t, p, t);
        return typeof v === "function" ? v.bind(t) : v;
      },
    });
  return { db: wrap(db), meter: m };
}

/** A SchoolHub namespace that records each publish's events and JSON bytes, answering after `delayMs` (so calls overlap), or throwing when `fail`. */
function measuringHubs(onPublish: (events: SchoolEvent[]) => void, { delayMs = 0, fail = false } = {}) {
  const calls: number[] = [];
  const published: string[] = [];
  const SCHOOL_HUB = {
    idFromName: (name: string) => ({ name }),
    get: () => ({
      publish: async (events: SchoolEvent[]) => {
        calls.push(utf8Bytes(JSON.stringify(events)));
        await new Promise((resolve) => setTimeout(resolve, delayMs));
        if (fail) throw new Error("hub down (the test's)");
        published.push(...events.map((e) => e.id));
        onPublish(events);
        return {};
      },
    }),
  };
  return { SCHOOL_HUB, calls, published };
}

describe("the bytes of stored bodies the sweep holds at once", () => {
  it("6 schools × 20 rows of the largest events: no read over 1,000,000 bytes of payloads, at most 5,000,000 read and unacknowledged at once, each row published once", async () => {
    const schools = Array.from({ length: 6 }, (_, i) => `sch_bytes_${i}`);
    for (const s of schools) await largestRows(s, 20);
    const { db, meter } = payloadMeter(env.SHARD_0);
    const hubs = measuringHubs((events) => meter.release(events.map((e) => e.id)), { delayMs: 5 });
    const result = await sweepOutbox({ ...env, SHARD_0: db, SCHOOL_HUB: hubs.SCHOOL_HUB } as unknown as typeof env, later);
    expect(result).toMatchObject({ schools: 6, republished: 120, failed: 0 });
    expect(hubs.published).toHaveLength(120);
    expect(new Set(hubs.published).size).toBe(120);
    // A stored row is about 150 KB: several slices per school, each within the bound.
    expect(meter.largestRead).toBeGreaterThan(500_000);
    expect(meter.largestRead).toBeLessThanOrEqual(1_000_000);
    expect(Math.max(...hubs.calls)).toBeLessThanOrEqual(1_000_000);
    expect(meter.peak).toBeLessThanOrEqual(5_000_000);
  }, 60_000);
});

/** A school with 1,000 groups, 100 professors and one course holding them all, none signed; and the request of `body` on that course. */
async function largestCourse(label: string) {
  const { schoolId, key } = await newSchool(label);
  const courseId = `crs_${label}`;
  await loadFixture({
    schools: [{ id: schoolId, name: `School ${schoolId}`, apiKeys: [key] }],
    groups: GROUPS.map((id, i) => ({ id, schoolId, name: `Groupe ${i}` })),
    professors: PROFESSORS.map((id, i) => ({ id, schoolId, firstName: `Prénom${i}`, lastName: `Nom${i}`, email: `p${i}@lycee.fr` })),
    courses: [
      {
        id: courseId,
        schoolId,
        name: 'Cours "é" \\ 😀 \u2028 </script>',
        startDateTime: "2027-02-01T08:00:00Z",
        endDateTime: "2027-02-01T10:00:00Z",
        groupIds: GROUPS,
        professors: PROFESSORS.map((professorId) => ({ professorId, signed: false })),
      },
    ],
  });
  const shard = await shardNameOf(schoolId);
  const patch = (testEnv: typeof env) =>
    worker.fetch(
      new Request(`http://api.test/v3/courses/${courseId}`, {
        method: "PATCH",
        headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
        body: JSON.stringify({ professors: PROFESSORS.map((professorId) => ({ professorId, signed: true })) }),
      }),
      testEnv,
      createExecutionContext(),
    );
  return { schoolId, shard, patch };
}

describe("the bytes the largest course write holds at once", () => {
  it("a PATCH signing 100 professors (101 events of ~150 KB): its statements bind at most 1,000,000 bytes in all, each publish carries at most 1,000,000", async () => {
    const { shard, patch } = await largestCourse("bigwrite");
    const { db, sent } = recordingD1(shardFor(env, shard));
    const hubs = measuringHubs(() => {});
    const res = await patch({ ...env, [shard]: db, SCHOOL_HUB: hubs.SCHOOL_HUB } as unknown as typeof env);
    expect(res.status).toBe(200);
    expect(hubs.published).toHaveLength(101);
    expect(hubs.calls.length).toBeGreaterThan(1);
    expect(Math.max(...hubs.calls)).toBeLessThanOrEqual(1_000_000);
    expect(sent.reduce((n, s) => n + s.boundBytes, 0)).toBeLessThanOrEqual(1_000_000);
  }, 60_000);

  it("each of its 101 stored payloads is its event's JSON, byte for byte (escapes and non-ASCII of the course name included)", async () => {
    const { schoolId, shard, patch } = await largestCourse("bigbytes");
    const res = await patch({ ...env, SCHOOL_HUB: measuringHubs(() => {}, { fail: true }).SCHOOL_HUB } as unknown as typeof env);
    expect(res.status).toBe(200);
    const { results } = await shardFor(env, shard)
      .prepare("SELECT event_id, payload FROM outbox WHERE school_id = ? AND published_at IS NULL ORDER BY rowid")
      .bind(schoolId)
      .all<{ event_id: string; payload: string }>();
    expect(results).toHaveLength(101);
    // The first row is bound whole, as JSON.stringify wrote it: the others are that event but for id, type and professorId.
    const updated = JSON.parse(results[0]!.payload) as SchoolEvent;
    expect(updated.type).toBe("course.updated");
    expect(updated.data.course!.name).toBe('Cours "é" \\ 😀 \u2028 </script>');
    expect(results[0]!.payload).toBe(JSON.stringify(updated));
    const expected = PROFESSORS.map((professorId, i) =>
      JSON.stringify({ ...updated, id: results[i + 1]!.event_id, type: "course.professor_signed", data: { ...updated.data, professorId } }),
    );
    expect(results.slice(1).map((r) => r.payload)).toEqual(expected);
  }, 60_000);
});
