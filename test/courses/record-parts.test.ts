/**
 * The stored parts of course records (src/db/record-parts.ts, `course_parts`;
 * docs/architecture.md § Course reads): every path that changes what an included list shows
 * keeps the stored part exact in its own batch — an imported rename of a student, a professor
 * or a survey template reaches every course that lists it, in the contract's order; API
 * writes that change a list; a move carries them; and the contract's largest lists with the
 * longest names stay within D1's 2,000,000 bytes per stored row and value.
 */
import { env } from "cloudflare:test";
import { beforeAll, describe, expect, it } from "vitest";
import { moveSchool } from "../../src/db/move";
import { shardBindings } from "../../src/db/shard-names";
import { shardFor } from "../../src/db/shards";
import { callJson, loadFixture } from "../support/helpers";
import { shardNameOf, shardOf } from "../support/shards";

const SCHOOL = "sch_parts";
const KEY = "sk_test_parts_4qX7mB2nR9tK5wE8yC3vL6pZ";
const school = { id: SCHOOL, name: "École des parts", apiKeys: [KEY] };
/** More than one page of 100: the renamed rows are listed by 150 courses. */
const COURSES = 150;
const pad = (i: number) => String(i).padStart(3, "0");

const student = { id: "stu_star", schoolId: SCHOOL, firstName: "Zoé", lastName: "Zola", email: "zola@example.org" };
const otherStudent = { id: "stu_other", schoolId: SCHOOL, firstName: "Marc", lastName: "Martin", email: "martin@example.org" };
const professor = { id: "prf_star", schoolId: SCHOOL, firstName: "Yves", lastName: "Young", email: "young@example.org" };
const otherProfessor = { id: "prf_other", schoolId: SCHOOL, firstName: "Nina", lastName: "Moreau", email: "moreau@example.org" };
const survey = { id: "svt_star", schoolId: SCHOOL, name: "Zénith" };
const otherSurvey = { id: "svt_other", schoolId: SCHOOL, name: "Milieu" };

const courses = Array.from({ length: COURSES }, (_, i) => ({
  id: `crs_${pad(i)}`,
  schoolId: SCHOOL,
  name: `Cours ${i}`,
  startDateTime: `2027-01-01T${String(i % 24).padStart(2, "0")}:00:00.000Z`,
  endDateTime: `2027-01-02T${String(i % 24).padStart(2, "0")}:00:00.000Z`,
  createdAt: "2026-12-01T00:00:00.000Z",
  updatedAt: "2026-12-01T00:00:00.000Z",
  studentIds: [student.id, otherStudent.id],
  professors: [
    { professorId: professor.id, coTeacher: false, signed: true },
    { professorId: otherProfessor.id, coTeacher: true, signed: false },
  ],
  surveyTemplateIds: [survey.id, otherSurvey.id],
}));

const personOf = (p: typeof student) => ({ id: p.id, firstName: p.firstName, lastName: p.lastName, email: p.email });

/** Every course of the school with `include`, page by page (100 a page). */
async function allCourses(include: string): Promise<any[]> {
  const out: any[] = [];
  for (let page = 1; ; page++) {
    const { status, body } = await callJson(`/v3/courses?${include}=true&limit=100&page=${page}`, { key: KEY });
    expect(status, JSON.stringify(body)).toBe(200);
    out.push(...body.result);
    if (body.result.length < 100) return out;
  }
}

beforeAll(async () => {
  await loadFixture({
    schools: [school],
    students: [student, otherStudent],
    professors: [professor, otherProfessor],
    surveyTemplates: [survey, otherSurvey],
    courses,
  });
});

