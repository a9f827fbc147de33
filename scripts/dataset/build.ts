/**
 * The builders of the demo dataset, in the import file format (docs/operations.md § "Data import
 * (operators)"), with @faker-js/faker in the `fr` locale and a fixed seed: the same options
 * give the same file. Every random draw comes from one generator, in a fixed order (schools,
 * then per school its students, professors and courses), so changing a builder's draws
 * changes every later value.
 */
import { createHash } from "node:crypto";
import { base, Faker, fr } from "@faker-js/faker";
import type { z } from "zod";
import type { importFileSchema } from "../../src/db/import";
import { localIso, localMs, type SchoolDay, schoolDays } from "./calendar";
import { EVENING, GROUP_SHARE, GYM, of, PATRONS, SUFFIXES, SURVEYS, slug, TRAININGS } from "./content";

/** The decoded JSON of an import file, as written by the generator. */
export type ImportFileInput = z.input<typeof importFileSchema>;
type Dataset = { [K in keyof ImportFileInput]-?: NonNullable<ImportFileInput[K]> };
type CourseInput = Dataset["courses"][number];

/** API key of `sch_demo` (fixed: every demo database accepts it). */
export const DEMO_API_KEY = "sk_test_demo_4qX7mB2nR9tK5wE8yC3vL6pZ";
/** API key of `sch_other`, the small second school. */
export const OTHER_API_KEY = "sk_test_other_8hJ3dF6sG1aQ9kW2zT5xN7bM";

/** Options of {@link generateDataset}; every field optional. */
export interface GenerateOptions {
  /** Number of schools (≥ 1): `sch_demo` (the big one), `sch_other`, then `sch_03`, `sch_04`… Default 2. */
  schools?: number;
  /** Courses of `sch_demo`. Default 3,000. */
  courses?: number;
  /**
   * Students of `sch_demo`, spread over its groups. Default: groups × group size, where there
   * are max(20, courses / 150) groups and the group size is studentsPerCourse / 1.5 (600 for the demo).
   */
  students?: number;
  /**
   * Mean number of students enrolled per course of `sch_demo` (a course has 1 or 2 groups, with
   * equal odds, and enrols their students). Default 45, or 10 above 10,000 courses (so that
   * 100,000 courses give about 1,000,000 course↔student rows).
   */
  studentsPerCourse?: number;
  /** Courses of each small school (`sch_other`, `sch_03`…). Default 50. */
  smallCourses?: number;
  /** Faker seed. Default 2026. */
  seed?: number;
  /**
   * The instant that separates past courses (mostly archived, absences sent, signed) from
   * future ones, in ms since the epoch or ISO 8601. Fixed by default (2026-11-20T18:00:00+01:00)
   * so that the output does not depend on the clock.
   */
  asOf?: number | string;
}

/** Default reference instant of {@link GenerateOptions.asOf}. */
export const DEFAULT_AS_OF = "2026-11-20T18:00:00+01:00";

const pad = (n: number) => String(n).padStart(2, "0");
const MINUTE_MS = 60_000;
const DAY_MS = 86_400_000;

/** The random draws of one dataset, all from one seeded faker. */
interface Draw {
  faker: Faker;
  /** Uniform in [0, 1). */
  rnd(): number;
  /** Uniform integer in [min, max]. */
  int(min: number, max: number): number;
  pick<T>(list: readonly T[]): T;
}

function newDraw(seed: number): Draw {
  const faker = new Faker({ locale: [fr, base] });
  faker.seed(seed);
  const rnd = () => faker.number.float();
  return {
    faker,
    rnd,
    int: (min, max) => min + Math.floor(rnd() * (max - min + 1)),
    pick: (list) => list[Math.min(list.length - 1, Math.floor(rnd() * list.length))]!,
  };
}

/** What one school gets: its sizes and the infix of its ids. */
interface SchoolPlan {
  id: string;
  /** Id infix: "" for sch_demo, "other_", "03_"… */
  tag: string;
  name: string;
  apiKey: string;
  courses: number;
  groups: number;
  students: number;
  professors: number;
  /** The first N of TRAININGS. */
  trainings: number;
  surveys: number;
}

