/**
 * Every SQLite / D1 limit a valid request can reach, tested at its bound, on a D1 that
 * enforces production's limits (test/support/production-limits.ts; the seam itself is tested in
 * test/limits/seam.test.ts): the `name`
 * filter at every length and of every character, `classroom` and `creatorId` at their
 * maximum, `page` at its maximum, the search's id lists at 10,000 ids of 64 characters, the
 * fullest listing statement, and a course write with every list full.
 */
import { env } from "cloudflare:test";
import { beforeAll, describe, expect, it } from "vitest";
import { nextPageCursor, parseSearchBody, toCourseQuery } from "../../src/courses/filters";
import { selectCoursePage } from "../../src/courses/query";
import type { CourseEvent } from "../../src/courses/schemas";
import { writeStatements } from "../../src/courses/storage";
import { MAX_LIST, MAX_PROFESSORS } from "../../src/courses/write-schemas";
import { getDb } from "../../src/db/client";
import { ApiError } from "../../src/http/errors";
import { send } from "../fuzz/workerd";
import { fixture, KEY_A } from "../support/fixtures";
import { loadFixture } from "../support/helpers";
import { checkResponse } from "../support/openapi-check";
import { shardOf } from "../support/shards";

/** Calls the Worker on the limited D1 and checks the answer against the OpenAPI document. */
async function call(path: string, init: { method?: string; key?: string; json?: unknown; body?: string | ReadableStream } = {}) {
  const headers: Record<string, string> = {};
  if (init.key) headers.authorization = `Bearer ${init.key}`;
  const body = init.json !== undefined ? JSON.stringify(init.json) : init.body;
  if (body !== undefined) headers["content-type"] = "application/json";
  const method = init.method ?? "GET";
  const res = await send({ method, path, headers, body });
  await checkResponse(method, `http://api.test${path}`, res);
  return { status: res.status, body: (await res.json()) as any };
}
const list = async (query: string) => call(`/v3/courses?${query}`, { key: KEY_A });
const search = async (json: unknown) => call("/v3/courses:search", { method: "POST", key: KEY_A, json });
const ids = (body: any) => (body.result as { id: string }[]).map((c) => c.id);

/** `n` distinct ids of exactly 64 characters. */
const longIds = (prefix: string, n: number) => Array.from({ length: n }, (_, i) => `${prefix}${String(i).padStart(64 - prefix.length, "0")}`);

const BOUNDS = "sch_bounds";
const BOUNDS_KEY = "sk_test_bounds";

beforeAll(async () => {
  await loadFixture(fixture);
});

describe("name filter: any name of 1–200 characters (docs/reference.md § GET /v3/courses)", () => {
  const LONG_NAME = `Cours %_\\ 100% _x_ Économie ${"é".repeat(60)}${"%".repeat(50)}${"_".repeat(50)}`.padEnd(200, "Œ");
  let longId: string;
  beforeAll(async () => {
    const { status, body } = await call("/v3/courses", {
      method: "POST",
      key: KEY_A,
      json: { name: LONG_NAME, startDateTime: "2027-01-04T08:00:00Z", endDateTime: "2027-01-04T10:00:00Z" },
    });
    expect(status).toBe(201);
    longId = body.result.id;
  });

  const chars = ["a", "%", "_", "\\", "é", "E\u0301", "😀", "'", "\u0000"];
  for (const length of [1, 48, 49, 50, 51, 100, 199, 200]) {
    it(`a name of ${length} characters answers 200 on GET and :search, with the same courses`, async () => {
      for (const c of chars) {
        const name = c.repeat(Math.ceil(length / c.length)).slice(0, length);
        if (name.length !== length || /[\uD800-\uDFFF]$/.test(name)) continue;
        const get = await list(`name=${encodeURIComponent(name)}`);
        expect([get.status, get.body.code], `GET name=${c}×${length}`).toEqual([200, undefined]);
        const post = await search({ name });
        expect(post.status, `search name=${c}×${length}`).toBe(200);
        expect(ids(post.body)).toEqual(ids(get.body));
      }
    });
  }

  it("the whole 200-character name, wildcards and all, finds its course (and only it) on both", async () => {
    expect(LONG_NAME).toHaveLength(200);
    expect(ids((await list(`name=${encodeURIComponent(LONG_NAME)}`)).body)).toEqual([longId]);
    expect(ids((await search({ name: LONG_NAME })).body)).toEqual([longId]);
    // Folded: case and accents do not matter.
    expect(ids((await search({ name: LONG_NAME.toUpperCase().replace(/É/g, "e") })).body)).toEqual([longId]);
  });

  it("50 `%` or 50 `_` match only names holding them literally", async () => {
    expect(ids((await list(`name=${encodeURIComponent("%".repeat(50))}`)).body)).toEqual([longId]);
    expect(ids((await search({ name: "_".repeat(50) })).body)).toEqual([longId]);
    expect(ids((await search({ name: "%".repeat(51) })).body)).toEqual([]);
  });

  it("201 characters is a 400 on both", async () => {
    expect((await list(`name=${"a".repeat(201)}`)).body.code).toBe("INVALID_PARAMETER");
    expect((await search({ name: "%".repeat(201) })).body.code).toBe("VALIDATION_ERROR");
  });
});

