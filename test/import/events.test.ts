/**
 * The import's events (docs/operations.md § "Data import (operators)", docs/reference.md §
 * "Event delivery", § "Event quota"): an import publishes one `course.created` or
 * `course.updated` per course whose version it raised, through the outbox, in the batch
 * that changed it — the new version, `updatedAt` the import's time, a change number each in
 * course-id order — and nothing on a re-import; the feed serves them with the body a course
 * write of the same state publishes; imports are counted against the school's day but not
 * refused by its quota, up to the import bound.
 */
import { createExecutionContext, env, waitOnExecutionContext } from "cloudflare:test";
import { exports } from "cloudflare:workers";
import { drizzle } from "drizzle-orm/d1";
import { describe, expect, it } from "vitest";
import { stateToRecord } from "../../src/courses/change";
import { loadCourseState } from "../../src/courses/storage";
import { importEvents } from "../../src/events/import-events";
import { sweepOutbox } from "../../src/events/outbox";
import type { SchoolEvent } from "../../src/events/types";
import worker from "../../src/index";
import { utf8Bytes } from "../../src/lib/batches";
import { BASE, callJson, loadFixture } from "../support/helpers";
import { shardOf } from "../support/shards";

const FIRST = Date.parse("2026-09-01T06:00:00.000Z");
const SECOND = Date.parse("2026-09-02T06:00:00.000Z");

let schools = 0;

/** A school of its own with `n` courses `crs_<i>` (i = 1..n), as an import file. */
function schoolFile(n: number) {
  schools += 1;
  const schoolId = `sch_imp${schools}`;
  const key = `sk_test_${schoolId}_0123456789abcdefghijklmnop`;
  const course = (i: number) => ({
    id: `crs_${schoolId}_${String(i).padStart(2, "0")}`,
    schoolId,
    name: `Séance ${i}`,
    startDateTime: "2026-09-14T08:00:00Z",
    endDateTime: "2026-09-14T10:00:00Z",
    trainingId: "trn_1",
    groupIds: ["grp_1"],
    studentIds: ["stu_1"],
  });
  return {
    schoolId,
    key,
    file: {
      schools: [{ id: schoolId, name: `École ${schoolId}`, apiKeys: [key] }],
      trainings: [
        { id: "trn_1", schoolId, name: "BTS" },
        { id: "trn_2", schoolId, name: "Licence" },
      ],
      groups: [
        { id: "grp_1", schoolId, name: "G1" },
        { id: "grp_2", schoolId, name: "G2" },
      ],
      students: [{ id: "stu_1", schoolId, firstName: "Léa", lastName: "Martin", email: "lea@example.org" }],
      courses: Array.from({ length: n }, (_, i) => course(i + 1)),
    },
  };
}
type SchoolFile = ReturnType<typeof schoolFile>["file"];

/** Imports `file` at `now` with its events, as `npm run import` does; `bound` the import bound (bytes). */
const importWithEvents = (file: SchoolFile, now: number, bound?: number) => loadFixture(file, now, env, undefined, importEvents(now, bound));

interface StoredEvent {
  id: string;
  changeCursor: string;
  type: string;
  createdAt: string;
  schoolId: string;
  data: { course: { id: string; version: number; updatedAt: string; name: string } };
  previous?: { trainingId: string | null; groupIds: string[]; professorIds: string[] };
}

/** The school's outbox rows in the order they were written, payloads parsed. */
async function outbox(schoolId: string): Promise<StoredEvent[]> {
  const { results } = await (await shardOf(schoolId))
    .prepare("SELECT payload FROM outbox WHERE school_id = ? ORDER BY rowid")
    .bind(schoolId)
    .all<{ payload: string }>();
  return results.map((r) => JSON.parse(r.payload) as StoredEvent);
}

const seqOf = async (schoolId: string) =>
  (await (await shardOf(schoolId)).prepare("SELECT seq FROM school_changes WHERE school_id = ?").bind(schoolId).first<{ seq: number }>())?.seq;

/**
 * The school's feed (GET /v3/events, one page of 100), read without `callJson`'s check
 * against the OpenAPI document, whose event schemas gain `changeCursor` with the course
 * writes' change cursors (docs/reference.md § "Event delivery").
 */
async function feedEvents(key: string): Promise<SchoolEvent[]> {
  const res = await exports.default.fetch(new Request(`${BASE}/v3/events?limit=100`, { headers: { authorization: `Bearer ${key}` } }));
  expect(res.status).toBe(200);
  const body = (await res.json()) as { result: SchoolEvent[]; pagination: { hasMore: boolean } };
  expect(body.pagination.hasMore).toBe(false);
  return body.result;
}

const number = (cursor: string) => Number(cursor.replace(/^chg_/, ""));