/** Deterministic key of small school number `n` (3…): `sk_` + 33 characters of `[A-Za-z0-9_]`, as the import requires. */
function smallSchoolKey(n: number): string {
  return `sk_test_s${pad(n)}_${createHash("sha256").update(`school-${n}`).digest("base64url").slice(0, 24).replaceAll("-", "_")}`;
}

/** The schools: `sch_demo` with the asked sizes, then small ones. */
function planSchools(d: Draw, n: number, courses: number, smallCourses: number, perCourse: number, students: number | undefined): SchoolPlan[] {
  const groupSize = Math.max(1, Math.round(perCourse / 1.5));
  const bigGroups = students !== undefined ? Math.max(1, Math.round(students / groupSize)) : Math.max(20, Math.round(courses / 150));
  const plans: SchoolPlan[] = [];
  for (let i = 0; i < n; i++) {
    if (i === 0) {
      plans.push({
        id: "sch_demo",
        tag: "",
        name: `Lycée ${d.pick(PATRONS)}`,
        apiKey: DEMO_API_KEY,
        courses,
        groups: bigGroups,
        students: students ?? bigGroups * groupSize,
        professors: Math.max(40, Math.round(courses / 75)),
        trainings: 6,
        surveys: 5,
      });
    } else {
      const k = i + 1;
      plans.push({
        id: i === 1 ? "sch_other" : `sch_${pad(k)}`,
        tag: i === 1 ? "other_" : `${pad(k)}_`,
        name: `${d.pick(["Institut", "Lycée professionnel", "École"])} ${d.pick(PATRONS)} ${of(d.faker.location.city())}`,
        apiKey: i === 1 ? OTHER_API_KEY : smallSchoolKey(k),
        courses: smallCourses,
        groups: 2,
        students: 48,
        professors: 5,
        trainings: 2,
        surveys: 2,
      });
    }
  }
  return plans;
}

/** One school being built: its plan, the dataset, the draws and its e-mail addresses. */
interface School {
  plan: SchoolPlan;
  out: Dataset;
  d: Draw;
  /** A unique address of the school: `first.last@…` (`f.last@…` when `short`), numbered on collision. */
  email(first: string, last: string, short: boolean): string;
}

/** Trainings and groups, the groups spread over trainings like the demo's 20. */
function addGroups({ plan, out }: School) {
  const { id: sid, tag: t } = plan;
  const trainings = TRAININGS.slice(0, plan.trainings);
  trainings.forEach((tr, k) => {
    out.trainings.push({ id: `trn_${t}${k + 1}`, schoolId: sid, name: tr.name });
  });
  const share = GROUP_SHARE.slice(0, plan.trainings);
  const shareSum = share.reduce((a, b) => a + b, 0);
  const groupTraining: number[] = [];
  const perTraining = share.map((s) => Math.max(1, Math.round((s / shareSum) * plan.groups)));
  while (perTraining.reduce((a, b) => a + b, 0) > plan.groups && perTraining.some((x) => x > 1)) perTraining[perTraining.indexOf(Math.max(...perTraining))]!--;
  while (perTraining.reduce((a, b) => a + b, 0) < plan.groups) perTraining[0]!++;
  const groupsOfTraining: number[][] = trainings.map(() => []);
  perTraining.forEach((count, k) => {
    for (let j = 0; j < count; j++) {
      const g = groupTraining.length;
      groupTraining.push(k);
      groupsOfTraining[k]!.push(g);
      const label = count > 26 ? String(j + 1) : String.fromCharCode(65 + j);
      out.groups.push({ id: `grp_${t}${g + 1}`, schoolId: sid, name: `${trainings[k]!.group} ${label}` });
    }
  });
  return { trainings, groupTraining, groupsOfTraining };
}

/** Students, in contiguous id ranges per group (grp_1: stu_1…stu_30); returns each group's members. */
function addStudents({ plan, out, d, email }: School, groups: number): string[][] {
  const members: string[][] = Array.from({ length: groups }, () => []);
  for (let s = 0; s < plan.students; s++) {
    const id = `stu_${plan.tag}${s + 1}`;
    const firstName = d.faker.person.firstName();
    const lastName = d.faker.person.lastName();
    out.students.push({ id, schoolId: plan.id, firstName, lastName, email: email(firstName, lastName, false) });
    members[Math.floor((s * groups) / plan.students)]!.push(id);
  }
  return members;
}

