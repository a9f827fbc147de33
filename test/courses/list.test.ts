import { env } from "cloudflare:test";
import { beforeAll, describe, expect, it } from "vitest";
import { fixture, KEY_A, KEY_B, REVOKED_KEY } from "../support/fixtures";
import { call, callJson, loadFixture } from "../support/helpers";
import { referenceList } from "../support/reference";

beforeAll(async () => {
  await loadFixture(fixture);
  await env.DIRECTORY.prepare("UPDATE api_keys SET revoked_at = 1 WHERE school_id = 'sch_revoked'").run();
});

const list = async (qs: string, key = KEY_A) => callJson(`/v3/courses${qs ? `?${qs}` : ""}`, { key });
const ids = async (qs: string, key = KEY_A) => {
  const { status, body } = await list(qs, key);
  expect(status, JSON.stringify(body)).toBe(200);
  return (body.result as { id: string }[]).map((c) => c.id);
};

describe("GET /v3/courses — records and order", () => {
  it("lists every course of the school, archived or not, by start then id", async () => {
    const { body } = await list("");
    expect(body.result.map((c: any) => c.id)).toEqual(["crs_01", "crs_02", "crs_03", "crs_04", "crs_05", "crs_06", "crs_07", "crs_08"]);
    expect(body.pagination).toEqual({ page: 1, limit: 100, hasMore: false, nextCursor: null, changesCursor: expect.stringMatching(/^chg_[0-9]+$/) });
  });

  it("writes the course record of the contract", async () => {
    const { body } = await list("limit=1");
    expect(body.result[0]).toEqual({
      id: "crs_01",
      name: "Algèbre linéaire",
      startDateTime: "2026-09-07T08:00:00.000Z",
      endDateTime: "2026-09-07T10:00:00.000Z",
      classroom: "B204",
      creatorId: "usr_1",
      trainingId: "trn_1",
      groupIds: ["grp_1", "grp_2"],
      professorIds: ["prf_1", "prf_2"],
      archived: false,
      absencesSent: true,
      version: 1,
      createdAt: "2026-08-20T09:00:00.000Z",
      updatedAt: "2026-08-21T09:00:00.000Z",
    });
  });

  it("writes null and [] for absent values", async () => {
    const { body } = await list("classroom=B204&creatorId=usr_1"); // crs_01
    expect(body.result).toHaveLength(1);
    const { body: b4 } = await callJson("/v3/courses/crs_04", { key: KEY_A });
    expect(b4.result).toMatchObject({ classroom: null, creatorId: null, groupIds: [], professorIds: [] });
    const { body: b7 } = await callJson("/v3/courses/crs_07", { key: KEY_A });
    expect(b7.result).toMatchObject({ trainingId: null, classroom: null });
  });
});

