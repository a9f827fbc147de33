/**
 * A school's daily quota of event bytes (docs/reference.md § "Event quota"): its course
 * writes may publish `EVENT_BYTES_PER_DAY` bytes of event bodies (as delivered) per UTC day;
 * the write that would pass it answers 429 EVENT_QUOTA_EXCEEDED with `Retry-After` (seconds
 * to the next UTC day) and writes nothing — no course change, no outbox row, no event —
 * also under concurrent writes. Reads, idempotent replays and the other schools of the
 * shard are unaffected; the next UTC day the school writes again; the cron prunes the
 * counters of past days. Here the Worker is called with a small quota set per request, on
 * a fixed clock (`vi.setSystemTime`).
 */
import { createExecutionContext, createScheduledController, env, waitOnExecutionContext } from "cloudflare:test";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { moveSchool } from "../../src/db/move";
import worker from "../../src/index";
import { utf8Bytes } from "../../src/lib/batches";
import { recordingD1, refusedPlans } from "../support/d1-statements";
import { feedEvents } from "../support/feed";
import { BASE, loadFixture } from "../support/helpers";
import { checkResponse } from "../support/openapi-check";
import { publishPayloads, shardNameOf } from "../support/shards";

/** 23:00 UTC: the next UTC day starts in 3,600 s. */
const LATE_EVENING = Date.parse("2026-09-07T23:00:00.000Z");
const NEXT_DAY = Date.parse("2026-09-08T00:00:00.000Z");

beforeEach(() => {
  vi.useFakeTimers({ toFake: ["Date"] });
  vi.setSystemTime(LATE_EVENING);
});
afterEach(() => {
  vi.useRealTimers();
});

let schools = 0;

/** Schools of their own, all on SHARD_0, each with one key and the given courses (imported: no event, nothing counted). */
async function schoolsOnShard0(n: number, courses: number): Promise<{ schoolId: string; key: string; courseIds: string[] }[]> {
  const made = Array.from({ length: n }, () => {
    schools += 1;
    const schoolId = `sch_quota${schools}`;
    return { schoolId, key: `sk_test_${schoolId}_0123456789abcdef`, courseIds: Array.from({ length: courses }, (_, i) => `crs_q${schools}_${i}`) };
  });
  await loadFixture(
    {
      schools: made.map((s) => ({ id: s.schoolId, name: `École ${s.schoolId}`, apiKeys: [s.key] })),
      courses: made.flatMap((s) =>
        s.courseIds.map((id) => ({ id, schoolId: s.schoolId, name: "Séance 0", startDateTime: "2026-09-14T08:00:00Z", endDateTime: "2026-09-14T10:00:00Z" })),
      ),
    },
    undefined,
    env,
    "SHARD_0",
  );
  return made;
}

