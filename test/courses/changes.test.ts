/**
 * The change sequence of API writes (docs/architecture.md § "The change sequence"): every
 * committed create or PATCH takes the school's next number in its own batch and stamps its
 * course with it; its events carry the number's cursor as `changeCursor`, second key of the
 * envelope, the same in the outbox row (what the sweep sends) as in the write's own publish.
 */
import { describe, expect, it } from "vitest";
import { applyPatch, deliveredJson, deriveEvents } from "../../src/courses/change";
import { loadCourseState, runBatch, writeStatements } from "../../src/courses/storage";
import { parseCreateBody } from "../../src/courses/write-schemas";
import { createCourse } from "../../src/courses/writes";
import { getDb } from "../../src/db/client";
import { utf8Bytes } from "../../src/lib/batches";
import { feedEvents } from "../support/feed";
import { callJson } from "../support/helpers";
import { loadFixture, shardOf } from "../support/shards";
import { newSchool } from "../support/webhooks/harness";

const base = { name: "Droit des contrats", startDateTime: "2026-10-01T10:00:00+02:00", endDateTime: "2026-10-01T12:00:00+02:00" };

async function create(key: string, extra: Record<string, unknown> = {}): Promise<{ id: string }> {
  const { status, body } = await callJson("/v3/courses", { method: "POST", key, json: { ...base, ...extra } });
  expect(status, JSON.stringify(body)).toBe(201);
  return body.result;
}

async function patch(key: string, id: string, json: unknown): Promise<void> {
  const { status, body } = await callJson(`/v3/courses/${id}`, { method: "PATCH", key, json });
  expect(status, JSON.stringify(body)).toBe(200);
}

/** The school's last change number (`null`: no row) and its courses' numbers by id. */
async function numbers(schoolId: string): Promise<{ last: number | null; courses: Record<string, number> }> {
  const shard = await shardOf(schoolId);
  const last = await shard.prepare("SELECT seq FROM school_changes WHERE school_id = ?").bind(schoolId).first<number>("seq");
  const { results } = await shard.prepare("SELECT id, change_seq FROM courses WHERE school_id = ?").bind(schoolId).all<{ id: string; change_seq: number }>();
  return { last, courses: Object.fromEntries(results.map((r) => [r.id, r.change_seq])) };
}