/** Professors: one per subject first, then more for the subjects with more hours. */
function addProfessors({ plan, out, d, email }: School, trainings: typeof TRAININGS) {
  const subjectWeight = new Map<string, number>();
  for (const tr of trainings) for (const s of tr.subjects) subjectWeight.set(s, (subjectWeight.get(s) ?? 0) + 1);
  const subjects = [...subjectWeight.keys()];
  const weighted = [...subjectWeight].flatMap(([s, w]) => Array<string>(w).fill(s));
  const profsOf = new Map<string, number[]>(subjects.map((s) => [s, []]));
  const forgetful: boolean[] = [];
  for (let p = 0; p < plan.professors; p++) {
    const firstName = d.faker.person.firstName();
    const lastName = d.faker.person.lastName();
    out.professors.push({ id: `prf_${plan.tag}${p + 1}`, schoolId: plan.id, firstName, lastName, email: email(firstName, lastName, true) });
    profsOf.get(p < subjects.length ? subjects[p]! : d.pick(weighted))!.push(p);
    if (d.rnd() < 0.3) profsOf.get(d.pick(subjects))!.push(p); // a second subject
    forgetful.push(p % 7 === 3); // prf_4, prf_11, prf_18…: often forget to sign
  }
  for (const s of subjects) if (profsOf.get(s)!.length === 0) profsOf.get(s)!.push(d.int(0, plan.professors - 1));
  return { profsOf, forgetful, allProfs: Array.from({ length: plan.professors }, (_, p) => p) };
}

/** Busy hours (bit h - 8) of each group and professor on the current day. */
interface Busy {
  groups: Map<number, number>;
  profs: Map<number, number>;
}

/**
 * A daytime slot of 1 or 2 hours between 8:00 and 18:00 where no group of the course and
 * not the professor is busy, when one is found in 8 tries (the last professor tried and slot
 * otherwise); marks it busy.
 */
function findSlot(d: Draw, busy: Busy, groups: number[], candidates: number[], allProfs: number[]) {
  let start = 0;
  let hours = 2;
  let prof = 0;
  for (let attempt = 0; attempt < 8; attempt++) {
    hours = d.rnd() < 0.55 ? 1 : 2;
    const h = d.int(8, 18 - hours);
    const mask = ((1 << hours) - 1) << (h - 8);
    const p = attempt < 4 ? d.pick(candidates) : d.pick(allProfs);
    const free = groups.every((g) => ((busy.groups.get(g) ?? 0) & mask) === 0) && ((busy.profs.get(p) ?? 0) & mask) === 0;
    start = h * 60;
    prof = p;
    if (free) break;
  }
  const mask = ((1 << hours) - 1) << (start / 60 - 8);
  for (const g of groups) busy.groups.set(g, (busy.groups.get(g) ?? 0) | mask);
  busy.profs.set(prof, (busy.profs.get(prof) ?? 0) | mask);
  return { start, hours, prof };
}

/**
 * Stamps and states of a course: most planned in late August, others a few days ahead, none
 * after `asOf`; past courses mostly archived with absences sent right after the course.
 */
function courseHistory(d: Draw, startMs: number, endMs: number, asOf: number) {
  const planningFrom = Date.parse("2026-08-17T07:00:00Z");
  const past = endMs <= asOf;
  let created = d.rnd() < 0.85 ? planningFrom + d.int(0, 14 * 24 * 60) * MINUTE_MS : startMs - d.int(1, 20) * DAY_MS - d.int(0, 600) * MINUTE_MS;
  created = Math.min(Math.max(created, planningFrom), asOf - d.int(1, 600) * MINUTE_MS);
  const archived = past ? d.rnd() < 0.7 : d.rnd() < 0.01;
  const absencesSent = past && d.rnd() < 0.9;
  const afterEnd = d.rnd() < 0.8 ? d.int(5, 240) : d.int(240, 3 * 24 * 60);
  let updated = past && (archived || absencesSent) ? endMs + afterEnd * MINUTE_MS : created + d.int(0, 10 * 24 * 60) * MINUTE_MS;
  updated = Math.max(created, Math.min(updated, asOf));
  return { archived, absencesSent, createdAt: new Date(created).toISOString(), updatedAt: new Date(updated).toISOString() };
}

