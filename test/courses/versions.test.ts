/**
 * Course versions (docs/reference.md § "Course record", § "GET /v3/courses/{id}", § "POST /v3/courses — create a course · PATCH /v3/courses/{id} — change one", docs/operations.md § "Data import (operators)"): 1 at creation or first import, +1 per committed
 * change, in records and events; `ETag` on GET without includes; `If-Match` on PATCH.
 */
import { beforeAll, describe, expect, it } from "vitest";
import { feedEvents } from "../support/feed";
import { fixture, KEY_A } from "../support/fixtures";
import { callJson, loadFixture } from "../support/helpers";
import { shardOf } from "../support/shards";

beforeAll(async () => {
  await loadFixture(fixture);
});

const base = { name: "Droit des contrats", startDateTime: "2026-10-01T10:00:00+02:00", endDateTime: "2026-10-01T12:00:00+02:00" };
const create = async () => {
  const { status, body } = await callJson("/v3/courses", { method: "POST", key: KEY_A, json: base });
  expect(status).toBe(201);
  return body.result as { id: string; version: number };
};
const patch = (id: string, json: unknown, ifMatch?: string) =>
  callJson(`/v3/courses/${id}`, { method: "PATCH", key: KEY_A, json, headers: ifMatch === undefined ? {} : { "if-match": ifMatch } });
const versionOf = async (id: string) =>
  (await (await shardOf("sch_a")).prepare("SELECT version FROM courses WHERE id = ?").bind(id).first<{ version: number }>())!.version;
/** Events of a course, in the order they were accepted (the feed: a published outbox row keeps no payload). */
const outbox = async (id: string) =>
  (await feedEvents(KEY_A)).filter((e) => (e.data as { course?: { id: string } }).course?.id === id) as unknown as {
    type: string;
    data: { course: { version: number } };
  }[];

describe("version", () => {
  it("is 1 at creation, +1 per committed change, unchanged by a no-op PATCH; events carry it", async () => {
    const c = await create();
    expect(c.version).toBe(1);
    expect((await patch(c.id, { name: "Droit civil", archived: true })).body.result.version).toBe(2);
    expect((await patch(c.id, { name: "Droit civil" })).body.result.version).toBe(2);
    expect((await patch(c.id, { classroom: "A1" })).body.result.version).toBe(3);
    const events = await outbox(c.id);
    expect(events.map((e) => [e.type, e.data.course.version])).toEqual([
      ["course.created", 1],
      ["course.updated", 2],
      ["course.archived", 2],
      ["course.updated", 3],
    ]);
  });
});