describe("GET /v3/courses — each filter", () => {
  const cases: [string, string, string[]][] = [
    ["courseStartDateTime equal to a start is included", "courseStartDateTime=2026-09-10T08:00:00Z", ["crs_05", "crs_06", "crs_07", "crs_08"]],
    ["courseStartDateTime with an offset compares as an instant", "courseStartDateTime=2026-09-10T10:00:00%2B02:00", ["crs_05", "crs_06", "crs_07", "crs_08"]],
    ["a + sent unencoded (read as a space) is repaired", "courseStartDateTime=2026-09-10T10:00:00+02:00", ["crs_05", "crs_06", "crs_07", "crs_08"]],
    ["courseEndDateTime equal to an end is included", "courseEndDateTime=2026-09-08T09:30:00Z", ["crs_01", "crs_02", "crs_03"]],
    ["courseEndDateTime with milliseconds", "courseEndDateTime=2026-09-08T09:29:59.999Z", ["crs_01", "crs_02"]],
    [
      "both instants: courses that start and end between",
      "courseStartDateTime=2026-09-07T09:00:00Z&courseEndDateTime=2026-09-11T19:00:00Z",
      ["crs_03", "crs_04", "crs_05", "crs_06"],
    ],
    ["absencesSent=true", "absencesSent=true", ["crs_01", "crs_03", "crs_07"]],
    ["absencesSent=false is no filter", "absencesSent=false", ["crs_01", "crs_02", "crs_03", "crs_04", "crs_05", "crs_06", "crs_07", "crs_08"]],
    ["absencesNotSent=true", "absencesNotSent=1", ["crs_02", "crs_04", "crs_05", "crs_06", "crs_08"]],
    ["absencesNotSent=false is no filter", "absencesNotSent=0", ["crs_01", "crs_02", "crs_03", "crs_04", "crs_05", "crs_06", "crs_07", "crs_08"]],
    [
      "both absences flags true: every course",
      "absencesSent=true&absencesNotSent=true",
      ["crs_01", "crs_02", "crs_03", "crs_04", "crs_05", "crs_06", "crs_07", "crs_08"],
    ],
    ["groupId, one", "groupId=grp_3", ["crs_03", "crs_06"]],
    ["groupId, several (any)", "groupId=grp_3,grp_2", ["crs_01", "crs_03", "crs_05", "crs_06", "crs_08"]],
    ["groupId with spaces and empty items", "groupId=%20grp_3%20,,%20,grp_2,", ["crs_01", "crs_03", "crs_05", "crs_06", "crs_08"]],
    ["groupId repeated parameters are joined", "groupId=grp_3&groupId=grp_2", ["crs_01", "crs_03", "crs_05", "crs_06", "crs_08"]],
    ["groupId, an empty list is no filter", "groupId=,%20,", ["crs_01", "crs_02", "crs_03", "crs_04", "crs_05", "crs_06", "crs_07", "crs_08"]],
    ["groupId unknown", "groupId=grp_404", []],
    ["studentId", "studentId=stu_1", ["crs_01", "crs_03", "crs_08"]],
    ["studentId, several", "studentId=stu_4,stu_3", ["crs_02", "crs_04", "crs_06"]],
    ["professorId includes co-teachers", "professorId=prf_3", ["crs_03", "crs_05"]],
    ["professorId co-teacher only", "professorId=prf_2", ["crs_01", "crs_05"]],
    ["trainingId", "trainingId=trn_2", ["crs_02", "crs_05"]],
    ["trainingId, several", "trainingId=trn_2,trn_1", ["crs_01", "crs_02", "crs_04", "crs_05", "crs_08"]],
    ["archived=true", "archived=true", ["crs_03", "crs_05", "crs_08"]],
    ["archived=false", "archived=false", ["crs_01", "crs_02", "crs_04", "crs_06", "crs_07"]],
    ["classroom is exact (case-sensitive)", "classroom=B204", ["crs_01", "crs_05"]],
    ["classroom lower case is another classroom", "classroom=b204", ["crs_02"]],
    ["creatorId", "creatorId=usr_1", ["crs_01", "crs_03"]],
    ["name across case and accents", "name=economie", ["crs_02", "crs_05"]],
    ["name with accents in the query", "name=%C3%89CONOMIE", ["crs_02", "crs_05"]],
    ["name substring", "name=g%C3%A9o", ["crs_08"]],
    ["name % is literal", "name=100%25", ["crs_03"]],
    ["name % alone matches only a literal %", "name=%25", ["crs_03"]],
    ["name _ is literal", "name=_de_", ["crs_04"]],
    ["name _ alone matches only a literal _", "name=_", ["crs_04"]],
    ["createdAt is validated and ignored", "createdAt=2030-01-01T00:00:00Z", ["crs_01", "crs_02", "crs_03", "crs_04", "crs_05", "crs_06", "crs_07", "crs_08"]],
    [
      "updatedAt is validated and ignored",
      "updatedAt=2000-01-01T00:00:00-05:00",
      ["crs_01", "crs_02", "crs_03", "crs_04", "crs_05", "crs_06", "crs_07", "crs_08"],
    ],
    ["professorSignatureMissing=true", "professorSignatureMissing=true", ["crs_01", "crs_03", "crs_06"]],
    [
      "professorSignatureMissing=false includes courses without professors",
      "professorSignatureMissing=false",
      ["crs_02", "crs_04", "crs_05", "crs_07", "crs_08"],
    ],
  ];
  for (const [title, qs, expected] of cases) {
    it(title, async () => {
      expect(await ids(qs)).toEqual(expected);
    });
  }

  it("combines filters with AND", async () => {
    expect(await ids("groupId=grp_1,grp_2&archived=false&professorSignatureMissing=true")).toEqual(["crs_01", "crs_06"]);
    expect(await ids("trainingId=trn_1&classroom=A101&archived=true&name=histoire")).toEqual(["crs_08"]);
    expect(await ids("studentId=stu_1&absencesSent=true&courseEndDateTime=2026-09-07T10:00:00.000Z")).toEqual(["crs_01"]);
  });
});