/**
 * Courses, spread evenly over the school days; no group or professor in two places at once
 * when a free slot is found in a few tries. Ids in chronological order: crs_1 is the first
 * course of the year.
 */
function addCourses(
  school: School,
  days: SchoolDay[],
  asOf: number,
  groups: ReturnType<typeof addGroups>,
  members: string[][],
  staff: ReturnType<typeof addProfessors>,
): void {
  const { plan, out, d } = school;
  const { id: sid, tag: t } = plan;
  const { groupTraining, groupsOfTraining, trainings } = groups;
  const { profsOf, forgetful, allProfs } = staff;
  for (let k = 0; k < plan.surveys; k++) out.surveyTemplates.push({ id: `svt_${t}${k + 1}`, schoolId: sid, name: SURVEYS[k % SURVEYS.length]! });
  const creators = Array.from({ length: Math.min(15, 3 + plan.professors) }, (_, k) => `usr_${t}${k + 1}`);
  const schoolCourses: CourseInput[] = [];
  let dayIndex = -1;
  let busy: Busy = { groups: new Map(), profs: new Map() };
  for (let c = 0; c < plan.courses; c++) {
    const di = Math.floor((c * days.length) / plan.courses);
    if (di !== dayIndex) {
      dayIndex = di;
      busy = { groups: new Map(), profs: new Map() };
    }
    const day = days[di]!;
    const evening = d.rnd() < 0.02;
    const g1 = d.int(0, groupTraining.length - 1);
    const training = groupTraining[g1]!;
    const siblings = groupsOfTraining[training]!;
    const courseGroups = [g1];
    if (!evening && siblings.length > 1 && d.rnd() < 0.5) {
      let g2 = d.pick(siblings);
      while (g2 === g1) g2 = d.pick(siblings);
      courseGroups.push(g2);
    }
    const subject = evening ? d.pick(EVENING) : d.pick(trainings[training]!.subjects);
    const candidates = evening ? allProfs : profsOf.get(subject)!;
    const eveningProf = d.pick(candidates);
    const { start, hours, prof } = evening ? { start: 18 * 60, hours: 2, prof: eveningProf } : findSlot(d, busy, courseGroups, candidates, allProfs);
    const startMs = localMs(day, start);
    const endMs = localMs(day, start + hours * 60);
    const past = endMs <= asOf;
    const signs = (p: number) => past && d.rnd() >= (forgetful[p] ? 0.4 : 0.02);
    const professors = [{ professorId: `prf_${t}${prof + 1}`, coTeacher: false, signed: signs(prof) }];
    if (d.rnd() < 0.08 && plan.professors > 1) {
      let co = d.pick(profsOf.get(subject) ?? allProfs);
      if (co === prof) co = (prof + 1 + d.int(0, plan.professors - 2)) % plan.professors;
      professors.push({ professorId: `prf_${t}${co + 1}`, coTeacher: true, signed: signs(co) });
    }
    const surveys: string[] = [];
    const sr = d.rnd();
    if (sr < 0.18) surveys.push(`svt_${t}${d.int(1, plan.surveys)}`);
    if (sr < 0.03 && plan.surveys > 1) {
      const other = `svt_${t}${d.int(1, plan.surveys)}`;
      if (other !== surveys[0]) surveys.push(other);
    }
    const history = courseHistory(d, startMs, endMs, asOf);
    const classroomRoll = d.rnd();
    const classroom =
      subject === "Éducation physique et sportive"
        ? classroomRoll < 0.8
          ? GYM
          : null
        : classroomRoll < 0.07
          ? null
          : `${"ABCDE"[d.int(0, 4)]}${d.int(0, 3)}${pad(d.int(1, 20))}`;
    schoolCourses.push({
      id: "",
      schoolId: sid,
      name: !evening && subject !== "Éducation physique et sportive" && d.rnd() < 0.1 ? subject + d.pick(SUFFIXES) : subject,
      startDateTime: localIso(day, start),
      endDateTime: localIso(day, start + hours * 60),
      classroom,
      creatorId: d.rnd() < 0.03 ? null : d.pick(creators),
      trainingId: evening ? null : `trn_${t}${training + 1}`,
      archived: history.archived,
      absencesSent: history.absencesSent,
      createdAt: history.createdAt,
      updatedAt: history.updatedAt,
      groupIds: courseGroups.map((g) => `grp_${t}${g + 1}`),
      studentIds: courseGroups.length === 1 ? members[courseGroups[0]!]! : courseGroups.flatMap((g) => members[g]!),
      professors,
      surveyTemplateIds: surveys,
    });
  }
  // Stable sort; the offsets of one day are equal, so comparing the local texts compares the instants.
  const startOf = (c: CourseInput) => c.startDateTime;
  schoolCourses.sort((a, b) => (startOf(a) < startOf(b) ? -1 : startOf(a) > startOf(b) ? 1 : 0));
  schoolCourses.forEach((c, k) => {
    c.id = `crs_${t}${k + 1}`;
    out.courses.push(c);
  });
}

