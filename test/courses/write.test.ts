/**
 * POST /v3/courses and PATCH /v3/courses/{id} (docs/reference.md): fields, errors, events derived from
 * the change (read from the D1 outbox, written in the same batch), concurrency.
 */
import { beforeAll, describe, expect, it } from "vitest";
import { feedEvents } from "../support/feed";
import { fixture, KEY_A, KEY_B } from "../support/fixtures";
import { callJson, loadFixture } from "../support/helpers";
import { shardOf } from "../support/shards";

beforeAll(async () => {
  await loadFixture(fixture);
});

const post = (json: unknown, key = KEY_A) => callJson("/v3/courses", { method: "POST", key, json });
const patch = (id: string, json: unknown, key = KEY_A) => callJson(`/v3/courses/${id}`, { method: "PATCH", key, json });

const base = { name: "Droit des contrats", startDateTime: "2026-10-01T10:00:00+02:00", endDateTime: "2026-10-01T12:00:00+02:00" };

/** Events of a course, in the order they were accepted (the feed: a published outbox row keeps no payload). */
async function outboxEvents(courseId: string): Promise<{ type: string; data: any }[]> {
  return (await feedEvents(KEY_A)).filter((e) => (e.data as { course?: { id: string } }).course?.id === courseId);
}
const types = async (courseId: string) =>
  (await outboxEvents(courseId)).map((e) => (e.type === "course.professor_signed" ? `${e.type}:${e.data.professorId}` : e.type));

async function create(extra: Record<string, unknown> = {}) {
  const { status, body, res } = await post({ ...base, ...extra });
  expect(status, JSON.stringify(body)).toBe(201);
  return { course: body.result, res };
}