describe("stored record parts: imported renames", () => {
  it("a student's rename reaches every course that lists the student, in the contract's order", async () => {
    const renamed = { ...student, firstName: "Aline", lastName: "Abel", email: "abel@example.org" };
    await loadFixture({ schools: [school], students: [renamed] });
    const listed = await allCourses("includeStudents");
    expect(listed.length).toBe(COURSES);
    // Abel now sorts before Martin: the whole list is rebuilt, not the entry patched in place.
    for (const c of listed) expect(c.students, c.id).toEqual([personOf(renamed), personOf(otherStudent)]);
  });

  it("a professor's rename reaches every course that lists the professor, flags kept", async () => {
    const renamed = { ...professor, firstName: "Alice", lastName: "Adam", email: "adam@example.org" };
    await loadFixture({ schools: [school], professors: [renamed] });
    const listed = await allCourses("includeTeachers");
    expect(listed.length).toBe(COURSES);
    for (const c of listed) {
      expect(c.teachers, c.id).toEqual([
        { ...personOf(renamed), coTeacher: false, signed: true },
        { ...personOf(otherProfessor), coTeacher: true, signed: false },
      ]);
    }
  });

  it("a survey template's rename reaches every course that lists it", async () => {
    const renamed = { ...survey, name: "Accueil" };
    await loadFixture({ schools: [school], surveyTemplates: [renamed] });
    const listed = await allCourses("includeSurveyTemplates");
    expect(listed.length).toBe(COURSES);
    for (const c of listed) {
      expect(c.surveyTemplates, c.id).toEqual([
        { id: renamed.id, name: "Accueil" },
        { id: otherSurvey.id, name: "Milieu" },
      ]);
    }
  });

  it("leaves no stale part listed once the import's batch is done", async () => {
    const shard = await shardOf(SCHOOL);
    const row = await shard.prepare("SELECT count(*) AS n FROM course_parts_stale").first<{ n: number }>();
    expect(row?.n).toBe(0);
  });
});

describe("stored record parts: a rename listed by 5,000 courses", () => {
  const WIDE = "sch_parts_wide";
  const wideStudent = { id: "stu_wide", schoolId: WIDE, firstName: "Zoé", lastName: "Zola", email: "zola@example.org" };
  const classmate = { id: "stu_mate", schoolId: WIDE, firstName: "Marc", lastName: "Martin", email: "martin@example.org" };
  const wideCourses = Array.from({ length: 5_000 }, (_, i) => ({
    id: `crs_${String(i).padStart(4, "0")}`,
    schoolId: WIDE,
    name: `Cours ${i}`,
    startDateTime: "2027-01-01T08:00:00Z",
    endDateTime: "2027-01-01T10:00:00Z",
    studentIds: [wideStudent.id, classmate.id],
  }));
  const school = { id: WIDE, name: "Large", apiKeys: [] };

  it("is rebuilt in every course's part by statements within D1's limits (the production-limits seam)", async () => {
    await loadFixture({ schools: [school], students: [wideStudent, classmate], courses: wideCourses });
    const renamed = { ...wideStudent, firstName: "Aline", lastName: "Abel", email: "abel@example.org" };
    await loadFixture({ schools: [school], students: [renamed] });
    const shard = await shardOf(WIDE);
    const expected = JSON.stringify([personOf(renamed), personOf(classmate)]);
    const row = await shard
      .prepare("SELECT count(*) AS n, sum(json = ?) AS exact FROM course_parts WHERE school_id = ? AND part = 'students'")
      .bind(expected, WIDE)
      .first<{ n: number; exact: number }>();
    expect(row).toEqual({ n: 5_000, exact: 5_000 });
  });
});

