/**
 * Every shape of the statement that builds course records (src/courses/record.ts,
 * src/courses/query.ts): the 16 combinations of the include flags, each through GET
 * /v3/courses with every filter (short and long name, so both name plans), without filters,
 * POST /v3/courses:search with every filter and id lists past 100 (their per-course form)
 * under each sort key, and GET /v3/courses/{id}, against a course at the contract's largest
 * lists (1,000 groups, 1,000 students, 100 professors, 1,000 survey templates) and a bare
 * one. Each answer is a 200 whose records equal the JS-built record (`stateToRecord`,
 * src/courses/change.ts) with the included lists in the contract's order.
 */
import { beforeAll, describe, expect, it } from "vitest";
import { type CourseState, stateToRecord } from "../../src/courses/change";
import { callJson, loadFixture } from "../support/helpers";
import { type Course, sortByFolded } from "../support/reference";

const SCHOOL = "sch_shapes";
const KEY = "sk_test_shapes";

/** Names whose folds tie or order differently from the names as written. */
// Case and accents only: the oracle (test/support/reference.ts) folds what the reference names.
const NAMES = ["Émile", "emile", "Zoé", "zoe", "Çédric", "cedric", "Ågot", "agot"];
const pad = (i: number) => String(i).padStart(4, "0");
const person = (prefix: string) => (i: number) => ({
  id: `${prefix}_${pad((i * 7_919) % 1_000)}`,
  schoolId: SCHOOL,
  firstName: NAMES[(i * 3) % NAMES.length]!,
  lastName: `${NAMES[i % NAMES.length]!} ${i % 50}`,
  email: `${prefix}${i}@example.org`,
});
const students = Array.from({ length: 1_000 }, (_, i) => person("stu")(i));
const professors = Array.from({ length: 100 }, (_, i) => person("prf")(i));
const groups = Array.from({ length: 1_000 }, (_, i) => ({ id: `grp_${pad(999 - i)}`, schoolId: SCHOOL, name: `Groupe ${i}` }));
const surveyTemplates = Array.from({ length: 1_000 }, (_, i) => ({ id: `svt_${pad(i)}`, schoolId: SCHOOL, name: `${NAMES[i % NAMES.length]} ${i % 10}` }));
const training = { id: "trn_shapes", schoolId: SCHOOL, name: "Formation « continue »" };

const full: Course = {
  id: "crs_full",
  schoolId: SCHOOL,
  name: "Économie appliquée",
  startDateTime: "2027-03-01T08:00:00.000Z",
  endDateTime: "2027-03-01T10:00:00.000Z",
  createdAt: "2027-01-01T00:00:00.000Z",
  updatedAt: "2027-01-02T00:00:00.000Z",
  classroom: "B204",
  creatorId: "usr_1",
  trainingId: training.id,
  archived: false,
  absencesSent: true,
  groupIds: groups.map((g) => g.id),
  studentIds: students.map((s) => s.id),
  professors: professors.map((p, i) => ({ professorId: p.id, coTeacher: i % 2 === 1, signed: i % 3 === 0 })),
  surveyTemplateIds: surveyTemplates.map((t) => t.id),
};
/** Empty lists, nulls: `[]` and `null` in every include. */
const bare: Course = {
  ...full,
  id: "crs_bare",
  name: "Bare",
  startDateTime: "2027-03-02T08:00:00.000Z",
  endDateTime: "2027-03-02T10:00:00.000Z",
  classroom: null,
  creatorId: null,
  trainingId: null,
  archived: true,
  absencesSent: false,
  groupIds: [],
  studentIds: [],
  professors: [],
  surveyTemplateIds: [],
};

/** The stored state of a fixture course, as the write path holds it. */
function stateOf(c: Course): CourseState {
  return {
    id: c.id,
    name: c.name,
    startDateTime: Date.parse(c.startDateTime),
    endDateTime: Date.parse(c.endDateTime),
    classroom: c.classroom,
    creatorId: c.creatorId,
    trainingId: c.trainingId,
    groupIds: [...c.groupIds].sort(),
    studentIds: [...c.studentIds].sort(),
    professors: [...c.professors].sort((a, b) => (a.professorId < b.professorId ? -1 : 1)),
    surveyTemplateIds: [...c.surveyTemplateIds].sort(),
    archived: c.archived,
    absencesSent: c.absencesSent,
    createdAt: Date.parse(c.createdAt),
    updatedAt: Date.parse(c.updatedAt),
    revision: null,
    version: 1,
  };
}

type Flags = { includeStudents: boolean; includeTeachers: boolean; includeSurveyTemplates: boolean; includeTraining: boolean };