describe("POST /v3/courses", () => {
  it("creates a course with every field, 201 and location", async () => {
    const { course, res } = await create({
      classroom: "B204",
      creatorId: "usr_9",
      trainingId: "trn_1",
      groupIds: ["grp_2", "grp_1", "grp_2"],
      studentIds: ["stu_2", "stu_1"],
      professors: [
        { professorId: "prf_2", coTeacher: true },
        { professorId: "prf_1", signed: true },
      ],
      surveyTemplateIds: ["svt_1"],
    });
    expect(course.id).toMatch(/^crs_[0-9A-Z]{26}$/);
    expect(res.headers.get("location")).toBe(`/v3/courses/${course.id}`);
    expect(course).toMatchObject({
      name: "Droit des contrats",
      startDateTime: "2026-10-01T08:00:00.000Z",
      endDateTime: "2026-10-01T10:00:00.000Z",
      classroom: "B204",
      creatorId: "usr_9",
      trainingId: "trn_1",
      groupIds: ["grp_1", "grp_2"],
      professorIds: ["prf_1", "prf_2"],
      archived: false,
      absencesSent: false,
    });
    expect(course.createdAt).toBe(course.updatedAt);
    const read = await callJson(`/v3/courses/${course.id}?includeStudents=true&includeTeachers=true&includeSurveyTemplates=true`, { key: KEY_A });
    expect(read.body.result).toMatchObject({ ...course, students: [expect.objectContaining({ id: "stu_2" }), expect.objectContaining({ id: "stu_1" })] });
    expect(read.body.result.teachers).toEqual([
      expect.objectContaining({ id: "prf_1", coTeacher: false, signed: true }),
      expect.objectContaining({ id: "prf_2", coTeacher: true, signed: false }),
    ]);
    expect(await types(course.id)).toEqual(["course.created", "course.professor_signed:prf_1"]);
  });

  it("defaults: nulls and empty lists", async () => {
    const { course } = await create();
    expect(course).toMatchObject({ classroom: null, creatorId: null, trainingId: null, groupIds: [], professorIds: [] });
    expect(await types(course.id)).toEqual(["course.created"]);
    const [event] = await outboxEvents(course.id);
    expect(event).toMatchObject({ id: expect.stringMatching(/^evt_/), schoolId: "sch_a", data: { course } });
  });

  it("requires name, startDateTime, endDateTime (VALIDATION_ERROR with every path)", async () => {
    const { status, body } = await post({});
    expect([status, body.code]).toEqual([400, "VALIDATION_ERROR"]);
    expect(body.details.map((d: any) => d.path).sort()).toEqual(["endDateTime", "name", "startDateTime"]);
  });

  const invalid: [string, Record<string, unknown>, string][] = [
    ["empty name", { name: "" }, "name"],
    ["name over 200", { name: "x".repeat(201) }, "name"],
    ["instant without zone", { startDateTime: "2026-10-01T10:00:00" }, "startDateTime"],
    ["instant as a number", { endDateTime: 1788768000000 }, "endDateTime"],
    ["classroom not a string", { classroom: 12 }, "classroom"],
    ["bad creator id", { creatorId: "usr 1" }, "creatorId"],
    ["groupIds not an array", { groupIds: "grp_1" }, "groupIds"],
    ["a bad id in a list", { studentIds: ["stu_1", "bad/id"] }, "studentIds[1]"],
    ["professor without id", { professors: [{ signed: true }] }, "professors[0].professorId"],
    ["professor listed twice", { professors: [{ professorId: "prf_1" }, { professorId: "prf_1" }] }, "professors[1].professorId"],
    ["signed not a boolean", { professors: [{ professorId: "prf_1", signed: "yes" }] }, "professors[0].signed"],
    ["archived is PATCH-only", { archived: true }, "archived"],
  ];
  for (const [title, extra, path] of invalid) {
    it(`400 for ${title}`, async () => {
      const { status, body } = await post({ ...base, ...extra });
      expect(status).toBe(400);
      expect(["VALIDATION_ERROR", "UNKNOWN_PARAMETER"]).toContain(body.code);
      expect(body.details.map((d: any) => d.path)).toContain(path);
    });
  }

  const rawPost = (body: string) => callJson("/v3/courses", { method: "POST", key: KEY_A, body, headers: { "content-type": "application/json" } });
  const countCourses = async () =>
    (await (await shardOf("sch_a")).prepare("SELECT count(*) AS n FROM courses WHERE school_id = 'sch_a'").first<{ n: number }>())!.n;

  for (const key of ["__proto__", "constructor", "prototype"]) {
    it(`a ${key} key is 400 UNKNOWN_PARAMETER, at the root and in a professor, and nothing is written`, async () => {
      const before = await countCourses();
      const fields = JSON.stringify(base).slice(1, -1);
      const root = await rawPost(`{${fields},"${key}":{"archived":true}}`);
      expect([root.status, root.body.code, root.body.details]).toEqual([400, "UNKNOWN_PARAMETER", [{ path: key, message: "unknown" }]]);
      const nested = await rawPost(`{${fields},"professors":[{"professorId":"prf_1","${key}":{"signed":true}}]}`);
      expect([nested.status, nested.body.code, nested.body.details]).toEqual([
        400,
        "UNKNOWN_PARAMETER",
        [{ path: `professors[0].${key}`, message: "unknown" }],
      ]);
      expect(await countCourses()).toBe(before);
    });
  }

  it("a name with an unpaired surrogate is 400 VALIDATION_ERROR, not stored altered", async () => {
    const { status, body } = await rawPost(`{"name":"Cours \\udc00","startDateTime":"${base.startDateTime}","endDateTime":"${base.endDateTime}"}`);
    expect([status, body.code, body.details[0].path]).toEqual([400, "VALIDATION_ERROR", "name"]);
  });

  it("an instant outside years 0000–9999 once in UTC is refused (it could not be written back); the edges are kept exactly", async () => {
    for (const [startDateTime, endDateTime] of [
      ["9999-12-31T22:00:00Z", "9999-12-31T23:00:00-05:00"], // 10000-01-01T04:00Z
      ["0000-01-01T00:30:00+01:00", "2026-09-07T10:00:00Z"], // -000001-12-31T23:30Z
    ]) {
      const { status, body } = await post({ ...base, startDateTime, endDateTime });
      expect([status, body.code], startDateTime).toEqual([400, "VALIDATION_ERROR"]);
      expect(body.message, startDateTime).toContain("within years 0000–9999 in UTC");
    }
    const edges = await post({ ...base, startDateTime: "0000-01-01T00:00:00Z", endDateTime: "9999-12-31T23:59:59.999Z" });
    expect(edges.status, JSON.stringify(edges.body)).toBe(201);
    const read = await callJson(`/v3/courses/${edges.body.result.id}`, { key: KEY_A });
    expect([read.body.result.startDateTime, read.body.result.endDateTime]).toEqual(["0000-01-01T00:00:00.000Z", "9999-12-31T23:59:59.999Z"]);
    // 0000 is a leap year: its 29 February exists.
    const leap = await post({ ...base, startDateTime: "0000-02-29T08:00:00Z", endDateTime: "0000-02-29T10:00:00Z" });
    expect(leap.status, JSON.stringify(leap.body)).toBe(201);
    const query = await callJson(`/v3/courses?courseStartDateTime=${encodeURIComponent("9999-12-31T23:30:00-01:00")}`, { key: KEY_A });
    expect([query.status, query.body.code]).toEqual([400, "INVALID_PARAMETER"]);
  });

  it("unknown fields are UNKNOWN_PARAMETER with a close match", async () => {
    const { body } = await post({ ...base, classRoom: "B2" });
    expect(body.code).toBe("UNKNOWN_PARAMETER");
    expect(body.message).toContain('did you mean "classroom"');
  });

  it("INVALID_DATE_RANGE when the end is not after the start", async () => {
    for (const endDateTime of [base.startDateTime, "2026-10-01T07:59:59Z"]) {
      const { status, body } = await post({ ...base, endDateTime });
      expect([status, body.code]).toEqual([400, "INVALID_DATE_RANGE"]);
    }
  });

  it("*_NOT_FOUND lists every missing id, other schools' ids included", async () => {
    const s = await post({ ...base, studentIds: ["stu_1", "stu_404", "stu_405"] });
    expect([s.status, s.body.code]).toEqual([400, "STUDENTS_NOT_FOUND"]);
    expect(s.body.details).toEqual([
      { path: "studentIds[1]", message: expect.stringContaining("stu_404") },
      { path: "studentIds[2]", message: expect.stringContaining("stu_405") },
    ]);
    expect((await post({ ...base, groupIds: ["grp_9"] })).body.code).toBe("GROUPS_NOT_FOUND");
    expect((await post({ ...base, professors: [{ professorId: "prf_9" }] })).body.code).toBe("PROFESSORS_NOT_FOUND");
    expect((await post({ ...base, trainingId: "trn_9" })).body.code).toBe("TRAINING_NOT_FOUND");
    expect((await post({ ...base, surveyTemplateIds: ["svt_9"] })).body.code).toBe("SURVEY_TEMPLATES_NOT_FOUND");
    // sch_b has stu_1 and grp_1 but not stu_2 / grp_2.
    const other = await post({ ...base, studentIds: ["stu_2"], groupIds: ["grp_2"] }, KEY_B);
    expect(other.body.code).toBe("STUDENTS_NOT_FOUND");
    expect(other.body.details.map((d: any) => d.path)).toEqual(["studentIds[0]", "groupIds[0]"]);
    const { results } = await (await shardOf("sch_b"))
      .prepare("SELECT count(*) AS n FROM courses WHERE name = ? AND school_id = 'sch_b'")
      .bind(base.name)
      .all<{ n: number }>();
    expect(results[0]!.n).toBe(0);
  });

  it("INVALID_JSON, UNSUPPORTED_MEDIA_TYPE, PAYLOAD_TOO_LARGE, 401", async () => {
    const bad = await callJson("/v3/courses", { method: "POST", key: KEY_A, body: '{"name":', headers: { "content-type": "application/json" } });
    expect([bad.status, bad.body.code]).toEqual([400, "INVALID_JSON"]);
    const text = await callJson("/v3/courses", { method: "POST", key: KEY_A, body: JSON.stringify(base), headers: { "content-type": "text/plain" } });
    expect([text.status, text.body.code]).toEqual([415, "UNSUPPORTED_MEDIA_TYPE"]);
    const big = await post({ ...base, classroom: "x".repeat(1_100_000) });
    expect([big.status, big.body.code]).toEqual([413, "PAYLOAD_TOO_LARGE"]);
    const anon = await callJson("/v3/courses", { method: "POST", json: base });
    expect(anon.status).toBe(401);
  });
});

