/**
 * GET /v3/courses/changes (docs/reference.md § "GET /v3/courses/changes"): the courses whose
 * latest change follows a cursor, once each, in change order, as course records; paging by
 * `nextCursor`; malformed cursors; and the listing's `changesCursor`, read with its page.
 */
import { describe, expect, it } from "vitest";
import { callJson } from "../support/helpers";
import { newSchool } from "../support/webhooks/harness";

const base = { name: "Cours", startDateTime: "2026-10-01T10:00:00+02:00", endDateTime: "2026-10-01T12:00:00+02:00" };

async function create(key: string, name = base.name): Promise<string> {
  const { status, body } = await callJson("/v3/courses", { method: "POST", key, json: { ...base, name } });
  expect(status, JSON.stringify(body)).toBe(201);
  return body.result.id;
}

async function patch(key: string, id: string, json: unknown): Promise<void> {
  const { status, body } = await callJson(`/v3/courses/${id}`, { method: "PATCH", key, json });
  expect(status, JSON.stringify(body)).toBe(200);
}

async function changes(key: string, query = ""): Promise<{ ids: string[]; records: any[]; pagination: any }> {
  const { status, body } = await callJson(`/v3/courses/changes${query}`, { key });
  expect(status, JSON.stringify(body)).toBe(200);
  return { ids: body.result.map((c: { id: string }) => c.id), records: body.result, pagination: body.pagination };
}

describe("GET /v3/courses/changes", () => {
  it("answers each course once, at its latest change, in change order, as its record", async () => {
    const { key } = await newSchool("cq");
    const [a, b, c] = [await create(key, "A"), await create(key, "B"), await create(key, "C")];
    await patch(key, a, { name: "A2" });
    await patch(key, b, { archived: true });

    const all = await changes(key);
    expect(all.ids).toEqual([c, a, b]);
    expect(all.pagination).toEqual({ nextCursor: "chg_5", hasMore: false });
    for (const r of all.records) expect(r).toEqual((await callJson(`/v3/courses/${r.id}`, { key })).body.result);
    expect(all.records.map((r) => [r.name, r.version, r.archived])).toEqual([
      ["C", 1, false],
      ["A2", 2, false],
      ["B", 2, true],
    ]);

    expect((await changes(key, "?after=chg_3")).ids).toEqual([a, b]);
    expect(await changes(key, "?after=chg_4")).toMatchObject({ ids: [b], pagination: { nextCursor: "chg_5", hasMore: false } });
    // Nothing after the last change: the cursor given comes back.
    expect(await changes(key, "?after=chg_5")).toEqual({ ids: [], records: [], pagination: { nextCursor: "chg_5", hasMore: false } });
    expect(await changes(key, "?after=chg_900")).toEqual({ ids: [], records: [], pagination: { nextCursor: "chg_900", hasMore: false } });
  });

  it("a cursor from before any write: chg_0, then every course changed since", async () => {
    const { key } = await newSchool("cq0");
    expect(await changes(key)).toEqual({ ids: [], records: [], pagination: { nextCursor: "chg_0", hasMore: false } });
    const list = await callJson("/v3/courses", { key });
    expect(list.body.pagination.changesCursor).toBe("chg_0");
    const a = await create(key);
    const b = await create(key);
    expect(await changes(key, `?after=${list.body.pagination.changesCursor}`)).toMatchObject({ ids: [a, b], pagination: { nextCursor: "chg_2" } });
  });

  it("pages by nextCursor at the largest limit, 100: no course skipped or repeated while courses change between pages", async () => {
    const { key } = await newSchool("cqpage");
    const ids: string[] = [];
    for (let i = 0; i < 130; i++) ids.push(await create(key, `C${i}`));
    expect((await callJson("/v3/courses/changes?limit=101", { key })).status).toBe(400);

    const p1 = await changes(key, "?limit=100");
    expect(p1.ids).toEqual(ids.slice(0, 100));
    expect(p1.pagination).toEqual({ nextCursor: "chg_100", hasMore: true });
    // Between pages: a course already read changes again, one not read yet changes, one is created.
    await patch(key, ids[5]!, { name: "C5 bis" });
    await patch(key, ids[110]!, { name: "C110 bis" });
    const late = await create(key, "late");
    const p2 = await changes(key, `?limit=100&after=${p1.pagination.nextCursor}`);
    expect(p2.ids).toEqual([...ids.slice(100, 110), ...ids.slice(111), ids[5], ids[110], late]);
    expect(p2.pagination).toEqual({ nextCursor: "chg_133", hasMore: false });
    // The default limit is the largest.
    expect((await changes(key)).ids).toHaveLength(100);
  });

  it("takes the listing's include flags", async () => {
    const { key } = await newSchool("cqinc");
    const a = await create(key);
    const flags = "includeStudents=true&includeTeachers=true&includeSurveyTemplates=true&includeTraining=true";
    const { records } = await changes(key, `?${flags}`);
    expect(records).toEqual([(await callJson(`/v3/courses/${a}?${flags}`, { key })).body.result]);
    expect(records[0]).toMatchObject({ students: [], teachers: [], surveyTemplates: [], training: null });
  });

  it("a malformed cursor is 400 INVALID_PARAMETER naming `after`", async () => {
    const { key } = await newSchool("cqbad");
    const bad = [
      "",
      "chg_",
      "chg_-1",
      "chg_01",
      "chg_1.5",
      "chg_1e3",
      "CHG_1",
      "chg_1 ",
      "1",
      "chg_9999999999999999",
      "evt_01K4A8Z1M2N3P4Q5R6S7T8V9W0",
      "chg_%00",
    ];
    for (const after of bad) {
      const { status, body } = await callJson(`/v3/courses/changes?after=${encodeURIComponent(after)}`, { key });
      expect([after, status, body.code, body.details?.[0]?.parameter]).toEqual([after, 400, "INVALID_PARAMETER", "after"]);
    }
    const twice = await callJson("/v3/courses/changes?after=chg_1&after=chg_2", { key });
    expect([twice.status, twice.body.code]).toEqual([400, "INVALID_PARAMETER"]);
    const unknown = await callJson("/v3/courses/changes?page=2", { key });
    expect([unknown.status, unknown.body.code]).toEqual([400, "UNKNOWN_PARAMETER"]);
    expect((await callJson("/v3/courses/changes?after=chg_", {})).status).toBe(401);
  });

  it("the listing and search answer the school's last change as changesCursor", async () => {
    const { key } = await newSchool("cqlist");
    const a = await create(key);
    await create(key);
    await patch(key, a, { name: "A2" });
    // A PATCH that changes nothing takes no number.
    await patch(key, a, { name: "A2" });
    const list = await callJson("/v3/courses?limit=1", { key });
    expect(list.body.pagination).toMatchObject({ page: 1, limit: 1, hasMore: true, changesCursor: "chg_3" });
    const search = await callJson("/v3/courses:search", { method: "POST", key, json: { limit: 1, page: 2 } });
    expect(search.body.pagination).toMatchObject({ page: 2, hasMore: false, changesCursor: "chg_3" });
    expect(await changes(key, `?after=${list.body.pagination.changesCursor}`)).toMatchObject({ ids: [], pagination: { nextCursor: "chg_3" } });
  });
});