describe("an import's events", () => {
  it("a first import publishes course.created per course, numbered by course id, with no previous keys", async () => {
    const { schoolId, file } = schoolFile(3);
    await importWithEvents(file, FIRST);
    const events = await outbox(schoolId);
    expect(events.map((e) => [e.type, e.data.course.id, e.changeCursor, e.data.course.version, e.createdAt, e.previous])).toEqual(
      file.courses.map((c, i) => ["course.created", c.id, `chg_${i + 1}`, 1, "2026-09-01T06:00:00.000Z", undefined]),
    );
    expect(events.map((e) => Object.keys(e))).toEqual(events.map(() => ["id", "changeCursor", "type", "createdAt", "schoolId", "data"]));
    // Event ids: evt_ + 26 characters, sorting in change order.
    for (const e of events) expect(e.id).toMatch(/^evt_[0-9A-HJKMNP-TV-Z]{26}$/);
    expect([...events.map((e) => e.id)].sort()).toEqual(events.map((e) => e.id));
    expect(new Set(events.map((e) => e.id)).size).toBe(3);
    expect(await seqOf(schoolId)).toBe(3);
  });

  it("an import changing k of n courses publishes exactly k course.updated: new version, updatedAt, strictly increasing numbers", async () => {
    const { schoolId, file } = schoolFile(5);
    await importWithEvents(file, FIRST);
    const changed = {
      ...file,
      courses: file.courses.map((c, i) =>
        i === 0 ? { ...c, name: "Renommée" } : i === 2 ? { ...c, studentIds: [] } : i === 3 ? { ...c, trainingId: "trn_2", groupIds: ["grp_2"] } : c,
      ),
    };
    await importWithEvents(changed, SECOND);
    const events = (await outbox(schoolId)).slice(5);
    const ids = [file.courses[0]!.id, file.courses[2]!.id, file.courses[3]!.id];
    expect(events.map((e) => [e.type, e.data.course.id, e.data.course.version, e.data.course.updatedAt, e.createdAt])).toEqual(
      ids.map((id) => ["course.updated", id, 2, "2026-09-02T06:00:00.000Z", "2026-09-02T06:00:00.000Z"]),
    );
    expect(events.map((e) => number(e.changeCursor))).toEqual([6, 7, 8]);
    // `previous`: each course's filter keys before the change, for the hub's filters.
    expect(events.map((e) => e.previous)).toEqual(ids.map(() => ({ trainingId: "trn_1", groupIds: ["grp_1"], professorIds: [] })));
    expect(await seqOf(schoolId)).toBe(8);
    // The stored courses: the changed ones at their change's number and time, the others as they were.
    const { results } = await (await shardOf(schoolId))
      .prepare("SELECT id, version, updated_at, change_seq FROM courses WHERE school_id = ? ORDER BY id")
      .bind(schoolId)
      .all<{ id: string; version: number; updated_at: number; change_seq: number }>();
    expect(results.map((r) => [r.version, r.updated_at, r.change_seq])).toEqual([
      [2, SECOND, 6],
      [1, FIRST, 2],
      [2, SECOND, 7],
      [2, SECOND, 8],
      [1, FIRST, 5],
    ]);
  });

  it("a re-import of the same file publishes nothing and takes no change number", async () => {
    const { schoolId, file } = schoolFile(4);
    await importWithEvents(file, FIRST);
    await importWithEvents(file, SECOND);
    expect((await outbox(schoolId)).length).toBe(4);
    expect(await seqOf(schoolId)).toBe(4);
    const scratch = await (await shardOf(schoolId)).prepare("SELECT count(*) AS n FROM import_course_states").first<{ n: number }>();
    expect(scratch!.n).toBe(0);
  });

  it("an import adding a course to a school publishes course.created for it alone", async () => {
    const { schoolId, file } = schoolFile(2);
    await importWithEvents(file, FIRST);
    const extra = { ...file.courses[0]!, id: `crs_${schoolId}_00`, name: "Nouvelle" };
    await importWithEvents({ ...file, courses: [...file.courses, extra] }, SECOND);
    const events = (await outbox(schoolId)).slice(2);
    expect(events.map((e) => [e.type, e.data.course.id, e.changeCursor, e.data.course.version, e.previous])).toEqual([
      ["course.created", extra.id, "chg_3", 1, undefined],
    ]);
  });

  it("reach the feed with the body a course write of the same state publishes", async () => {
    const { schoolId, key, file } = schoolFile(2);
    await importWithEvents(file, FIRST);
    await importWithEvents({ ...file, courses: [{ ...file.courses[0]!, name: "Renommée" }, file.courses[1]!] }, SECOND);
    // Marked published, a row keeps no payload: read them before the sweep.
    const stored = await outbox(schoolId);
    // The cron sweep publishes rows unpublished for 30 s.
    await sweepOutbox(env, Date.now() + 60_000);
    const feed = await feedEvents(key);
    expect(feed.map((e) => [e.type, e.data.course!.id])).toEqual([
      ["course.created", file.courses[0]!.id],
      ["course.created", file.courses[1]!.id],
      ["course.updated", file.courses[0]!.id],
    ]);
    // As delivered: the stored body without `previous`, key for key.
    expect(feed.map((e) => JSON.stringify(e))).toEqual(stored.map(({ previous: _, ...e }) => JSON.stringify(e)));
    const db = drizzle(await shardOf(schoolId));
    const last = feed[2]!;
    const state = (await loadCourseState(db, schoolId, file.courses[0]!.id))!;
    // The record a write of this state carries in its events (stateToRecord) and the API's read.
    expect(JSON.stringify(last.data.course)).toBe(JSON.stringify(stateToRecord(state)));
    const read = await callJson(`/v3/courses/${file.courses[0]!.id}`, { key });
    expect(last.data.course).toEqual(read.body.result);
    expect([last.data.course!.version, last.data.course!.updatedAt, last.data.course!.name]).toEqual([2, "2026-09-02T06:00:00.000Z", "Renommée"]);
    // A write's event of the same course: the same envelope and record keys, in the same order.
    const patched = await callJson(`/v3/courses/${file.courses[0]!.id}`, { method: "PATCH", key, json: { name: "Par l'API" } });
    expect(patched.status).toBe(200);
    const written = (await feedEvents(key)).at(-1)!;
    expect(Object.keys(written.data.course!)).toEqual(Object.keys(last.data.course!));
    expect(Object.keys(written).filter((k) => k !== "changeCursor")).toEqual(Object.keys(last).filter((k) => k !== "changeCursor"));
  });
});