describe("the change sequence of API writes", () => {
  it("creates and PATCHes take 1, 2, 3… in commit order; each event carries its change's cursor second", async () => {
    const { schoolId, key } = await newSchool("chg");
    const a = await create(key);
    const b = await create(key);
    expect(await numbers(schoolId)).toEqual({ last: 2, courses: { [a.id]: 1, [b.id]: 2 } });
    await patch(key, a.id, { name: "Droit civil" });
    await patch(key, b.id, { archived: true });
    await patch(key, a.id, { classroom: "B204" });
    expect(await numbers(schoolId)).toEqual({ last: 5, courses: { [a.id]: 5, [b.id]: 4 } });

    const events = await feedEvents(key);
    expect(events.map((e) => [e.type, (e.data.course as { id: string }).id, e.changeCursor])).toEqual([
      ["course.created", a.id, "chg_1"],
      ["course.created", b.id, "chg_2"],
      ["course.updated", a.id, "chg_3"],
      ["course.updated", b.id, "chg_4"],
      ["course.archived", b.id, "chg_4"],
      ["course.updated", a.id, "chg_5"],
    ]);
    for (const e of events) expect(Object.keys(e)).toEqual(["id", "changeCursor", "type", "createdAt", "schoolId", "data"]);
  });

  it("concurrent writes never share a number: 1 to n, one per committed change", async () => {
    const { schoolId, key } = await newSchool("chgpar");
    const ids = await Promise.all(Array.from({ length: 6 }, (_, i) => create(key, { name: `P${i}` })));
    await Promise.all(ids.map((c, i) => patch(key, c.id, { name: `P${i} bis` })));
    const { last, courses } = await numbers(schoolId);
    expect(last).toBe(12);
    // Each course's latest change is its PATCH: the numbers 7 to 12, one each.
    expect(Object.values(courses).sort((x, y) => x - y)).toEqual([7, 8, 9, 10, 11, 12]);
    const cursors = (await feedEvents(key)).map((e) => e.changeCursor);
    expect([...cursors].sort((x, y) => Number(x!.slice(4)) - Number(y!.slice(4)))).toEqual(Array.from({ length: 12 }, (_, i) => `chg_${i + 1}`));
  });

  it("a PATCH that changes nothing takes no number", async () => {
    const { schoolId, key } = await newSchool("chgnoop");
    const a = await create(key, { classroom: "B204" });
    await patch(key, a.id, { classroom: "B204", name: base.name });
    expect(await numbers(schoolId)).toEqual({ last: 1, courses: { [a.id]: 1 } });
    expect((await feedEvents(key)).map((e) => e.changeCursor)).toEqual(["chg_1"]);
  });

  it("a write that lost its compare-and-set takes no number, writes no event and counts no bytes", async () => {
    const { schoolId, key } = await newSchool("chgcas");
    const a = await create(key);
    const shard = await shardOf(schoolId);
    const stale = (await loadCourseState(getDb(shard), schoolId, a.id))!;
    await patch(key, a.id, { name: "Gagnant" });
    const bytesBefore = await shard.prepare("SELECT sum(bytes) AS b FROM event_bytes WHERE school_id = ?").bind(schoolId).first<number>("b");

    // A PATCH computed on the state before the winner's: its compare-and-set fails.
    const { after } = applyPatch(stale, { name: "Perdant" });
    after.revision = "rev_lost";
    after.version = stale.version + 1;
    after.updatedAt = stale.updatedAt + 1;
    const events = deriveEvents(schoolId, stale, after, after.updatedAt);
    const stmts = writeStatements(schoolId, stale, after, events, { bytesPerDay: 1e9, at: Date.now() });
    expect(await runBatch(shard, stmts, "rev_lost")).toBeUndefined();

    expect(await numbers(schoolId)).toEqual({ last: 2, courses: { [a.id]: 2 } });
    const outbox = await shard.prepare("SELECT count(*) AS n FROM outbox WHERE event_id = ?").bind(events[0]!.id).first<number>("n");
    expect(outbox).toBe(0);
    expect(await shard.prepare("SELECT sum(bytes) AS b FROM event_bytes WHERE school_id = ?").bind(schoolId).first<number>("b")).toBe(bytesBefore);
  });

  it("the outbox rows hold the bytes the write's own publish sends, and the quota counts them as delivered", async () => {
    const { schoolId, key } = await newSchool("chgbytes");
    await create(key);
    const shard = await shardOf(schoolId);
    // Not published: the rows stay as the sweep would read them.
    // Text JSON escapes or leaves as is, as JSON.stringify does: the row's bytes are the same.
    const name = 'Économie « 2e » \u2028 🎓 "cité" \\ / \u0001';
    const { events } = await createCourse(shard, schoolId, parseCreateBody({ ...base, name }), 1e9);
    expect(events.map((e) => e.changeCursor)).toEqual(["chg_2"]);
    const { results } = await shard
      .prepare("SELECT event_id, payload FROM outbox WHERE event_id IN (SELECT value FROM json_each(?))")
      .bind(JSON.stringify(events.map((e) => e.id)))
      .all<{ event_id: string; payload: string }>();
    expect(results.map((r) => r.payload)).toEqual(events.map((e) => JSON.stringify(e)));

    const counted = await shard.prepare("SELECT sum(bytes) AS b FROM event_bytes WHERE school_id = ?").bind(schoolId).first<number>("b");
    const [first] = await feedEvents(key);
    expect(first!.changeCursor).toBe("chg_1");
    const delivered = [first!, ...events].reduce((n, e) => n + utf8Bytes(deliveredJson(e)), 0);
    expect(counted).toBe(delivered);
  });

  it("several events of one write (built from the first row in SQL) carry the same cursor, as the publish sends them", async () => {
    const { schoolId, key } = await newSchool("chgmany");
    await loadFixture({
      professors: ["prf_c1", "prf_c2"].map((id) => ({ id, schoolId, firstName: "P", lastName: id, email: `${id}@example.org` })),
    });
    const a = await create(key);
    await patch(key, a.id, {
      archived: true,
      absencesSent: true,
      professors: [
        { professorId: "prf_c1", signed: true },
        { professorId: "prf_c2", signed: true },
      ],
    });
    const events = (await feedEvents(key)).slice(1);
    expect(events.map((e) => [e.type, e.changeCursor])).toEqual([
      ["course.updated", "chg_2"],
      ["course.archived", "chg_2"],
      ["course.absences_sent", "chg_2"],
      ["course.professor_signed", "chg_2"],
      ["course.professor_signed", "chg_2"],
    ]);
  });
});