/** Calls the Worker with `EVENT_BYTES_PER_DAY` = `quota` (and `shard0` as SHARD_0), checking the answer against the OpenAPI document. */
async function send(
  method: string,
  path: string,
  key: string,
  quota: number,
  json?: unknown,
  headers: Record<string, string> = {},
  shard0: D1Database = env.SHARD_0,
) {
  const request = new Request(`${BASE}${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(json === undefined ? {} : { "content-type": "application/json" }), ...headers },
    body: json === undefined ? undefined : JSON.stringify(json),
  });
  const exec = createExecutionContext();
  const res = await worker.fetch(
    request as Request<unknown, IncomingRequestCfProperties>,
    { ...env, SHARD_0: shard0, EVENT_BYTES_PER_DAY: String(quota) },
    exec,
  );
  await waitOnExecutionContext(exec);
  await checkResponse(method, `${BASE}${path}`, res.clone());
  return { status: res.status, headers: res.headers, body: (await res.json()) as any };
}

/** UTF-8 bytes of an event's body as delivered and as the feed lists it. */
const bodyBytes = (event: unknown) => utf8Bytes(JSON.stringify(event));

/** What the school's writes counted today against the quota: event and stored bytes. */
async function counted(schoolId: string): Promise<number> {
  return (await env.SHARD_0.prepare("SELECT sum(bytes + stored_bytes) AS n FROM event_bytes WHERE school_id = ?").bind(schoolId).first<{ n: number }>())!.n;
}

/** The school's outbox rows (published or not). */
async function outboxCount(schoolId: string): Promise<number> {
  return (await env.SHARD_0.prepare("SELECT count(*) AS n FROM outbox WHERE school_id = ?").bind(schoolId).first<{ n: number }>())!.n;
}

const rename = (name: string) => ({ name });

describe("the daily quota of event bytes", () => {
  it("writes up to the quota succeed; the one past it is 429 EVENT_QUOTA_EXCEEDED until the next UTC day, writing nothing", async () => {
    const [a, b] = await schoolsOnShard0(2, 1);
    const [courseA] = a!.courseIds;
    const big = 1_000_000;
    // One rename: one `course.updated` of a fixed size (same name length, one-digit version).
    const first = await send("PATCH", `/v3/courses/${courseA}`, a!.key, big, rename("Séance 1"));
    expect(first.status).toBe(200);
    const [event] = await feedEvents(a!.key);
    // One rename's count: its event and its course row (same lengths: the same count).
    const size = await counted(a!.schoolId);
    const quota = 3 * size;

    // The second and third renames take the day's total to the quota exactly: accepted.
    for (const name of ["Séance 2", "Séance 3"]) expect((await send("PATCH", `/v3/courses/${courseA}`, a!.key, quota, rename(name))).status).toBe(200);
    const accepted = await feedEvents(a!.key);
    expect(accepted.map(bodyBytes)).toEqual([bodyBytes(event), bodyBytes(event), bodyBytes(event)]);

    // The fourth would pass it: refused, nothing written, no event.
    const over = await send("PATCH", `/v3/courses/${courseA}`, a!.key, quota, rename("Séance 4"));
    expect([over.status, over.body.code, over.headers.get("retry-after")]).toEqual([429, "EVENT_QUOTA_EXCEEDED", "3600"]);
    expect(over.body.message).toContain(`${quota.toLocaleString("en-US")} bytes of events and stored data per UTC day`);
    // A create is refused alike: no course made.
    const created = await send("POST", "/v3/courses", a!.key, quota, {
      name: "Nouvelle",
      startDateTime: "2026-09-15T08:00:00Z",
      endDateTime: "2026-09-15T10:00:00Z",
    });
    expect([created.status, created.body.code, created.headers.get("retry-after")]).toEqual([429, "EVENT_QUOTA_EXCEEDED", "3600"]);

    // Reads keep working and show the course as the third rename left it, and one course only.
    const read = await send("GET", `/v3/courses/${courseA}`, a!.key, quota);
    expect([read.status, read.body.result.name, read.body.result.version]).toEqual([200, "Séance 3", 4]);
    const list = await send("GET", "/v3/courses", a!.key, quota);
    expect(list.body.result.map((c: { id: string }) => c.id)).toEqual([courseA]);
    expect(await outboxCount(a!.schoolId)).toBe(3);
    expect((await feedEvents(a!.key)).map((e) => e.id)).toEqual(accepted.map((e) => e.id));

    // Another school on the same shard writes as before.
    expect((await send("PATCH", `/v3/courses/${b!.courseIds[0]}`, b!.key, quota, rename("Séance 1"))).status).toBe(200);

    // The next UTC day, the school writes again.
    vi.setSystemTime(NEXT_DAY);
    const nextDay = await send("PATCH", `/v3/courses/${courseA}`, a!.key, quota, rename("Séance 4"));
    expect([nextDay.status, nextDay.body.result.version]).toEqual([200, 5]);
    expect(await outboxCount(a!.schoolId)).toBe(4);
  });

  it("Retry-After counts the whole seconds to the next UTC midnight", async () => {
    const [a] = await schoolsOnShard0(1, 1);
    vi.setSystemTime(Date.parse("2026-09-07T23:59:58.500Z"));
    const over = await send("PATCH", `/v3/courses/${a!.courseIds[0]}`, a!.key, 1, rename("Séance 1"));
    expect([over.status, over.body.code, over.headers.get("retry-after")]).toEqual([429, "EVENT_QUOTA_EXCEEDED", "2"]);
    vi.setSystemTime(NEXT_DAY);
    const midnight = await send("PATCH", `/v3/courses/${a!.courseIds[0]}`, a!.key, 1, rename("Séance 1"));
    expect([midnight.status, midnight.headers.get("retry-after")]).toEqual([429, "86400"]);
    expect(await outboxCount(a!.schoolId)).toBe(0);
  });

  it("concurrent writes cannot pass it together: exactly as many as fit are accepted", async () => {
    const [a] = await schoolsOnShard0(1, 6);
    const courses = a!.courseIds;
    // Every course's rename makes an event of the same size (same id length, same name, version 2).
    const first = await send("PATCH", `/v3/courses/${courses[0]}`, a!.key, 1_000_000, rename("Séance 1"));
    expect(first.status).toBe(200);
    const size = await counted(a!.schoolId);
    const event = bodyBytes((await feedEvents(a!.key))[0]);
    const answers = await Promise.all(courses.slice(1).map((id) => send("PATCH", `/v3/courses/${id}`, a!.key, 3 * size, rename("Séance 1"))));
    const statuses = answers.map((r) => r.status).sort();
    expect(statuses).toEqual([200, 200, 429, 429, 429]);
    const events = await feedEvents(a!.key);
    expect(events.map(bodyBytes)).toEqual([event, event, event]);
    expect(await outboxCount(a!.schoolId)).toBe(3);
  });

  it("a write that lost its race is not counted: its retry, which wins, is counted once", async () => {
    const [a] = await schoolsOnShard0(1, 2);
    const [warm, raced] = a!.courseIds;
    // Every rename to "Séance 1" makes an event of the same size (same id length, version 2).
    expect((await send("PATCH", `/v3/courses/${warm}`, a!.key, 1_000_000, rename("Séance 1"))).status).toBe(200);
    const size = await counted(a!.schoolId);
    // Another writer changes the course's revision just before the write's batch runs, once:
    // the write loses its compare-and-set, reads again and wins on its second attempt.
    let raced0 = false;
    const racing = <D extends object>(db: D): D =>
      new Proxy(db, {
        get(target, prop) {
          const t = target as unknown as D1Database;
          if (prop === "withSession") return (...args: Parameters<D1Database["withSession"]>) => racing(t.withSession(...args));
          if (prop !== "batch") return Reflect.get(target, prop, target);
          return async (statements: D1PreparedStatement[]) => {
            if (!raced0) {
              raced0 = true;
              await env.SHARD_0.prepare("UPDATE courses SET revision = 'rev_other_writer' WHERE school_id = ? AND id = ?").bind(a!.schoolId, raced).run();
            }
            return t.batch(statements);
          };
        },
      });
    // A quota with room for exactly the two events: the lost attempt, were it counted, would pass it.
    const answer = await send("PATCH", `/v3/courses/${raced}`, a!.key, 2 * size, rename("Séance 1"), {}, racing(env.SHARD_0));
    expect(raced0).toBe(true);
    expect(answer.status).toBe(200);
    expect(await counted(a!.schoolId)).toBe(2 * size);
    expect(await outboxCount(a!.schoolId)).toBe(2);
  });

  it("an idempotent replay of an accepted create answers as first, over the quota too, and is not counted again", async () => {
    const [a] = await schoolsOnShard0(1, 1);
    const json = { name: "Créée", startDateTime: "2026-09-15T08:00:00Z", endDateTime: "2026-09-15T10:00:00Z" };
    const headers = { "idempotency-key": "quota-replay-1" };
    const created = await send("POST", "/v3/courses", a!.key, 1_000_000, json, headers);
    expect(created.status).toBe(201);
    const size = await counted(a!.schoolId);
    // Quota = that one create: every replay still answers 201, and no write fits after it.
    for (let i = 0; i < 3; i++) {
      const replay = await send("POST", "/v3/courses", a!.key, size, json, headers);
      expect([replay.status, replay.headers.get("idempotent-replayed"), replay.body.result.id]).toEqual([201, "true", created.body.result.id]);
    }
    const over = await send("PATCH", `/v3/courses/${a!.courseIds[0]}`, a!.key, size, rename("Séance 1"));
    expect([over.status, over.body.code]).toEqual([429, "EVENT_QUOTA_EXCEEDED"]);
    // Room for exactly one more event of that size: the replays took none of it.
    const room = await send("POST", "/v3/courses", a!.key, 2 * size, { ...json, name: "Créés" });
    expect(room.status).toBe(201);
  });
});

describe("the counters", () => {
  it("a move to another shard carries the school's count of the day: the quota still holds there", async () => {
    const [a] = await schoolsOnShard0(1, 1);
    const course = `/v3/courses/${a!.courseIds[0]}`;
    expect((await send("PATCH", course, a!.key, 1_000_000, rename("Séance 1"))).status).toBe(200);
    const size = await counted(a!.schoolId);
    const shards = { SHARD_0: env.SHARD_0, SHARD_1: env.SHARD_1 };
    expect(await moveSchool({ directory: env.DIRECTORY, shards }, a!.schoolId, "SHARD_1", { publish: publishPayloads })).toMatchObject({ result: "moved" });
    expect(await shardNameOf(a!.schoolId)).toBe("SHARD_1");
    // Room for one more rename of the same size on the new shard, not two.
    expect((await send("PATCH", course, a!.key, 2 * size, rename("Séance 2"))).status).toBe(200);
    const over = await send("PATCH", course, a!.key, 2 * size, rename("Séance 3"));
    expect([over.status, over.body.code]).toEqual([429, "EVENT_QUOTA_EXCEEDED"]);
  });

  it("a move over midnight: yesterday's counter, pruned on the old shard between copy and check, is not copied nor compared", async () => {
    const [a] = await schoolsOnShard0(1, 1);
    const course = `/v3/courses/${a!.courseIds[0]}`;
    expect((await send("PATCH", course, a!.key, 1_000_000, rename("Séance 1"))).status).toBe(200);
    vi.setSystemTime(NEXT_DAY + 1_000);
    expect((await send("PATCH", course, a!.key, 1_000_000, rename("Séance 2"))).status).toBe(200);
    const days = async (d1: D1Database) =>
      (await d1.prepare("SELECT day FROM event_bytes WHERE school_id = ? ORDER BY day").bind(a!.schoolId).all<{ day: number }>()).results.map((r) => r.day);
    const today = Math.floor(NEXT_DAY / 86_400_000);
    expect(await days(env.SHARD_0)).toEqual([today - 1, today]);
    const shards = { SHARD_0: env.SHARD_0, SHARD_1: env.SHARD_1 };
    // The cron's prune of past days runs on the old shard between the copy and the check.
    const onStep = async (step: string) => {
      if (step === "copied") await env.SHARD_0.prepare("DELETE FROM event_bytes WHERE day < ?").bind(today).run();
    };
    expect(await moveSchool({ directory: env.DIRECTORY, shards }, a!.schoolId, "SHARD_1", { publish: publishPayloads, onStep })).toMatchObject({
      result: "moved",
    });
    expect(await days(env.SHARD_1)).toEqual([today]);
  });

  it("the cron prunes the counters of past UTC days, through an index, and keeps today's", async () => {
    const [a, b] = await schoolsOnShard0(2, 1);
    const counters = async () =>
      (await env.SHARD_0.prepare("SELECT count(*) AS n FROM event_bytes WHERE school_id IN (?, ?)").bind(a!.schoolId, b!.schoolId).first<{ n: number }>())!.n;
    // Yesterday's write of school a, today's of school b (the statement's plan read back too).
    expect((await send("PATCH", `/v3/courses/${a!.courseIds[0]}`, a!.key, 1_000_000, rename("Séance 1"))).status).toBe(200);
    vi.setSystemTime(NEXT_DAY + 3_600_000);
    const recorded = recordingD1(env.SHARD_0);
    expect((await send("PATCH", `/v3/courses/${b!.courseIds[0]}`, b!.key, 1_000_000, rename("Séance 1"), {}, recorded.db)).status).toBe(200);
    expect(await counters()).toBe(2);

    const exec = createExecutionContext();
    await worker.scheduled(createScheduledController({ scheduledTime: Date.now(), cron: "* * * * *" }), { ...env, SHARD_0: recorded.db }, exec);
    await waitOnExecutionContext(exec);
    const left = await env.SHARD_0.prepare("SELECT school_id FROM event_bytes WHERE school_id IN (?, ?)")
      .bind(a!.schoolId, b!.schoolId)
      .all<{ school_id: string }>();
    expect(left.results.map((r) => r.school_id)).toEqual([b!.schoolId]);

    const quotaStatements = recorded.sent.filter((s) => /event_bytes/.test(s.sql));
    expect(quotaStatements.map((s) => s.sql.trim().split(/\s+/)[0])).toEqual(["INSERT", "DELETE"]);
    expect(await refusedPlans(env.SHARD_0, quotaStatements)).toEqual([]);
  });
});

describe("what a write stores counts against the quota too", () => {
  /** A school on SHARD_0 with 1,000 students (`stu_0000`…`stu_0999`) and one course, imported (nothing counted). */
  async function schoolWithStudents(): Promise<{ schoolId: string; key: string; courseId: string; studentIds: string[] }> {
    schools += 1;
    const schoolId = `sch_store${schools}`;
    const key = `sk_test_${schoolId}_0123456789abcdef`;
    const courseId = `crs_s${schools}_0`;
    const studentIds = Array.from({ length: 1000 }, (_, i) => `stu_${String(i).padStart(4, "0")}`);
    await loadFixture(
      {
        schools: [{ id: schoolId, name: `École ${schoolId}`, apiKeys: [key] }],
        students: studentIds.map((id, i) => ({ id, schoolId, firstName: `Prénom ${i}`, lastName: `Nom ${i}`, email: `eleve${i}@ecole.example` })),
        courses: [{ id: courseId, schoolId, name: "Séance 0", startDateTime: "2026-09-14T08:00:00Z", endDateTime: "2026-09-14T10:00:00Z" }],
      },
      undefined,
      env,
      "SHARD_0",
    );
    return { schoolId, key, courseId, studentIds };
  }

  /** Statuses of `write()` called `times` times, up to and with the first that is not 2xx. */
  async function untilRefused(times: number, write: (i: number) => Promise<{ status: number; body: any }>): Promise<{ statuses: number[]; last: any }> {
    const statuses: number[] = [];
    let last: any;
    for (let i = 0; i < times; i++) {
      const r = await write(i);
      statuses.push(r.status);
      last = r.body;
      if (r.status >= 300) break;
    }
    return { statuses, last };
  }

  // The contract (docs/reference.md § "Event quota"): a relation row counts 4 × the UTF-8 bytes
  // of its values, a record part 2 ×. Enrolling the 1,000 students stores 1,000 rows (school
  // id, course id, `stu_0000`: 27 bytes for the imported course, 49 for a created one, whose id
  // is minted: 108,000 or 196,000 counted) and their record part of about 85,000 bytes (170,000
  // counted), besides the course row and the events, whose bodies alone count about 500
  // bytes. In 1,000,000 bytes fit three enrolments of the imported course (about 300,000
  // each), two creates (about 390,000 each).
  const QUOTA = 1_000_000;

  it("a PATCH toggling studentIds counts the rows it inserts: the loop is refused once the quota is met; reads keep working", async () => {
    const { schoolId, key, courseId, studentIds } = await schoolWithStudents();
    const path = `/v3/courses/${courseId}`;
    // Enrol all, drop all, enrol all again …: the fourth enrolment passes the quota.
    const { statuses, last } = await untilRefused(20, (i) => send("PATCH", path, key, QUOTA, { studentIds: i % 2 === 0 ? studentIds : [] }));
    expect(statuses).toEqual([200, 200, 200, 200, 200, 200, 429]);
    expect(last.code).toBe("EVENT_QUOTA_EXCEEDED");
    expect(await counted(schoolId)).toBeLessThanOrEqual(QUOTA);
    // Reads keep working and show the course as the last accepted PATCH left it.
    const read = await send("GET", `${path}?includeStudents=true`, key, QUOTA);
    expect([read.status, read.body.result.students, read.body.result.version]).toEqual([200, [], 7]);
    const list = await send("GET", "/v3/courses", key, QUOTA);
    expect([list.status, list.body.result.length]).toEqual([200, 1]);
  });

  it("the loop of 1,000-student POSTs is refused once the quota is met, creating nothing more; reads keep working", async () => {
    const { schoolId, key, studentIds } = await schoolWithStudents();
    const course = (i: number) => ({ name: `Cours ${i}`, startDateTime: "2026-09-15T08:00:00Z", endDateTime: "2026-09-15T10:00:00Z", studentIds });
    const { statuses, last } = await untilRefused(20, (i) => send("POST", "/v3/courses", key, QUOTA, course(i)));
    expect(statuses).toEqual([201, 201, 429]);
    expect(last.code).toBe("EVENT_QUOTA_EXCEEDED");
    expect(await counted(schoolId)).toBeLessThanOrEqual(QUOTA);
    const list = await send("GET", "/v3/courses?includeStudents=true", key, QUOTA);
    expect(list.status).toBe(200);
    expect(list.body.result.map((c: { students: unknown[] }) => c.students.length).sort()).toEqual([0, 1000, 1000]);
  });
});