describe("other filters at their bounds", () => {
  it("classroom of 200 characters and creatorId of 64 characters, on GET and :search", async () => {
    for (const classroom of ["é".repeat(200), "%".repeat(200), "😀".repeat(100)]) {
      expect((await list(`classroom=${encodeURIComponent(classroom)}&creatorId=${"u".repeat(64)}`)).status).toBe(200);
      expect((await search({ classroom, creatorId: "u".repeat(64) })).status).toBe(200);
    }
  });

  it("page at its maximum (1,000,000) with limit 100: 200, empty; one more is a 400", async () => {
    const get = await list("page=1000000&limit=100");
    expect([get.status, get.body.result, get.body.pagination]).toEqual([
      200,
      [],
      { page: 1_000_000, limit: 100, hasMore: false, nextCursor: null, changesCursor: expect.stringMatching(/^chg_[0-9]+$/) },
    ]);
    expect((await search({ page: 1_000_000, limit: 100, sort: [{ field: "name", order: "desc" }] })).body.result).toEqual([]);
    expect((await list("page=1000001")).status).toBe(400);
  });

  it("four GET id lists of 100 ids of 64 characters each", async () => {
    const q = ["groupId", "studentId", "professorId", "trainingId"].map((p) => `${p}=${longIds(p.slice(0, 3), 100).join(",")}`).join("&");
    const { status, body } = await list(q);
    expect([status, body.result]).toEqual([200, []]);
  });

  for (const field of ["groupId", "studentId", "professorId", "trainingId", "courseId"]) {
    it(`:search with ${field} at 10,000 ids of 64 characters (one JSON parameter of 670 KB)`, async () => {
      const list10k = [
        ...longIds(field.slice(0, 3), 9_999),
        field === "courseId" ? "crs_01" : field === "trainingId" ? "trn_1" : field === "groupId" ? "grp_1" : field === "studentId" ? "stu_1" : "prf_1",
      ];
      const { status, body } = await search({ [field]: list10k, sort: [{ field: "name" }] });
      expect(status).toBe(200);
      expect(ids(body)).toContain("crs_01");
    });
  }

  it(":search with every id list at once, as long as the 1 MiB body allows (5 × 3,000 ids of 64 characters)", async () => {
    const json = Object.fromEntries(["groupId", "studentId", "professorId", "trainingId", "courseId"].map((f) => [f, longIds(f.slice(0, 3), 3_000)]));
    expect(JSON.stringify(json).length).toBeLessThan(1024 * 1024);
    const { status, body } = await search({ ...json, includeStudents: true, includeTeachers: true, includeSurveyTemplates: true, includeTraining: true });
    expect([status, body.result]).toEqual([200, []]);
  });

  it(":search with 10,000 ids of 64 characters in every list at once is over 1 MiB: 413", async () => {
    const json = Object.fromEntries(["groupId", "studentId", "professorId", "trainingId", "courseId"].map((f) => [f, longIds(f.slice(0, 3), 10_000)]));
    const { status, body } = await search(json);
    expect([status, body.code]).toEqual([413, "PAYLOAD_TOO_LARGE"]);
  });

  it("an endless body sent without content-length is refused once past 1 MiB (413), not read to its end", async () => {
    let pulled = 0;
    const endless = new ReadableStream<Uint8Array>({
      pull(controller) {
        pulled += 1;
        controller.enqueue(new TextEncoder().encode(`{"name":"${"x".repeat(64 * 1024)}",`));
      },
    });
    const { status, body } = await call("/v3/courses:search", { method: "POST", key: KEY_A, body: endless });
    expect([status, body.code]).toEqual([413, "PAYLOAD_TOO_LARGE"]);
    expect(pulled).toBeLessThan(40);
  });

  it("a body as deep or as wide as 1 MiB allows is a 400, not a 500", async () => {
    const deep = "[".repeat(500_000) + "]".repeat(500_000);
    expect((await call("/v3/courses:search", { method: "POST", key: KEY_A, body: deep })).body.code).toBe("VALIDATION_ERROR");
    const deepObject = `{"sort":${'{"a":'.repeat(170_000)}1${"}".repeat(170_000)}}`;
    expect((await call("/v3/courses:search", { method: "POST", key: KEY_A, body: deepObject })).body.code).toBe("VALIDATION_ERROR");
    const wide = `{"groupId":[${Array.from({ length: 500_000 }, () => "1").join(",")}]}`;
    expect(wide.length).toBeLessThan(1024 * 1024);
    expect((await call("/v3/courses:search", { method: "POST", key: KEY_A, body: wide })).body.code).toBe("VALIDATION_ERROR");
    const keys = `{${Array.from({ length: 60_000 }, (_, i) => `"k${i}":0`).join(",")}}`;
    const many = await call("/v3/courses:search", { method: "POST", key: KEY_A, body: keys });
    expect([many.body.code, many.body.details.length]).toEqual(["UNKNOWN_PARAMETER", 20]);
  });

  it("a list of hundreds of thousands of items, as an array or a comma-separated string, is a 400 counted before its items are judged", async () => {
    const comma = await search({ groupId: "a b,".repeat(200_000) });
    expect([comma.status, comma.body.code, comma.body.details]).toEqual([
      400,
      "VALIDATION_ERROR",
      [{ path: "groupId", message: "must list at most 10000 ids" }],
    ]);
    const array = await search({ sort: Array.from({ length: 300_000 }, () => 1) });
    expect([array.status, array.body.code, array.body.details]).toEqual([
      400,
      "VALIDATION_ERROR",
      [{ path: "sort", message: "must list at most 10000 items" }],
    ]);
    const events = await call("/v3/webhooks", {
      method: "POST",
      key: KEY_A,
      json: { url: "https://hooks.example.com/x", events: Array.from({ length: 100_000 }, () => 0) },
    });
    expect([events.status, events.body.code, events.body.details[0].path]).toEqual([400, "VALIDATION_ERROR", "events"]);
  });

  it("a VALIDATION_ERROR lists at most 100 problems in details and 10 in its message, and counts the rest", async () => {
    const { status, body } = await search({ groupId: Array.from({ length: 10_000 }, () => 1) });
    expect([status, body.code, body.details.length]).toEqual([400, "VALIDATION_ERROR", 100]);
    expect(body.details[99]).toEqual({ path: "groupId[99]", message: expect.any(String) });
    expect(body.message).toMatch(/groupId\[9\] .*\(and 9990 more\)\.$/);
  });

  /** Every filter at its fullest, every include, a sort by every field. */
  const fullest = () =>
    toCourseQuery({
      courseStartDateTime: 0,
      courseEndDateTime: 1,
      absencesSent: true,
      absencesNotSent: false,
      groupId: longIds("g", 10_000),
      studentId: longIds("s", 50),
      professorId: longIds("p", 10_000),
      trainingId: longIds("t", 10_000),
      courseId: longIds("c", 10_000),
      archived: true,
      classroom: "é".repeat(200),
      creatorId: "u".repeat(64),
      name: "%".repeat(200),
      professorSignatureMissing: true,
      page: 1_000_000,
      limit: 100,
      includeStudents: true,
      includeTeachers: true,
      includeSurveyTemplates: true,
      includeTraining: true,
      sort: ["startDateTime", "endDateTime", "name", "classroom", "createdAt", "updatedAt"].map((field) => ({ field, order: "desc" }) as never),
    });
  /** `fullest()` as a search body through the Worker, its lists cut to fit 1 MiB. */
  const fullestBody = (full: ReturnType<typeof fullest>) => ({
    ...full,
    courseStartDateTime: "2026-01-01T00:00:00Z",
    courseEndDateTime: "2027-01-01T00:00:00Z",
    groupId: full.groupId.slice(0, 2000),
    professorId: full.professorId.slice(0, 2000),
    trainingId: full.trainingId.slice(0, 2000),
    courseId: full.courseId.slice(0, 2000),
    include: undefined,
    includeStudents: true,
    includeTeachers: true,
    includeSurveyTemplates: true,
    includeTraining: true,
  });

  it("the fullest listing statement stays within 100 bound parameters and 100 KB of SQL", async () => {
    const full = fullest();
    const { sql, params } = selectCoursePage(getDb(env.SHARD_0), { schoolId: "0".repeat(64) }, full).toSQL();
    expect(params.length).toBeLessThanOrEqual(100);
    expect(new TextEncoder().encode(sql).byteLength).toBeLessThan(100_000);
    // And through the Worker, on the limited D1.
    const { status } = await search(fullestBody(full));
    expect(status).toBe(200);
  });

  it("after a cursor of six sort keys (the name path's two branches each bound it), within 100 bound parameters", async () => {
    const full = fullest();
    // The longest values a row can hold: 200-character folded texts, every key non-null.
    const last = { id: "c".repeat(64), sortValues: JSON.stringify([2, 3, "é".repeat(200), "é".repeat(200), 4, 5]) };
    // As the Worker reads it: JSON (no `include`, no `page`).
    const body = JSON.parse(JSON.stringify({ ...fullestBody(full), page: undefined }));
    const cursor = nextPageCursor(parseSearchBody(body), last);
    const q = parseSearchBody({ ...body, cursor });
    const { sql, params } = selectCoursePage(getDb(env.SHARD_0), { schoolId: "0".repeat(64) }, q).toSQL();
    expect(params.length).toBeLessThanOrEqual(100);
    expect(new TextEncoder().encode(sql).byteLength).toBeLessThan(100_000);
    const { status, body: answer } = await search({ ...body, cursor });
    expect([status, answer.result, answer.pagination]).toEqual([
      200,
      [],
      { page: 2, limit: 100, hasMore: false, nextCursor: null, changesCursor: expect.stringMatching(/^chg_[0-9]+$/) },
    ]);
  });
});