describe("stored record parts: API writes", () => {
  const get = async (id: string) => {
    const { status, body } = await callJson(`/v3/courses/${id}?includeStudents=true&includeTeachers=true&includeSurveyTemplates=true`, { key: KEY });
    expect(status, JSON.stringify(body)).toBe(200);
    return body.result;
  };

  it("a created course has its parts, and a PATCH of each list rebuilds that part", async () => {
    const created = await callJson("/v3/courses", {
      method: "POST",
      key: KEY,
      json: {
        name: "Écrit",
        startDateTime: "2027-02-01T08:00:00Z",
        endDateTime: "2027-02-01T10:00:00Z",
        studentIds: [otherStudent.id],
        professors: [{ professorId: otherProfessor.id, coTeacher: false, signed: false }],
        surveyTemplateIds: [otherSurvey.id],
      },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const id = created.body.result.id as string;
    const first = await get(id);
    expect([first.students, first.teachers, first.surveyTemplates]).toEqual([
      [personOf(otherStudent)],
      [{ ...personOf(otherProfessor), coTeacher: false, signed: false }],
      [{ id: otherSurvey.id, name: "Milieu" }],
    ]);

    const patched = await callJson(`/v3/courses/${id}`, {
      method: "PATCH",
      key: KEY,
      json: {
        studentIds: [],
        professors: [{ professorId: otherProfessor.id, coTeacher: true, signed: true }],
        surveyTemplateIds: [otherSurvey.id, survey.id],
      },
    });
    expect(patched.status, JSON.stringify(patched.body)).toBe(200);
    const after = await get(id);
    expect([after.students, after.teachers, after.surveyTemplates]).toEqual([
      [],
      [{ ...personOf(otherProfessor), coTeacher: true, signed: true }],
      [
        { id: survey.id, name: "Accueil" },
        { id: otherSurvey.id, name: "Milieu" },
      ],
    ]);
  });
});

describe("stored record parts: a move between shards", () => {
  it("carries every part: the listing with every include answers the same from the new shard, and the old one keeps none", async () => {
    const all = "includeStudents=true&includeTeachers=true&includeSurveyTemplates=true";
    const full = async () => {
      const out: any[] = [];
      for (const page of [1, 2]) out.push(...(await callJson(`/v3/courses?${all}&limit=100&page=${page}`, { key: KEY })).body.result);
      return out;
    };
    const expected = await full();
    // The 150 imported courses and the one the API wrote.
    expect(expected.length).toBe(COURSES + 1);
    const from = await shardNameOf(SCHOOL);
    const to = shardBindings(env).find((b) => b !== from)!;
    const shards = Object.fromEntries(shardBindings(env).map((b) => [b, shardFor(env, b)]));
    expect(await moveSchool({ directory: env.DIRECTORY, shards }, SCHOOL, to)).toMatchObject({ result: "moved" });
    expect(await full()).toEqual(expected);
    const parts = async (b: string) =>
      (await shardFor(env, b).prepare("SELECT count(*) AS n FROM course_parts WHERE school_id = ?").bind(SCHOOL).first<{ n: number }>())!.n;
    expect([await parts(from), await parts(to)]).toEqual([0, 3 * (COURSES + 1)]);
  });
});

describe("stored record parts: the contract's largest lists", () => {
  const BIG = "sch_parts_big";
  const BIG_KEY = "sk_test_parts_big_4qX7mB2nR9tK5wE8yC3vL";
  /** 200 characters (the contract's longest name) of 3 UTF-8 bytes each. */
  const longName = (i: number) => `${String(i).padStart(4, "0")}${"€".repeat(196)}`;
  const people = (prefix: string, n: number) =>
    Array.from({ length: n }, (_, i) => ({
      id: `${prefix}_${String(i).padStart(59 - prefix.length, "0")}`.slice(0, 64),
      schoolId: BIG,
      firstName: longName(i),
      lastName: longName(n - i),
      email: `${"x".repeat(60)}${i}@example.org`,
    }));
  const bigStudents = people("stu", 1_000);
  const bigProfessors = people("prf", 100);
  const bigSurveys = Array.from({ length: 1_000 }, (_, i) => ({ id: `svt_${String(i).padStart(60, "0")}`, schoolId: BIG, name: longName(i) }));

  it("1,000 students, 100 professors and 1,000 survey templates with 200-character names: each stored part under 2,000,000 bytes", async () => {
    await loadFixture({
      schools: [{ id: BIG, name: "Grande école", apiKeys: [BIG_KEY] }],
      students: bigStudents,
      professors: bigProfessors,
      surveyTemplates: bigSurveys,
      courses: [
        {
          id: "crs_big",
          schoolId: BIG,
          name: "Amphi",
          startDateTime: "2027-03-01T08:00:00Z",
          endDateTime: "2027-03-01T10:00:00Z",
          studentIds: bigStudents.map((s) => s.id),
          professors: bigProfessors.map((p) => ({ professorId: p.id, coTeacher: false, signed: false })),
          surveyTemplateIds: bigSurveys.map((t) => t.id),
        },
      ],
    });
    const shard = await shardOf(BIG);
    const { results } = await shard
      .prepare("SELECT part, length(CAST(json AS BLOB)) AS bytes FROM course_parts WHERE school_id = ? AND course_id = 'crs_big' ORDER BY part")
      .bind(BIG)
      .all<{ part: string; bytes: number }>();
    expect(results.map((r) => r.part)).toEqual(["students", "surveyTemplates", "teachers"]);
    // The students' part is the largest list: over 1.2 MB here, still under D1's limit.
    const students = results.find((r) => r.part === "students")!;
    expect(students.bytes).toBeGreaterThan(1_200_000);
    for (const r of results) expect(r.bytes, r.part).toBeLessThan(2_000_000);
    // And the listing reads the part back whole.
    const { status, body } = await callJson("/v3/courses/crs_big?includeStudents=true", { key: BIG_KEY });
    expect(status).toBe(200);
    expect(body.result.students.length).toBe(1_000);
    expect(body.result.students[0]).toEqual({
      id: bigStudents[999]!.id,
      firstName: bigStudents[999]!.firstName,
      lastName: bigStudents[999]!.lastName,
      email: bigStudents[999]!.email,
    });
  });
});