describe("GET /v3/courses — includes", () => {
  it("includeStudents, sorted by lastName, firstName, id", async () => {
    const { body } = await list("studentId=stu_2&includeStudents=true");
    const crs06 = body.result.find((c: any) => c.id === "crs_06");
    expect(crs06.students.map((s: any) => s.id)).toEqual(["stu_4", "stu_2", "stu_3"]);
    expect(crs06.students[0]).toEqual({ id: "stu_4", firstName: "Zoé", lastName: "André", email: "zoe.andre@example.org" });
    expect(crs06).not.toHaveProperty("teachers");
  });

  it("includeTeachers with coTeacher and signed as booleans", async () => {
    const { body } = await list("limit=1&includeTeachers=true");
    expect(body.result[0].teachers).toEqual([
      { id: "prf_1", firstName: "Karim", lastName: "Benali", email: "karim.benali@example.org", coTeacher: false, signed: true },
      { id: "prf_2", firstName: "Anne", lastName: "Dupont", email: "anne.dupont@example.org", coTeacher: true, signed: false },
    ]);
  });

  it("includeSurveyTemplates sorted by name", async () => {
    const { body } = await callJson("/v3/courses/crs_06?includeSurveyTemplates=true", { key: KEY_A });
    expect(body.result.surveyTemplates).toEqual([
      { id: "svt_2", name: "Évaluation" },
      { id: "svt_1", name: "Satisfaction" },
    ]);
  });

  it("includeTraining is the training or null", async () => {
    const { body } = await list("includeTraining=1&limit=8");
    expect(body.result[0].training).toEqual({ id: "trn_1", name: "BTS SIO" });
    expect(body.result.find((c: any) => c.id === "crs_07").training).toBeNull();
  });

  it("all four at once, and empty lists where nothing is attached", async () => {
    const { body } = await callJson("/v3/courses/crs_07?includeStudents=true&includeTeachers=true&includeSurveyTemplates=true&includeTraining=true", {
      key: KEY_A,
    });
    expect(body.result).toMatchObject({ students: [], surveyTemplates: [], training: null });
    expect(body.result.teachers).toHaveLength(1);
  });
});

describe("GET /v3/courses — pagination", () => {
  it("pages through in order with hasMore", async () => {
    const p1 = await list("limit=3");
    expect(p1.body.result.map((c: any) => c.id)).toEqual(["crs_01", "crs_02", "crs_03"]);
    expect(p1.body.pagination).toEqual({
      page: 1,
      limit: 3,
      hasMore: true,
      nextCursor: expect.any(String),
      changesCursor: expect.stringMatching(/^chg_[0-9]+$/),
    });
    const p3 = await list("limit=3&page=3");
    expect(p3.body.result.map((c: any) => c.id)).toEqual(["crs_07", "crs_08"]);
    expect(p3.body.pagination).toEqual({ page: 3, limit: 3, hasMore: false, nextCursor: null, changesCursor: expect.stringMatching(/^chg_[0-9]+$/) });
  });

  it("a last page that is exactly full has hasMore false", async () => {
    const p = await list("limit=4&page=2");
    expect(p.body.result).toHaveLength(4);
    expect(p.body.pagination.hasMore).toBe(false);
  });

  it("a page past the end is an empty list with hasMore false", async () => {
    const p = await list("limit=100&page=2");
    expect(p.body.result).toEqual([]);
    expect(p.body.pagination).toEqual({ page: 2, limit: 100, hasMore: false, nextCursor: null, changesCursor: expect.stringMatching(/^chg_[0-9]+$/) });
  });

  it("accepts the bounds limit=1, limit=100, page=1", async () => {
    expect((await list("limit=1")).body.result).toHaveLength(1);
    expect((await list("limit=100&page=1")).body.result).toHaveLength(8);
  });
});