/** The JS-built record (`stateToRecord`) with the included lists added in the contract's order. */
function expected(c: Course, inc: Flags): Record<string, unknown> {
  const record: Record<string, unknown> = { ...stateToRecord(stateOf(c)) };
  const people = <T extends { id: string; firstName: string; lastName: string }>(list: T[]) => sortByFolded(list, (p) => [p.lastName, p.firstName]);
  const basic = (p: (typeof students)[number]) => ({ id: p.id, firstName: p.firstName, lastName: p.lastName, email: p.email });
  if (inc.includeStudents) record.students = people(students.filter((s) => c.studentIds.includes(s.id))).map(basic);
  if (inc.includeTeachers)
    record.teachers = people(
      c.professors.map((a) => ({ ...basic(professors.find((p) => p.id === a.professorId)!), coTeacher: a.coTeacher, signed: a.signed })),
    );
  if (inc.includeSurveyTemplates)
    record.surveyTemplates = sortByFolded(
      surveyTemplates.filter((t) => c.surveyTemplateIds.includes(t.id)),
      (t) => [t.name],
    ).map((t) => ({ id: t.id, name: t.name }));
  if (inc.includeTraining) record.training = c.trainingId === null ? null : { id: training.id, name: training.name };
  return record;
}

/** Every object's keys, in order, at every depth (`toEqual` ignores key order). */
const keyOrder = (v: unknown): unknown =>
  Array.isArray(v) ? v.map(keyOrder) : v !== null && typeof v === "object" ? Object.entries(v).map(([k, x]) => [k, keyOrder(x)]) : null;

/** A 200 whose records are `records`, keys in order. */
function expectRecords(what: string, answer: { status: number; body: any }, records: Record<string, unknown>[]): void {
  expect(answer.status, `${what}: ${JSON.stringify(answer.body).slice(0, 300)}`).toBe(200);
  expect(answer.body.result, what).toEqual(records);
  expect(keyOrder(answer.body.result), what).toEqual(keyOrder(records));
}

/** Ids past the GET limit of 100, holding one id of the course: the search's per-course (EXISTS) form. */
const longList = (own: string, prefix: string) => [...Array.from({ length: 150 }, (_, i) => `${prefix}_none_${i}`), own];

/** Every filter, each matching `full`: its SQL is in the statement, and `full` still comes back. */
const EVERY_FILTER = {
  courseStartDateTime: "2027-03-01T07:00:00.000Z",
  courseEndDateTime: "2027-03-01T11:00:00.000Z",
  absencesSent: true,
  groupId: [full.groupIds[500]!],
  studentId: [full.studentIds[500]!],
  professorId: [full.professors[50]!.professorId],
  trainingId: [training.id],
  archived: false,
  classroom: "B204",
  creatorId: "usr_1",
  professorSignatureMissing: true,
};
const SORT_FIELDS = ["startDateTime", "endDateTime", "name", "classroom", "createdAt", "updatedAt"] as const;

const FLAGS = ["includeStudents", "includeTeachers", "includeSurveyTemplates", "includeTraining"] as const;
const COMBINATIONS: Flags[] = Array.from({ length: 16 }, (_, m) => Object.fromEntries(FLAGS.map((f, i) => [f, (m & (1 << i)) !== 0])) as Flags);

beforeAll(async () => {
  await loadFixture({
    schools: [{ id: SCHOOL, name: "Shapes", apiKeys: [KEY] }],
    trainings: [training],
    groups,
    students,
    professors,
    surveyTemplates,
    courses: [full, bare],
  });
});

describe("course records at the contract's largest lists, every include combination, filter and sort", () => {
  for (const inc of COMBINATIONS) {
    const on = FLAGS.filter((f) => inc[f]);
    const includes = on.map((f) => `${f}=true`).join("&");
    it(`${on.map((f) => f.replace("include", "")).join(" + ") || "no includes"}: GET, search under each sort, GET by id`, async () => {
      const [fullRecord, bareRecord] = [expected(full, inc), expected(bare, inc)];
      const get = (query: string) => callJson(`/v3/courses?${[query, includes].filter(Boolean).join("&")}`, { key: KEY });
      const filters = Object.entries(EVERY_FILTER)
        .map(([k, v]) => `${k}=${encodeURIComponent(String(v))}`)
        .join("&");
      // A name of 3+ characters takes the trigram-count statement, a shorter one the plain walk.
      expectRecords("GET every filter, name of 3+", await get(`${filters}&name=${encodeURIComponent("ÉCONOMIE")}`), [fullRecord]);
      expectRecords("GET every filter, name of 2", await get(`${filters}&name=ap`), [fullRecord]);
      expectRecords("GET no filter", await get(""), [fullRecord, bareRecord]);
      for (const [i, field] of SORT_FIELDS.entries()) {
        const body = {
          ...EVERY_FILTER,
          ...inc,
          courseId: [full.id],
          trainingId: [training.id, "trn_none"],
          groupId: longList(full.groupIds[0]!, "grp"),
          studentId: longList(full.studentIds[999]!, "stu"),
          professorId: longList(full.professors[0]!.professorId, "prf"),
          name: i % 2 ? "appliq" : "é",
          sort: [{ field, order: i % 2 ? "desc" : "asc" }],
        };
        expectRecords(`search sort ${field}`, await callJson("/v3/courses:search", { method: "POST", key: KEY, json: body }), [fullRecord]);
      }
      const one = await callJson(`/v3/courses/${full.id}?${includes}`, { key: KEY });
      expectRecords("GET by id", { status: one.status, body: { result: [one.body.result] } }, [fullRecord]);
      const none = await callJson(`/v3/courses/${bare.id}?${includes}`, { key: KEY });
      expectRecords("GET bare by id", { status: none.status, body: { result: [none.body.result] } }, [bareRecord]);
    });
  }
});
