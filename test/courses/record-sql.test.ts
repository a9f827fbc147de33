/**
 * The course record built by SQLite (src/courses/record.ts) against the record the Worker
 * built in JS before (the oracle below, written from the import file alone): same keys in
 * the same order, same values, nested lists in the contract's order (docs/reference.md § "Course
 * record"), for names that are awkward to fold, sort or escape. Also: every write path of a
 * name stores its case- and accent-folded form as its sort key (src/db/import-rows.ts), as
 * the oracle's own folding (`caseAndAccentFold`) computes it.
 */
import { env } from "cloudflare:test";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { shardBindings } from "../../src/db/shard-names";
import { shardFor } from "../../src/db/shards";
import { callJson, loadFixture } from "../support/helpers";
import { type Course, caseAndAccentFold, compareText, sortByFolded } from "../support/reference";

interface Person {
  id: string;
  schoolId: string;
  firstName: string;
  lastName: string;
  email: string;
}
interface Named {
  id: string;
  schoolId: string;
  name: string;
}
interface School {
  schools: { id: string; name: string; apiKeys: string[] }[];
  trainings: Named[];
  groups: Named[];
  students: Person[];
  professors: Person[];
  surveyTemplates: Named[];
  courses: Course[];
}

const iso = (text: string) => new Date(Date.parse(text)).toISOString();
const byId = <T extends { id: string }>(list: T[], id: string) => list.find((x) => x.id === id)!;

/** The oracle: the record as the Worker built it in JS, from the imported data. */
function expectedRecord(f: School, c: Course, includes: boolean): Record<string, unknown> {
  const person = (p: Person) => ({ id: p.id, firstName: p.firstName, lastName: p.lastName, email: p.email });
  const record: Record<string, unknown> = {
    id: c.id,
    name: c.name,
    startDateTime: iso(c.startDateTime),
    endDateTime: iso(c.endDateTime),
    classroom: c.classroom,
    creatorId: c.creatorId,
    trainingId: c.trainingId,
    groupIds: [...c.groupIds].sort(),
    professorIds: c.professors.map((p) => p.professorId).sort(),
    archived: c.archived,
    absencesSent: c.absencesSent,
    version: 1,
    createdAt: iso(c.createdAt),
    updatedAt: iso(c.updatedAt),
  };
  if (!includes) return record;
  const people = (list: Person[]) => sortByFolded(list, (p) => [p.lastName, p.firstName]);
  record.students = people(c.studentIds.map((id) => byId(f.students, id))).map(person);
  const teachers = c.professors.map((a) => ({ ...person(byId(f.professors, a.professorId)), coTeacher: a.coTeacher, signed: a.signed }));
  record.teachers = people(teachers as unknown as Person[]);
  record.surveyTemplates = sortByFolded(
    c.surveyTemplateIds.map((id) => byId(f.surveyTemplates, id)),
    (t) => [t.name],
  ).map((t) => ({ id: t.id, name: t.name }));
  record.training = c.trainingId === null ? null : { id: c.trainingId, name: byId(f.trainings, c.trainingId).name };
  return record;
}

/** Every object's keys, in order, at every depth: `toEqual` ignores key order, clients may not. */
const keyOrder = (v: unknown): unknown =>
  Array.isArray(v) ? v.map(keyOrder) : v !== null && typeof v === "object" ? Object.entries(v).map(([k, x]) => [k, keyOrder(x)]) : null;

const ALL = "includeStudents=true&includeTeachers=true&includeSurveyTemplates=true&includeTraining=true";

/** Lists the school's courses (all of them) and compares them with the oracle, with and without includes. */
async function expectSameRecords(f: School): Promise<void> {
  const key = f.schools[0]!.apiKeys[0]!;
  const order = [...f.courses].sort((a, b) => Date.parse(a.startDateTime) - Date.parse(b.startDateTime) || compareText(a.id, b.id));
  for (const includes of [false, true]) {
    const { status, body } = await callJson(`/v3/courses?limit=100${includes ? `&${ALL}` : ""}`, { key });
    expect(status).toBe(200);
    const expected = order.map((c) => expectedRecord(f, c, includes));
    expect(body.result).toEqual(expected);
    expect(keyOrder(body.result)).toEqual(keyOrder(expected));
  }
}

/** Each stored sort key is the oracle's folding of the name beside it, on every shard. */
async function expectStoredFolds(): Promise<void> {
  for (const shard of shardBindings(env).map((b) => shardFor(env, b))) {
    const people = await shard
      .prepare(
        "SELECT first_name AS a, first_name_folded AS fa, last_name AS b, last_name_folded AS fb FROM students UNION ALL SELECT first_name, first_name_folded, last_name, last_name_folded FROM professors",
      )
      .all<{ a: string; fa: string; b: string; fb: string }>();
    for (const r of people.results) expect([r.fa, r.fb]).toEqual([caseAndAccentFold(r.a), caseAndAccentFold(r.b)]);
    const templates = await shard.prepare("SELECT name, name_folded FROM survey_templates").all<{ name: string; name_folded: string }>();
    for (const r of templates.results) expect(r.name_folded).toBe(caseAndAccentFold(r.name));
  }
}