describe("a course with every list at its maximum (1,000 ids of 64 characters, 100 professors)", () => {
  const refs = {
    groupIds: longIds("grp_", 1_000),
    studentIds: longIds("stu_", 1_000),
    professorIds: longIds("prf_", 100),
    surveyTemplateIds: longIds("svt_", 1_000),
  };
  beforeAll(async () => {
    const person = (id: string, i: number) => ({
      id,
      schoolId: BOUNDS,
      firstName: `Prénom${i}`,
      lastName: `Nom-de-famille-${i}`,
      email: `prenom.nom-de-famille-${i}@lycee-exemple.fr`,
    });
    await loadFixture({
      schools: [{ id: BOUNDS, name: "Bounds", apiKeys: [BOUNDS_KEY] }],
      groups: refs.groupIds.map((id, i) => ({ id, schoolId: BOUNDS, name: `Groupe ${i}` })),
      students: refs.studentIds.map(person),
      professors: refs.professorIds.map(person),
      surveyTemplates: refs.surveyTemplateIds.map((id, i) => ({ id, schoolId: BOUNDS, name: `Questionnaire de satisfaction ${i}` })),
      trainings: [{ id: "trn_".padEnd(64, "x"), schoolId: BOUNDS, name: "Formation" }],
    });
  });

  it("POST, PATCH, GET with every include and the events' outbox rows stay within D1's limits", async () => {
    const body = {
      name: "É".repeat(200),
      startDateTime: "2027-02-01T08:00:00+01:00",
      endDateTime: "2027-02-01T10:00:00+01:00",
      classroom: "😀".repeat(100),
      creatorId: "u".repeat(64),
      trainingId: "trn_".padEnd(64, "x"),
      groupIds: refs.groupIds,
      studentIds: refs.studentIds,
      professors: refs.professorIds.map((professorId) => ({ professorId, coTeacher: true, signed: false })),
      surveyTemplateIds: refs.surveyTemplateIds,
    };
    const created = await call("/v3/courses", { method: "POST", key: BOUNDS_KEY, json: body });
    expect(created.status, JSON.stringify(created.body).slice(0, 300)).toBe(201);
    const id = created.body.result.id as string;
    // Every professor signs: one course.professor_signed event each, every one carrying the course.
    const patched = await call(`/v3/courses/${id}`, {
      method: "PATCH",
      key: BOUNDS_KEY,
      json: { professors: refs.professorIds.map((professorId) => ({ professorId, signed: true })), archived: true, absencesSent: true },
    });
    expect(patched.status, JSON.stringify(patched.body).slice(0, 300)).toBe(200);
    const includes = "includeStudents=true&includeTeachers=true&includeSurveyTemplates=true&includeTraining=true";
    const one = await call(`/v3/courses/${id}?${includes}`, { key: BOUNDS_KEY });
    expect(one.status).toBe(200);
    expect([one.body.result.students.length, one.body.result.teachers.length, one.body.result.surveyTemplates.length, one.body.result.groupIds.length]).toEqual(
      [1_000, 100, 1_000, 1_000],
    );
    expect((await call(`/v3/courses?${includes}`, { key: BOUNDS_KEY })).status).toBe(200);
    expect(
      (
        await call("/v3/courses:search", {
          method: "POST",
          key: BOUNDS_KEY,
          json: {
            sort: [{ field: "classroom" }, { field: "endDateTime", order: "desc" }],
            includeStudents: true,
            includeTeachers: true,
            includeSurveyTemplates: true,
            includeTraining: true,
          },
        })
      ).status,
    ).toBe(200);
    const outbox = await (await shardOf(BOUNDS))
      .prepare("SELECT count(*) AS n, count(published_at) AS published, max(length(CAST(payload AS BLOB))) AS biggest FROM outbox WHERE school_id = ?")
      .bind(BOUNDS)
      .first<{ n: number; published: number; biggest: number }>();
    // created; then updated, archived, absences sent and one signature per professor.
    expect(outbox!.n).toBe(1 + 1 + 1 + 1 + 100);
    // Every event was accepted by the hub (in batches well within its limits) and marked.
    expect(outbox!.published).toBe(1 + 1 + 1 + 1 + 100);
    expect(outbox!.biggest).toBeLessThan(2_000_000);
  });

  it("1,001 ids in a list, or 101 professors, is a 400 VALIDATION_ERROR", async () => {
    const base = { name: "x", startDateTime: "2027-02-01T08:00:00Z", endDateTime: "2027-02-01T10:00:00Z" };
    for (const [field, value] of [
      ["groupIds", longIds("g", 1_001)],
      ["studentIds", longIds("s", 1_001)],
      ["professors", longIds("p", 101).map((professorId) => ({ professorId }))],
    ] as const) {
      const { status, body } = await call("/v3/courses", { method: "POST", key: BOUNDS_KEY, json: { ...base, [field]: value } });
      expect([status, body.code, body.details[0].path]).toEqual([400, "VALIDATION_ERROR", field]);
    }
  });
});