describe("GET /v3/courses — bad input", () => {
  const invalid: [string, string][] = [
    ["courseStartDateTime=2026-09-07T08:00:00", "courseStartDateTime"],
    ["courseStartDateTime=2026-09-07", "courseStartDateTime"],
    ["courseEndDateTime=yesterday", "courseEndDateTime"],
    ["courseEndDateTime=2026-02-30T08:00:00Z", "courseEndDateTime"],
    ["createdAt=2026-09-07T25:00:00Z", "createdAt"],
    ["updatedAt=", "updatedAt"],
    ["absencesSent=yes", "absencesSent"],
    ["absencesNotSent=TRUE", "absencesNotSent"],
    ["archived=", "archived"],
    ["professorSignatureMissing=2", "professorSignatureMissing"],
    ["includeStudents=on", "includeStudents"],
    ["page=0", "page"],
    ["page=-1", "page"],
    ["page=1.5", "page"],
    ["page=abc", "page"],
    ["limit=0", "limit"],
    ["limit=101", "limit"],
    ["limit=", "limit"],
    ["groupId=grp%201", "groupId"],
    ["studentId=stu_1,bad%2Fid", "studentId"],
    ["creatorId=usr%20x", "creatorId"],
    ["classroom=", "classroom"],
    ["name=", "name"],
    [`name=${"x".repeat(201)}`, "name"],
  ];
  for (const [qs, parameter] of invalid) {
    it(`400 INVALID_PARAMETER for ${qs.slice(0, 60)}`, async () => {
      const { status, body } = await list(qs);
      expect(status).toBe(400);
      expect(body.code).toBe("INVALID_PARAMETER");
      expect(body.details).toEqual([expect.objectContaining({ parameter, message: expect.any(String) })]);
    });
  }

  it("lists every malformed parameter in details", async () => {
    const { status, body } = await list("limit=0&page=x&archived=maybe&courseStartDateTime=today");
    expect(status).toBe(400);
    expect(body.details.map((d: any) => d.parameter).sort()).toEqual(["archived", "courseStartDateTime", "limit", "page"]);
  });

  it("a parameter given twice is a 400", async () => {
    const { status, body } = await list("limit=1&limit=2");
    expect(status).toBe(400);
    expect(body.code).toBe("INVALID_PARAMETER");
  });

  it("400 UNKNOWN_PARAMETER names the accepted parameters and a close match", async () => {
    const { status, body } = await list("limt=5&foo=1");
    expect(status).toBe(400);
    expect(body.code).toBe("UNKNOWN_PARAMETER");
    expect(body.message).toContain('did you mean "limit"');
    expect(body.message).toContain("courseStartDateTime");
    expect(body.details.map((d: any) => d.parameter)).toEqual(["limt", "foo"]);
  });

  it("courseId is a search-only parameter", async () => {
    const { body } = await list("courseId=crs_01");
    expect(body.code).toBe("UNKNOWN_PARAMETER");
  });

  it("400 TOO_MANY_IDS past 100 ids, pointing to the search operation", async () => {
    const many = Array.from({ length: 101 }, (_, i) => `stu_${i}`).join(",");
    const { status, body } = await list(`studentId=${many}`);
    expect(status).toBe(400);
    expect(body.code).toBe("TOO_MANY_IDS");
    expect(body.message).toContain("POST /v3/courses:search");
    const exactly100 = Array.from({ length: 100 }, (_, i) => `stu_${i + 1}`).join(",");
    expect(await ids(`studentId=${exactly100}`)).toEqual(["crs_01", "crs_02", "crs_03", "crs_04", "crs_06", "crs_08"]);
  });
});