/** An import file for one school: people and templates with the given names, courses over them. */
function schoolOf(tag: string, names: string[], instants: number[][]): School {
  const schoolId = `sch_${tag}`;
  const people = (prefix: string) =>
    names.map((name, i) => ({
      id: `${prefix}_${tag}_${i}`,
      schoolId,
      firstName: names[(i * 7 + 3) % names.length]!,
      lastName: name,
      email: `${prefix}${i}@example.org`,
    }));
  const students = people("stu");
  const professors = people("prf");
  const surveyTemplates = names.map((name, i) => ({ id: `svt_${tag}_${i}`, schoolId, name }));
  const trainings = [{ id: `trn_${tag}`, schoolId, name: names[0]! }];
  const groups = [
    { id: `grp_${tag}_b`, schoolId, name: "B" },
    { id: `grp_${tag}_a`, schoolId, name: "A" },
  ];
  const courses = instants.map(([start, end, created, updated], i) => ({
    id: `crs_${tag}_${i}`,
    schoolId,
    name: names[i % names.length]!,
    startDateTime: new Date(start!).toISOString(),
    endDateTime: new Date(end!).toISOString(),
    createdAt: new Date(created!).toISOString(),
    updatedAt: new Date(updated!).toISOString(),
    // Every other course bare: empty lists, nulls, false flags.
    classroom: i % 2 ? null : names[(i + 1) % names.length]!,
    creatorId: i % 2 ? null : `usr_${i}`,
    trainingId: i % 2 ? null : trainings[0]!.id,
    archived: i % 4 === 0,
    absencesSent: i % 3 === 0,
    groupIds: i % 2 ? [] : groups.map((g) => g.id),
    studentIds: i % 2 ? [] : students.map((s) => s.id),
    professors: i % 2 ? [] : professors.map((p, j) => ({ professorId: p.id, coTeacher: j % 2 === 1, signed: j % 3 === 0 })),
    surveyTemplateIds: i % 2 ? [] : surveyTemplates.map((t) => t.id),
  }));
  return { schools: [{ id: schoolId, name: tag, apiKeys: [`sk_test_${tag}`] }], trainings, groups, students, professors, surveyTemplates, courses };
}

// Awkward for the record, within the folding the reference names (no ligature or
// compatibility form: see `caseAndAccentFold`).
const AWKWARD = [
  "Émile",
  "emile",
  "EMILE",
  "Emile",
  "E\u0301mile",
  "Zoé",
  "zoe",
  "ZOË",
  "Ñandú",
  "nandu",
  "😀",
  "😀a",
  "𠀀",
  "\ue000",
  "a",
  "İstanbul",
  '"quoted"',
  "back\\slash",
  "tab\there",
  "new\nline",
  "nul\u0000byte",
  "\u0001\u001f ctl",
  "\u2028sep",
  "<script>&amp;",
];

describe("course records built in SQL", () => {
  it("equal the JS-built records for awkward names: accents, case, equal folds, emoji, quotes, backslashes, control characters", async () => {
    const day = Date.parse("2026-09-07T08:00:00.000Z");
    const f = schoolOf(
      "awk",
      AWKWARD,
      Array.from({ length: 6 }, (_, i) => [day + i * 3_600_000, day + i * 3_600_000 + 5_400_123, day - 1000 - i, day - i]),
    );
    await loadFixture(f);
    await expectSameRecords(f);
    await expectStoredFolds();
  });

  it("GET /v3/courses/{id} sends the same record, with its ETag only without includes", async () => {
    const { body, res } = await callJson("/v3/courses/crs_awk_0", { key: "sk_test_awk" });
    expect(res.headers.get("etag")).toBe(`"${body.result.version}"`);
    const listed = await callJson(`/v3/courses?${ALL}&limit=1`, { key: "sk_test_awk" });
    const one = await callJson(`/v3/courses/crs_awk_0?${ALL}`, { key: "sk_test_awk" });
    expect(one.res.headers.get("etag")).toBeNull();
    expect(one.body.result).toEqual(listed.body.result[0]);
  });

  it("equal the JS-built records for random names and instants (fast-check)", async () => {
    // Instants across SQLite's date range, years 0000–9999 (what the API writes).
    const instant = fc.integer({ min: Date.parse("0000-01-01T00:00:00.000Z"), max: Date.parse("9999-12-31T23:59:59.999Z") });
    const course = fc.tuple(instant, instant, instant, instant).filter(([s, e]) => s !== e);
    // Code points whose folding the reference settles (case and accents; see
    // `caseAndAccentFold`): ASCII with its controls, the Latin-1 letters but for the
    // ligatures æ, Æ and ß, the combining accents, emoji, astral ideographs and private use
    // (for the UTF-8 order), and ones that fold or escape.
    const codePoint = (min: number, max: number) => fc.integer({ min, max }).map((c) => String.fromCodePoint(c));
    const char = fc.oneof(
      codePoint(0x00, 0x7f),
      codePoint(0xc0, 0xff).filter((c) => !["Æ", "ß", "æ"].includes(c)),
      codePoint(0x300, 0x36f),
      codePoint(0x1f600, 0x1f64f),
      codePoint(0x20000, 0x2a6df),
      codePoint(0xe000, 0xf8ff),
      fc.constantFrom("É", "é", "e", "E", "\u0301", '"', "\\", "\n", "\u0000"),
    );
    const name = fc.string({ unit: char, minLength: 1, maxLength: 12 });
    let run = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(name, { minLength: 1, maxLength: 8 }), fc.array(course, { minLength: 1, maxLength: 4 }), async (names, instants) => {
        const ordered = instants.map(([s, e, c, u]) => [Math.min(s, e), Math.max(s, e), c, u]);
        const f = schoolOf(`p${run++}`, names, ordered);
        await loadFixture(f);
        await expectSameRecords(f);
      }),
      { numRuns: 40 },
    );
    await expectStoredFolds();
  });
});