describe("PATCH /v3/courses/{id}", () => {
  for (const key of ["__proto__", "constructor", "prototype"]) {
    it(`a ${key} key is 400 UNKNOWN_PARAMETER, at the root and in a professor, and the course is unchanged`, async () => {
      const { course } = await create();
      const rawPatch = (body: string) =>
        callJson(`/v3/courses/${course.id}`, { method: "PATCH", key: KEY_A, body, headers: { "content-type": "application/json" } });
      const root = await rawPatch(`{"archived":true,"${key}":{"archived":false}}`);
      expect([root.status, root.body.code, root.body.details]).toEqual([400, "UNKNOWN_PARAMETER", [{ path: key, message: "unknown" }]]);
      const nested = await rawPatch(`{"professors":[{"professorId":"prf_1","${key}":{"signed":true}}]}`);
      expect([nested.status, nested.body.code, nested.body.details]).toEqual([
        400,
        "UNKNOWN_PARAMETER",
        [{ path: `professors[0].${key}`, message: "unknown" }],
      ]);
      const after = await callJson(`/v3/courses/${course.id}`, { key: KEY_A });
      expect(after.body.result).toEqual(course);
      expect(await types(course.id)).toEqual(["course.created"]);
    });
  }

  it("changes only the fields sent; updatedAt moves", async () => {
    const { course } = await create({ classroom: "B204", groupIds: ["grp_1"] });
    const { status, body } = await patch(course.id, { name: "Droit civil" });
    expect(status).toBe(200);
    expect(body.result).toMatchObject({ ...course, name: "Droit civil", version: 2, updatedAt: expect.any(String) });
    expect(course.version).toBe(1);
    expect(Date.parse(body.result.updatedAt)).toBeGreaterThan(Date.parse(course.updatedAt));
    expect(body.result.createdAt).toBe(course.createdAt);
    expect(await types(course.id)).toEqual(["course.created", "course.updated"]);
    const read = await callJson(`/v3/courses/${course.id}`, { key: KEY_A });
    expect(read.body.result).toEqual(body.result);
  });

  it("a list sent replaces the whole list; [] empties it", async () => {
    const { course } = await create({ groupIds: ["grp_1", "grp_2"], studentIds: ["stu_1"], surveyTemplateIds: ["svt_1"] });
    const { body } = await patch(course.id, { groupIds: ["grp_3"], studentIds: [] });
    expect(body.result.groupIds).toEqual(["grp_3"]);
    const read = await callJson(`/v3/courses/${course.id}?includeStudents=true&includeSurveyTemplates=true`, { key: KEY_A });
    expect(read.body.result.students).toEqual([]);
    expect(read.body.result.surveyTemplates).toEqual([{ id: "svt_1", name: "Satisfaction" }]);
  });

  it("null clears classroom, creatorId, trainingId", async () => {
    const { course } = await create({ classroom: "B204", creatorId: "usr_1", trainingId: "trn_1" });
    const { body } = await patch(course.id, { classroom: null, creatorId: null, trainingId: null });
    expect(body.result).toMatchObject({ classroom: null, creatorId: null, trainingId: null });
    const byClassroom = await callJson("/v3/courses?classroom=B204", { key: KEY_A });
    expect(byClassroom.body.result.map((c: any) => c.id)).not.toContain(course.id);
  });

  it("null is not accepted for name or instants", async () => {
    const { course } = await create();
    const { body } = await patch(course.id, { name: null, startDateTime: null });
    expect(body.code).toBe("VALIDATION_ERROR");
    expect(body.details.map((d: any) => d.path).sort()).toEqual(["name", "startDateTime"]);
  });

  it("a no-op PATCH publishes nothing and keeps updatedAt", async () => {
    const { course } = await create({ classroom: "B204", groupIds: ["grp_2", "grp_1"], professors: [{ professorId: "prf_1" }] });
    const { status, body } = await patch(course.id, {
      name: course.name,
      classroom: "B204",
      groupIds: ["grp_1", "grp_2"],
      professors: [{ professorId: "prf_1", coTeacher: false, signed: false }],
      archived: false,
      absencesSent: false,
      startDateTime: "2026-10-01T08:00:00.000Z",
    });
    expect(status).toBe(200);
    expect(body.result).toEqual(course);
    const empty = await patch(course.id, {});
    expect(empty.body.result).toEqual(course);
    expect(await types(course.id)).toEqual(["course.created"]);
  });

  it("events in the contract's order for each kind of change", async () => {
    const { course } = await create({ professors: [{ professorId: "prf_1" }, { professorId: "prf_2" }, { professorId: "prf_3", signed: true }] });
    await patch(course.id, { archived: true });
    await patch(course.id, {
      archived: false,
      absencesSent: true,
      professors: [
        { professorId: "prf_1", signed: true },
        { professorId: "prf_2", signed: true },
        { professorId: "prf_3", signed: true },
      ],
    });
    await patch(course.id, { absencesSent: false, professors: [{ professorId: "prf_1", signed: false }] });
    await patch(course.id, {
      absencesSent: true,
      professors: [
        { professorId: "prf_1", signed: true },
        { professorId: "prf_4", signed: true },
      ],
    });
    expect(await types(course.id)).toEqual([
      "course.created",
      "course.professor_signed:prf_3",
      "course.updated",
      "course.archived",
      "course.updated",
      "course.unarchived",
      "course.absences_sent",
      "course.professor_signed:prf_1",
      "course.professor_signed:prf_2",
      "course.updated",
      "course.updated",
      "course.absences_sent",
      "course.professor_signed:prf_1",
      "course.professor_signed:prf_4",
    ]);
    const last = (await outboxEvents(course.id)).at(-1)!;
    expect(last.data.course).toMatchObject({ absencesSent: true, professorIds: ["prf_1", "prf_4"] });
  });

  it("each payload carries the course as it is after the write", async () => {
    const { course } = await create();
    const { body } = await patch(course.id, { archived: true, classroom: "Z1" });
    const events = await outboxEvents(course.id);
    expect(events.slice(1).map((e) => e.data.course)).toEqual([body.result, body.result]);
  });

  it("INVALID_DATE_RANGE also when only one end moves", async () => {
    const { course } = await create();
    expect((await patch(course.id, { startDateTime: "2026-10-01T12:00:00+02:00" })).body.code).toBe("INVALID_DATE_RANGE");
    expect((await patch(course.id, { endDateTime: "2026-10-01T09:00:00+02:00" })).body.code).toBe("INVALID_DATE_RANGE");
    const ok = await patch(course.id, { endDateTime: "2026-10-01T13:00:00+02:00" });
    expect(ok.status).toBe(200);
  });

  it("COURSE_NOT_FOUND for unknown, malformed and other schools' ids; *_NOT_FOUND on references", async () => {
    for (const [id, key] of [
      ["crs_404", KEY_A],
      ["crs_01", KEY_B],
      ["bad%20id", KEY_A],
      ["%E0%A4%A", KEY_A],
    ] as const) {
      const { status, body } = await patch(id, { name: "x" }, key);
      expect([status, body.code]).toEqual([404, "COURSE_NOT_FOUND"]);
    }
    const { course } = await create();
    const r = await patch(course.id, { professors: [{ professorId: "prf_404" }] });
    expect([r.status, r.body.code]).toEqual([400, "PROFESSORS_NOT_FOUND"]);
  });

  it("patches an imported course (no revision yet)", async () => {
    const { status, body } = await patch("crs_07", { classroom: "D12" });
    expect(status).toBe(200);
    expect(body.result).toMatchObject({ id: "crs_07", classroom: "D12", absencesSent: true });
  });

  it("concurrent PATCHes on the same course lose no field", async () => {
    const { course } = await create();
    const fieldsA = { name: "A name", classroom: "A1" };
    const fieldsB = { creatorId: "usr_b", groupIds: ["grp_3"] };
    const fieldsC = { archived: true, studentIds: ["stu_4"] };
    const results = await Promise.all([patch(course.id, fieldsA), patch(course.id, fieldsB), patch(course.id, fieldsC)]);
    expect(results.map((r) => r.status)).toEqual([200, 200, 200]);
    const read = await callJson(`/v3/courses/${course.id}?includeStudents=true`, { key: KEY_A });
    expect(read.body.result).toMatchObject({ ...fieldsA, ...{ creatorId: "usr_b", groupIds: ["grp_3"] }, archived: true });
    expect(read.body.result.students.map((s: any) => s.id)).toEqual(["stu_4"]);
    // Exactly one course.updated per PATCH, and one course.archived.
    expect((await types(course.id)).sort()).toEqual(["course.archived", "course.created", "course.updated", "course.updated", "course.updated"]);
  });
});