describe("authentication and isolation", () => {
  const unauthorized: [string, Record<string, string>][] = [
    ["no header", {}],
    ["not bearer", { authorization: `Basic ${KEY_A}` }],
    ["empty bearer", { authorization: "Bearer " }],
    ["not an sk_ key", { authorization: "Bearer pk_test_school_a" }],
    ["unknown key", { authorization: "Bearer sk_test_unknown" }],
    ["revoked key", { authorization: `Bearer ${REVOKED_KEY}` }],
  ];
  for (const [title, headers] of unauthorized) {
    it(`401 UNAUTHORIZED: ${title}`, async () => {
      for (const path of ["/v3/courses", "/v3/courses/crs_01"]) {
        const { status, body } = await callJson(path, { headers });
        expect(status).toBe(401);
        expect(body.code).toBe("UNAUTHORIZED");
      }
    });
  }

  it("401 comes before 400 for an unknown key with bad parameters", async () => {
    const { status } = await callJson("/v3/courses?limit=0", { headers: { authorization: "Bearer sk_nope" } });
    expect(status).toBe(401);
  });

  it("a school never sees another's courses, by list or by id", async () => {
    expect(await ids("", KEY_B)).toEqual(["crs_b1"]);
    expect(await ids("classroom=B204", KEY_B)).toEqual(["crs_b1"]);
    const other = await callJson("/v3/courses/crs_01", { key: KEY_B });
    expect(other.status).toBe(404);
    expect(other.body.code).toBe("COURSE_NOT_FOUND");
    const mine = await callJson("/v3/courses/crs_b1", { key: KEY_A });
    expect(mine.status).toBe(404);
    // Same related ids in both schools: A's includes never show B's rows.
    const { body } = await list("includeTraining=true&includeStudents=true&limit=1", KEY_B);
    expect(body.result[0].training).toEqual({ id: "trn_1", name: "Other school's training" });
    expect(body.result[0].students).toEqual([expect.objectContaining({ id: "stu_1", firstName: "Other" })]);
  });
});

describe("GET /v3/courses/{id} and routing", () => {
  it("answers one course with includes", async () => {
    const { status, body } = await callJson("/v3/courses/crs_02?includeTraining=true", { key: KEY_A });
    expect(status).toBe(200);
    expect(body.result).toMatchObject({ id: "crs_02", startDateTime: "2026-09-07T08:00:00.000Z", training: { id: "trn_2" } });
  });

  it("404 COURSE_NOT_FOUND for unknown and malformed ids", async () => {
    for (const id of ["crs_404", "x".repeat(65), "a%20b", "%E0%A4%A"]) {
      const { status, body } = await callJson(`/v3/courses/${id}`, { key: KEY_A });
      expect(status).toBe(404);
      expect(body.code).toBe("COURSE_NOT_FOUND");
    }
  });

  it("rejects filters on the single-course route", async () => {
    const { status, body } = await callJson("/v3/courses/crs_01?archived=true", { key: KEY_A });
    expect(status).toBe(400);
    expect(body.code).toBe("UNKNOWN_PARAMETER");
  });

  it("404 NOT_FOUND for unknown routes, 405 with allow for other methods", async () => {
    const nf = await callJson("/v2/courses", { key: KEY_A });
    expect(nf.status).toBe(404);
    expect(nf.body.code).toBe("NOT_FOUND");
    const na = await callJson("/v3/courses/crs_01", { key: KEY_A, method: "PUT" });
    expect(na.status).toBe(405);
    expect(na.body.code).toBe("METHOD_NOT_ALLOWED");
    expect(na.res.headers.get("allow")).toContain("GET");
  });

  it("a literal path is one resource for every method: PATCH /v3/courses/changes is 405, not a course id", async () => {
    const patch = await callJson("/v3/courses/changes", { key: KEY_A, method: "PATCH", json: { name: "x" } });
    expect(patch.status).toBe(405);
    expect(patch.body.code).toBe("METHOD_NOT_ALLOWED");
    expect(patch.res.headers.get("allow")).toBe("GET");
    // The parametric route still answers any other id (this one unknown), the literal route its own method.
    expect((await callJson("/v3/courses/crs_absent", { key: KEY_A, method: "PATCH", json: { name: "x" } })).body.code).toBe("COURSE_NOT_FOUND");
    expect((await callJson("/v3/courses/changes", { key: KEY_A })).status).toBe(200);
  });

  it("matches the reference on a sample of queries", async () => {
    const res = await call("/v3/courses?limit=2&page=2&archived=false", { key: KEY_A });
    const body = (await res.json()) as any;
    expect(body.result.map((c: any) => c.id)).toEqual(referenceList({ limit: 2, page: 2, archived: false }).ids);
  });
});