/** The seed of `generateDataset` unless told: the demo data of `npm start`. */
const DEFAULT_SEED = 2026;

/**
 * The names of the two schools of the demo data (`generateDataset()`, what `npm start`
 * loads), by id: drawn from the seed before anything else, whatever the sizes. The docs quote
 * them; `npm run check:repo` keeps the quotes in step.
 */
export function demoSchoolNames(): Record<string, string> {
  return Object.fromEntries(planSchools(newDraw(DEFAULT_SEED), 2, 0, 0, 1, undefined).map((p) => [p.id, p.name]));
}

/**
 * Generates a dataset in the import file format.
 *
 * @returns the decoded JSON of an import file (valid for `validateImport`), with
 *   `schools[i].apiKeys[0]` the key of each school ({@link DEMO_API_KEY} for `sch_demo`).
 * @throws RangeError when a count is negative or not an integer, or `schools` < 1.
 */
export function generateDataset(opts: GenerateOptions = {}): ImportFileInput {
  const schoolsN = opts.schools ?? 2;
  const courses = opts.courses ?? 3000;
  const smallCourses = opts.smallCourses ?? 50;
  const perCourse = opts.studentsPerCourse ?? (courses > 10_000 ? 10 : 45);
  for (const [k, v] of Object.entries({ schools: schoolsN, courses, smallCourses, studentsPerCourse: perCourse, students: opts.students ?? 0 })) {
    if (!Number.isInteger(v) || v < 0) throw new RangeError(`${k} must be a non-negative integer`);
  }
  if (schoolsN < 1) throw new RangeError("schools must be at least 1");
  if (perCourse < 1) throw new RangeError("studentsPerCourse must be at least 1");
  const asOf = typeof opts.asOf === "number" ? opts.asOf : Date.parse(opts.asOf ?? DEFAULT_AS_OF);
  if (Number.isNaN(asOf)) throw new RangeError("asOf must be an instant");

  const d = newDraw(opts.seed ?? DEFAULT_SEED);
  const plans = planSchools(d, schoolsN, courses, smallCourses, perCourse, opts.students);
  const out: Dataset = { schools: [], trainings: [], groups: [], students: [], professors: [], surveyTemplates: [], courses: [] };
  const days = schoolDays(2026);
  for (const plan of plans) {
    out.schools.push({ id: plan.id, name: plan.name, apiKeys: [plan.apiKey] });
    const emails = new Set<string>();
    const email = (first: string, last: string, short: boolean) => {
      const local = short ? `${slug(first)[0]}.${slug(last)}` : `${slug(first)}.${slug(last)}`;
      let e = `${local}@example.org`;
      for (let k = 2; emails.has(e); k++) e = `${local}${k}@example.org`;
      emails.add(e);
      return e;
    };
    const school: School = { plan, out, d, email };
    const groups = addGroups(school);
    const members = addStudents(school, groups.groupTraining.length);
    const staff = addProfessors(school, groups.trainings);
    addCourses(school, days, asOf, groups, members, staff);
  }
  return out;
}