/** Calls the Worker with `EVENT_BYTES_PER_DAY` = `quota`. */
async function patchWithQuota(path: string, key: string, quota: number, json: unknown) {
  const request = new Request(`${BASE}${path}`, {
    method: "PATCH",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify(json),
  });
  const exec = createExecutionContext();
  const res = await worker.fetch(request as Request<unknown, IncomingRequestCfProperties>, { ...env, EVENT_BYTES_PER_DAY: String(quota) }, exec);
  await waitOnExecutionContext(exec);
  return { status: res.status, body: (await res.json()) as { code?: string } };
}

const DAY_MS = 86_400_000;

describe("imports and the daily event quota", () => {
  it("are counted apart from the school's writes: never refused by its quota, and never using it up", async () => {
    const now = Date.now();
    const { schoolId, key, file } = schoolFile(6);
    await loadFixture({ schools: file.schools });
    const shard = await shardOf(schoolId);
    const day = Math.floor(now / DAY_MS);
    // The school has used 100 of its 3,000 bytes today (a rename counts its event and its course row: about 2,000).
    await shard.prepare("INSERT INTO event_bytes (school_id, day, bytes, quota) VALUES (?, ?, 100, 3000)").bind(schoolId, day).run();
    await importWithEvents(file, now);
    const events = await outbox(schoolId);
    expect(events.length).toBe(6);
    const bytes = events.reduce((n, { previous: _, ...e }) => n + utf8Bytes(JSON.stringify(e)), 0);
    expect(bytes).toBeGreaterThan(3000);
    const row = await shard
      .prepare("SELECT bytes, import_bytes FROM event_bytes WHERE school_id = ? AND day = ?")
      .bind(schoolId, day)
      .first<{ bytes: number; import_bytes: number }>();
    expect(row).toEqual({ bytes: 100, import_bytes: bytes });
    // The import took more than the school's whole quota, yet the school's own write goes through.
    const accepted = await patchWithQuota(`/v3/courses/${file.courses[0]!.id}`, key, 3000, { name: "x" });
    expect(accepted.status).toBe(200);
  });

  it("an import batch that would take the school's day past the import bound is refused whole", async () => {
    const { schoolId, file } = schoolFile(2);
    // Two courses publish about 1,300 bytes: within a 3,000-byte bound once, not twice.
    await importWithEvents(file, FIRST, 3_000);
    const shard = await shardOf(schoolId);
    const counted = await shard.prepare("SELECT import_bytes FROM event_bytes WHERE school_id = ?").bind(schoolId).first<{ import_bytes: number }>();
    expect(counted!.import_bytes).toBeGreaterThan(1_000);
    expect(counted!.import_bytes).toBeLessThan(1_500);
    const renamed = { ...file, courses: file.courses.map((c) => ({ ...c, name: `${c.name} bis` })) };
    await importWithEvents(renamed, FIRST + 1, 3_000);
    await expect(importWithEvents({ ...file, courses: file.courses.map((c) => ({ ...c, name: `${c.name} ter` })) }, FIRST + 2, 3_000)).rejects.toThrow(
      /CHECK constraint failed: event_bytes_import_within_bound/,
    );
    // Nothing of the refused batch: names, versions, numbers and events as the second import left them.
    const { results } = await shard
      .prepare("SELECT name, version FROM courses WHERE school_id = ? ORDER BY id")
      .bind(schoolId)
      .all<{ name: string; version: number }>();
    expect(results).toEqual([
      { name: "Séance 1 bis", version: 2 },
      { name: "Séance 2 bis", version: 2 },
    ]);
    expect((await outbox(schoolId)).length).toBe(4);
    expect(await seqOf(schoolId)).toBe(4);
    // The next UTC day the import goes through.
    await importWithEvents({ ...file, courses: file.courses.map((c) => ({ ...c, name: `${c.name} ter` })) }, FIRST + DAY_MS, 3_000);
    expect((await outbox(schoolId)).length).toBe(6);
  });
});