it("the code's list bounds are the contract's: 1,000 ids per list, 100 professors", () => {
  expect([MAX_LIST, MAX_PROFESSORS]).toEqual([1_000, 100]);
});

describe("an event that alone could not be stored", () => {
  const state = {
    id: "crs_huge",
    name: "Cours",
    startDateTime: 0,
    endDateTime: 1,
    classroom: null,
    creatorId: null,
    trainingId: null,
    groupIds: [],
    studentIds: [],
    professors: [],
    surveyTemplateIds: [],
    archived: false,
    absencesSent: false,
    createdAt: 0,
    updatedAt: 0,
    revision: "r1",
    version: 1,
  };
  const eventOf = (bytes: number) =>
    ({
      id: "evt_huge",
      changeCursor: "chg_0",
      type: "course.created",
      createdAt: "2027-01-01T00:00:00.000Z",
      schoolId: BOUNDS,
      data: { padding: "x".repeat(bytes) },
    }) as unknown as CourseEvent;

  it("is refused with the write that made it: 413 PAYLOAD_TOO_LARGE before any statement is built to run", () => {
    // None the contract allows comes near: the largest is about 150 KB with its `previous` keys.
    expect(writeStatements(BOUNDS, undefined, state, [eventOf(900_000)], { bytesPerDay: 100_000_000, at: 0 }).length).toBeGreaterThan(1);
    let refused: unknown;
    try {
      writeStatements(BOUNDS, undefined, state, [eventOf(1_000_000)], { bytesPerDay: 100_000_000, at: 0 });
    } catch (err) {
      refused = err;
    }
    expect(refused).toBeInstanceOf(ApiError);
    expect([(refused as ApiError).status, (refused as ApiError).code]).toEqual([413, "PAYLOAD_TOO_LARGE"]);
  });
});