describe("ETag and If-Match", () => {
  it('GET without includes carries ETag "<version>"; with includes none', async () => {
    const c = await create();
    const { res } = await callJson(`/v3/courses/${c.id}`, { key: KEY_A });
    expect(res.headers.get("etag")).toBe('"1"');
    const withInc = await callJson(`/v3/courses/${c.id}?includeTeachers=true`, { key: KEY_A });
    expect(withInc.res.headers.get("etag")).toBeNull();
  });

  it("a matching If-Match writes; a stale one answers 412, writes nothing and publishes nothing", async () => {
    const c = await create();
    const ok = await patch(c.id, { name: "v2" }, '"1"');
    expect([ok.status, ok.body.result.version]).toEqual([200, 2]);
    const stale = await patch(c.id, { name: "lost update" }, '"1"');
    expect([stale.status, stale.body.code]).toEqual([412, "PRECONDITION_FAILED"]);
    expect(stale.body.message).toContain('"2"');
    const read = await callJson(`/v3/courses/${c.id}`, { key: KEY_A });
    expect([read.body.result.name, read.body.result.version]).toEqual(["v2", 2]);
    expect((await outbox(c.id)).map((e) => e.type)).toEqual(["course.created", "course.updated"]);
  });

  it("takes * and lists of versions; weak tags never match; malformed is 400 naming If-Match", async () => {
    const c = await create();
    expect((await patch(c.id, { name: "a" }, "*")).body.result.version).toBe(2);
    expect((await patch(c.id, { name: "b" }, '"7", "2"')).body.result.version).toBe(3);
    const weak = await patch(c.id, { name: "c" }, 'W/"3"');
    expect([weak.status, weak.body.code]).toEqual([412, "PRECONDITION_FAILED"]);
    const weakAndStrong = await patch(c.id, { name: "c" }, 'W/"3", "3"');
    expect(weakAndStrong.body.result.version).toBe(4);
    const bad = await patch(c.id, { name: "d" }, "4");
    expect([bad.status, bad.body.code, bad.body.details]).toEqual([400, "INVALID_PARAMETER", [{ parameter: "If-Match", message: expect.any(String) }]]);
    expect(await versionOf(c.id)).toBe(4);
  });

  it("two PATCHes racing with the same If-Match: exactly one 200, one 412; the version steps by one, one event", async () => {
    for (let round = 0; round < 5; round++) {
      const c = await create();
      const answers = await Promise.all([patch(c.id, { name: `A${round}` }, '"1"'), patch(c.id, { name: `B${round}` }, '"1"')]);
      expect(answers.map((a) => a.status).sort()).toEqual([200, 412]);
      const won = answers.find((a) => a.status === 200)!;
      const lost = answers.find((a) => a.status === 412)!;
      expect(won.body.result.version).toBe(2);
      expect(lost.body.code).toBe("PRECONDITION_FAILED");
      expect(await versionOf(c.id)).toBe(2);
      // The stored course is the winner's, and only the winner's change was published.
      expect((await callJson(`/v3/courses/${c.id}`, { key: KEY_A })).body.result.name).toBe(won.body.result.name);
      expect((await outbox(c.id)).map((e) => [e.type, e.data.course.version])).toEqual([
        ["course.created", 1],
        ["course.updated", 2],
      ]);
    }
  });

  it("an unknown course is 404 whatever If-Match says", async () => {
    const r = await patch("crs_nope", { name: "x" }, '"1"');
    expect([r.status, r.body.code]).toEqual([404, "COURSE_NOT_FOUND"]);
  });
});

describe("import and versions", () => {
  it("a new course gets 1, a changed course +1 (content or relations), an identical re-import changes nothing", async () => {
    const one = { ...fixture, courses: fixture.courses.filter((c) => c.id === "crs_06") };
    const target = one.courses[0]!;
    await (await shardOf("sch_a")).prepare("DELETE FROM courses WHERE id = 'crs_06'").run();
    await loadFixture(one);
    expect(await versionOf("crs_06")).toBe(1);
    await loadFixture(one);
    expect(await versionOf("crs_06")).toBe(1);
    await loadFixture({ ...one, courses: [{ ...target, name: "Renamed" }] });
    expect(await versionOf("crs_06")).toBe(2);
    await loadFixture({ ...one, courses: [{ ...target, name: "Renamed", studentIds: [] }] });
    expect(await versionOf("crs_06")).toBe(3);
    await loadFixture({ ...one, courses: [{ ...target, name: "Renamed", studentIds: [] }] });
    expect(await versionOf("crs_06")).toBe(3);
    const scratch = await (await shardOf("sch_a")).prepare("SELECT count(*) AS n FROM import_course_states").first<{ n: number }>();
    expect(scratch!.n).toBe(0);
  });

  it("a PATCH then a re-import of the original raises the version again", async () => {
    const { body } = await callJson("/v3/courses/crs_07", { key: KEY_A });
    const before = body.result.version as number;
    await patch("crs_07", { classroom: "Z9" });
    await loadFixture({ ...fixture, courses: fixture.courses.filter((c) => c.id === "crs_07") });
    expect(await versionOf("crs_07")).toBe(before + 2);
  });
});
