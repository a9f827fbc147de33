/**
 * Dataset generator for the import file format (API.md § "Data import (operators)"), with
 * @faker-js/faker in the `fr` locale and a fixed seed: the same options give the same file.
 *
 * CLI: `tsx scripts/generate.ts [--schools N] [--courses N] [--students N]
 *        [--students-per-course N] [--small-courses N] [--seed S] [--as-of ISO] --out FILE.json`
 *
 * Default ("demo"): `sch_demo`, one school year of a French lycée (3,000 courses over 36
 * school weeks from Monday 2026-09-07, holidays skipped, 600 students in 20 groups, 40
 * professors, 6 trainings, 5 survey templates), plus `sch_other`, a small school (50 courses)
 * with its own key, to show tenant isolation. `--schools 10 --courses 100000` gives one big
 * school of 100,000 courses and 9 small ones, about 1,000,000 course↔student rows.
 */
import { createHash } from "node:crypto";
import { mkdir, writeFile } from "node:fs/promises";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { parseArgs } from "node:util";
import { base, Faker, fr } from "@faker-js/faker";
import type { z } from "zod";
import type { importFileSchema } from "../src/db/import";
import { fold } from "../src/lib/text";
import { userPath } from "./lib/wrangler";

/** The decoded JSON of an import file, as written by the generator. */
export type ImportFileInput = z.input<typeof importFileSchema>;
type CourseInput = NonNullable<ImportFileInput["courses"]>[number];
type PersonInput = NonNullable<ImportFileInput["students"]>[number];

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

// ---------------------------------------------------------------------------------------------
// Calendar: Europe/Paris, school year 2026–2027.

/** Monday of the first school week: the first Monday of September 2026. */
function firstMondayOfSeptember(year: number): number {
  const d = new Date(Date.UTC(year, 8, 1));
  return Date.UTC(year, 8, 1 + ((8 - d.getUTCDay()) % 7));
}

/** The last Sunday of a month (0-based), as a day of the month. */
function lastSunday(year: number, month: number): number {
  const last = new Date(Date.UTC(year, month + 1, 0));
  return last.getUTCDate() - last.getUTCDay();
}

/** Europe/Paris offset in hours (1 or 2) of a calendar day, for daytime hours (EU rule). */
function parisOffset(year: number, month: number, day: number): number {
  if (month > 2 && month < 9) return 2;
  if (month === 2) return day >= lastSunday(year, 2) ? 2 : 1;
  if (month === 9) return day < lastSunday(year, 9) ? 2 : 1;
  return 1;
}

/** A school day: its UTC midnight and Paris offset. */
interface SchoolDay {
  year: number;
  month: number; // 0-based
  day: number;
  offset: number;
}

/** Weeks (0 = the first) of the autumn, Christmas, winter and spring holidays, roughly zone C. */
const HOLIDAY_WEEKS = new Set([6, 7, 15, 16, 23, 24, 31, 32]);
/** Public holidays on weekdays in 2026–2027 (and the Ascension bridge), as `M-D`. */
const PUBLIC_HOLIDAYS = new Set(["10-11", "2-29", "4-6", "4-7", "4-17"]);

/** The weekdays of 36 school weeks from the first Monday of September `year`, holidays skipped. */
function schoolDays(year: number, weeks = 36): SchoolDay[] {
  const first = firstMondayOfSeptember(year);
  const days: SchoolDay[] = [];
  for (let week = 0, taught = 0; taught < weeks; week++) {
    if (HOLIDAY_WEEKS.has(week)) continue;
    taught++;
    for (let wd = 0; wd < 5; wd++) {
      const d = new Date(first + (week * 7 + wd) * 86_400_000);
      const [y, m, dd] = [d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate()];
      if (PUBLIC_HOLIDAYS.has(`${m}-${dd}`)) continue;
      days.push({ year: y, month: m, day: dd, offset: parisOffset(y, m, dd) });
    }
  }
  return days;
}

const pad = (n: number) => String(n).padStart(2, "0");

/** `2026-09-07T08:00:00+02:00` for a school day and a local time in minutes since midnight. */
function localIso(d: SchoolDay, minutes: number): string {
  return `${d.year}-${pad(d.month + 1)}-${pad(d.day)}T${pad(Math.floor(minutes / 60))}:${pad(minutes % 60)}:00+${pad(d.offset)}:00`;
}

/** ms since the epoch of a school day's local time in minutes. */
function localMs(d: SchoolDay, minutes: number): number {
  return Date.UTC(d.year, d.month, d.day, 0, minutes) - d.offset * 3_600_000;
}

// ---------------------------------------------------------------------------------------------
// School content.

/** Trainings of a lycée with a post-bac offer: name, group name prefix, subjects (repeated = more hours). */
const TRAININGS: { name: string; group: string; subjects: string[] }[] = [
  {
    name: "Seconde générale et technologique",
    group: "2nde",
    subjects: [
      "Français", "Français", "Mathématiques", "Mathématiques", "Histoire-Géographie", "Anglais", "Espagnol",
      "Physique-Chimie", "Sciences de la vie et de la Terre", "Sciences économiques et sociales",
      "Éducation physique et sportive", "Enseignement moral et civique", "Sciences numériques et technologie",
    ],
  },
  {
    name: "Première générale",
    group: "1ère",
    subjects: [
      "Français", "Français", "Mathématiques", "Histoire-Géographie", "Anglais", "Espagnol", "Physique-Chimie",
      "Sciences économiques et sociales", "Éducation physique et sportive", "Humanités, littérature et philosophie",
      "Numérique et sciences informatiques",
    ],
  },
  {
    name: "Terminale générale",
    group: "Tle",
    subjects: [
      "Philosophie", "Philosophie", "Mathématiques", "Histoire-Géographie", "Anglais", "Allemand", "Physique-Chimie",
      "Sciences économiques et sociales", "Éducation physique et sportive", "Grand oral",
    ],
  },
  {
    name: "BTS Services informatiques aux organisations",
    group: "SIO",
    subjects: [
      "Culture générale et expression", "Anglais", "Mathématiques pour l'informatique",
      "Culture économique, juridique et managériale", "Cybersécurité des services informatiques",
      "Développement d'applications", "Développement d'applications", "Algèbre linéaire",
    ],
  },
  {
    name: "BTS Management commercial opérationnel",
    group: "MCO",
    subjects: [
      "Culture générale et expression", "Anglais", "Économie", "Droit", "Management de l'équipe commerciale",
      "Développement de la relation client", "Gestion opérationnelle",
    ],
  },
  {
    name: "Classe préparatoire ECG",
    group: "ECG",
    subjects: [
      "Algèbre linéaire", "Analyse", "Probabilités", "Économie", "Œuvres littéraires et culture générale", "Philosophie",
      "Histoire, géographie et géopolitique du monde contemporain", "Anglais", "Espagnol",
    ],
  },
];
/** Groups per training for the demo's 20 groups (2nde ×5, 1ère ×4, Tle ×4, SIO ×3, MCO ×2, ECG ×2). */
const GROUP_SHARE = [5, 4, 4, 3, 2, 2];
/** Evening courses (18:00–20:00), outside any training. */
const EVENING = ["Atelier théâtre", "Club robotique", "Soutien en mathématiques", "Anglais des affaires (cours du soir)", "Chorale"];
const SUFFIXES = [" (TD)", " (TP)", " — devoir surveillé", " — révisions"];
const SURVEYS = ["Satisfaction", "Évaluation de fin de module", "Bien-être en classe", "Retour sur les travaux pratiques", "Auto-évaluation"];
const PATRONS = ["Marie-Curie", "Victor-Hugo", "Jean-Jaurès", "Louise-Michel", "Simone-Veil", "Condorcet", "Jules-Ferry", "Pasteur", "Émile-Zola", "Colette"];
const GYM = "Gymnase";

/** `de Lyon`, `d'Aubervilliers`, `du Tampon`, `des Abymes`. */
const of = (place: string) =>
  /^Les /.test(place) ? `des ${place.slice(4)}` : /^Le /.test(place) ? `du ${place.slice(3)}` : /^[aeiouyhâàéèêîôû]/i.test(place) ? `d'${place}` : `de ${place}`;

/** Deterministic key of small school number `n` (3…). */
function smallSchoolKey(n: number): string {
  return `sk_test_s${pad(n)}_${createHash("sha256").update(`school-${n}`).digest("base64url").slice(0, 24)}`;
}

/** Lowercase ASCII slug for e-mail local parts: `Éloïse D'Aubigné` → `eloise-d-aubigne`. */
function slug(text: string): string {
  return fold(text).replace(/[^a-z0-9]+/g, "-").replace(/^-+|-+$/g, "") || "x";
}

interface SchoolPlan {
  id: string;
  tag: string; // id infix: "" for sch_demo, "other_", "03_"…
  name: string;
  apiKey: string;
  courses: number;
  groups: number;
  students: number;
  professors: number;
  trainings: number; // first N of TRAININGS
  surveys: number;
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

  const faker = new Faker({ locale: [fr, base] });
  faker.seed(opts.seed ?? 2026);
  const rnd = () => faker.number.float();
  const int = (min: number, max: number) => min + Math.floor(rnd() * (max - min + 1));
  const pick = <T>(list: readonly T[]): T => list[Math.min(list.length - 1, Math.floor(rnd() * list.length))]!;

  const groupSize = Math.max(1, Math.round(perCourse / 1.5));
  const bigGroups = opts.students !== undefined ? Math.max(1, Math.round(opts.students / groupSize)) : Math.max(20, Math.round(courses / 150));
  const plans: SchoolPlan[] = [];
  for (let i = 0; i < schoolsN; i++) {
    if (i === 0) {
      plans.push({
        id: "sch_demo", tag: "", name: `Lycée ${pick(PATRONS)}`, apiKey: DEMO_API_KEY, courses,
        groups: bigGroups, students: opts.students ?? bigGroups * groupSize,
        professors: Math.max(40, Math.round(courses / 75)), trainings: 6, surveys: 5,
      });
    } else {
      const n = i + 1;
      plans.push({
        id: i === 1 ? "sch_other" : `sch_${pad(n)}`, tag: i === 1 ? "other_" : `${pad(n)}_`,
        name: `${pick(["Institut", "Lycée professionnel", "École"])} ${pick(PATRONS)} ${of(faker.location.city())}`,
        apiKey: i === 1 ? OTHER_API_KEY : smallSchoolKey(n), courses: smallCourses,
        groups: 2, students: 48, professors: 5, trainings: 2, surveys: 2,
      });
    }
  }

  const out = {
    schools: [] as NonNullable<ImportFileInput["schools"]>,
    trainings: [] as NonNullable<ImportFileInput["trainings"]>,
    groups: [] as NonNullable<ImportFileInput["groups"]>,
    students: [] as PersonInput[],
    professors: [] as PersonInput[],
    surveyTemplates: [] as NonNullable<ImportFileInput["surveyTemplates"]>,
    courses: [] as CourseInput[],
  };
  const days = schoolDays(2026);
  const planningFrom = Date.parse("2026-08-17T07:00:00Z");

  for (const plan of plans) {
    const sid = plan.id;
    const t = plan.tag;
    out.schools.push({ id: sid, name: plan.name, apiKeys: [plan.apiKey] });

    // Trainings and groups: groups spread over trainings like the demo's 20.
    const trainings = TRAININGS.slice(0, plan.trainings);
    trainings.forEach((tr, k) => out.trainings.push({ id: `trn_${t}${k + 1}`, schoolId: sid, name: tr.name }));
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

    // Students, in contiguous id ranges per group (grp_1: stu_1…stu_30).
    const members: string[][] = groupTraining.map(() => []);
    const emails = new Set<string>();
    const email = (first: string, last: string, short: boolean) => {
      const local = short ? `${slug(first)[0]}.${slug(last)}` : `${slug(first)}.${slug(last)}`;
      let e = `${local}@example.org`;
      for (let k = 2; emails.has(e); k++) e = `${local}${k}@example.org`;
      emails.add(e);
      return e;
    };
    for (let s = 0; s < plan.students; s++) {
      const id = `stu_${t}${s + 1}`;
      const firstName = faker.person.firstName();
      const lastName = faker.person.lastName();
      out.students.push({ id, schoolId: sid, firstName, lastName, email: email(firstName, lastName, false) });
      members[Math.floor((s * groupTraining.length) / plan.students)]!.push(id);
    }

    // Professors: one per subject first, then more for the subjects with more hours.
    const subjectWeight = new Map<string, number>();
    for (const tr of trainings) for (const s of tr.subjects) subjectWeight.set(s, (subjectWeight.get(s) ?? 0) + 1);
    const subjects = [...subjectWeight.keys()];
    const weighted = [...subjectWeight].flatMap(([s, w]) => Array<string>(w).fill(s));
    const profsOf = new Map<string, number[]>(subjects.map((s) => [s, []]));
    const forgetful: boolean[] = [];
    for (let p = 0; p < plan.professors; p++) {
      const firstName = faker.person.firstName();
      const lastName = faker.person.lastName();
      out.professors.push({ id: `prf_${t}${p + 1}`, schoolId: sid, firstName, lastName, email: email(firstName, lastName, true) });
      profsOf.get(p < subjects.length ? subjects[p]! : pick(weighted))!.push(p);
      if (rnd() < 0.3) profsOf.get(pick(subjects))!.push(p); // a second subject
      forgetful.push(p % 7 === 3); // prf_4, prf_11, prf_18…: often forget to sign
    }
    for (const s of subjects) if (profsOf.get(s)!.length === 0) profsOf.get(s)!.push(int(0, plan.professors - 1));
    const allProfs = Array.from({ length: plan.professors }, (_, p) => p);

    for (let k = 0; k < plan.surveys; k++) out.surveyTemplates.push({ id: `svt_${t}${k + 1}`, schoolId: sid, name: SURVEYS[k % SURVEYS.length]! });
    const creators = Array.from({ length: Math.min(15, 3 + plan.professors) }, (_, k) => `usr_${t}${k + 1}`);

    // Courses, spread evenly over the school days; no group or professor in two places at once
    // when a free slot is found in a few tries.
    const schoolCourses: CourseInput[] = [];
    let dayIndex = -1;
    let groupBusy = new Map<number, number>();
    let profBusy = new Map<number, number>();
    for (let c = 0; c < plan.courses; c++) {
      const di = Math.floor((c * days.length) / plan.courses);
      if (di !== dayIndex) {
        dayIndex = di;
        groupBusy = new Map();
        profBusy = new Map();
      }
      const day = days[di]!;
      const evening = rnd() < 0.02;
      const g1 = int(0, groupTraining.length - 1);
      const training = groupTraining[g1]!;
      const siblings = groupsOfTraining[training]!;
      const groups = [g1];
      if (!evening && siblings.length > 1 && rnd() < 0.5) {
        let g2 = pick(siblings);
        while (g2 === g1) g2 = pick(siblings);
        groups.push(g2);
      }
      const subject = evening ? pick(EVENING) : pick(trainings[training]!.subjects);
      const candidates = evening ? allProfs : profsOf.get(subject)!;
      let start = 18 * 60;
      let hours = 2;
      let prof = pick(candidates);
      if (!evening) {
        for (let attempt = 0; attempt < 8; attempt++) {
          hours = rnd() < 0.55 ? 1 : 2;
          const h = int(8, 18 - hours);
          const mask = ((1 << hours) - 1) << (h - 8);
          const p = attempt < 4 ? pick(candidates) : pick(allProfs);
          const free = groups.every((g) => ((groupBusy.get(g) ?? 0) & mask) === 0) && ((profBusy.get(p) ?? 0) & mask) === 0;
          start = h * 60;
          prof = p;
          if (free) break;
        }
        const mask = ((1 << hours) - 1) << (start / 60 - 8);
        for (const g of groups) groupBusy.set(g, (groupBusy.get(g) ?? 0) | mask);
        profBusy.set(prof, (profBusy.get(prof) ?? 0) | mask);
      }
      const end = start + hours * 60;
      const startMs = localMs(day, start);
      const endMs = localMs(day, end);
      const past = endMs <= asOf;

      const professors = [{ professorId: `prf_${t}${prof + 1}`, coTeacher: false, signed: past && rnd() >= (forgetful[prof] ? 0.4 : 0.02) }];
      if (rnd() < 0.08 && plan.professors > 1) {
        let co = pick(profsOf.get(subject) ?? allProfs);
        if (co === prof) co = (prof + 1 + int(0, plan.professors - 2)) % plan.professors;
        professors.push({ professorId: `prf_${t}${co + 1}`, coTeacher: true, signed: past && rnd() >= (forgetful[co] ? 0.4 : 0.02) });
      }
      const surveys: string[] = [];
      const sr = rnd();
      if (sr < 0.18) surveys.push(`svt_${t}${int(1, plan.surveys)}`);
      if (sr < 0.03 && plan.surveys > 1) {
        const other = `svt_${t}${int(1, plan.surveys)}`;
        if (other !== surveys[0]) surveys.push(other);
      }

      // Stamps: most courses planned in late August, others a few days ahead; none after asOf.
      let created = rnd() < 0.85 ? planningFrom + int(0, 14 * 24 * 60) * 60_000 : startMs - int(1, 20) * 86_400_000 - int(0, 600) * 60_000;
      created = Math.min(Math.max(created, planningFrom), asOf - int(1, 600) * 60_000);
      const archived = past ? rnd() < 0.7 : rnd() < 0.01;
      const absencesSent = past && rnd() < 0.9;
      // Absences are mostly sent right after the course, archiving within a few days.
      const afterEnd = rnd() < 0.8 ? int(5, 240) : int(240, 3 * 24 * 60);
      let updated = past && (archived || absencesSent) ? endMs + afterEnd * 60_000 : created + int(0, 10 * 24 * 60) * 60_000;
      updated = Math.max(created, Math.min(updated, asOf));
      const classroomRoll = rnd();
      const classroom = subject === "Éducation physique et sportive"
        ? classroomRoll < 0.8 ? GYM : null
        : classroomRoll < 0.07 ? null : `${"ABCDE"[int(0, 4)]}${int(0, 3)}${pad(int(1, 20))}`;
      const studentIds = groups.length === 1 ? members[groups[0]!]! : groups.flatMap((g) => members[g]!);
      schoolCourses.push({
        id: "",
        schoolId: sid,
        name: !evening && subject !== "Éducation physique et sportive" && rnd() < 0.1 ? subject + pick(SUFFIXES) : subject,
        startDateTime: localIso(day, start),
        endDateTime: localIso(day, end),
        classroom,
        creatorId: rnd() < 0.03 ? null : pick(creators),
        trainingId: evening ? null : `trn_${t}${training + 1}`,
        archived,
        absencesSent,
        createdAt: new Date(created).toISOString(),
        updatedAt: new Date(updated).toISOString(),
        groupIds: groups.map((g) => `grp_${t}${g + 1}`),
        studentIds,
        professors,
        surveyTemplateIds: surveys,
      });
    }
    // Ids in chronological order: crs_1 is the first course of the year. (Stable sort; the
    // offsets of one day are equal, so comparing the local texts compares the instants.)
    const startOf = (c: CourseInput) => c.startDateTime;
    schoolCourses.sort((a, b) => (startOf(a) < startOf(b) ? -1 : startOf(a) > startOf(b) ? 1 : 0));
    schoolCourses.forEach((c, k) => {
      c.id = `crs_${t}${k + 1}`;
      out.courses.push(c);
    });
  }
  return out;
}

/** Counts of a dataset: courses, course↔student rows, and the total rows an import writes. */
export function datasetStats(data: ImportFileInput): { courses: number; enrolments: number; rows: number } {
  const courses = data.courses ?? [];
  let enrolments = 0;
  let rel = 0;
  for (const c of courses) {
    enrolments += c.studentIds?.length ?? 0;
    rel += (c.groupIds?.length ?? 0) + (c.professors?.length ?? 0) + (c.surveyTemplateIds?.length ?? 0);
  }
  const keys = (data.schools ?? []).reduce((n, s) => n + (s.apiKeys?.length ?? 0), 0);
  const base = ["schools", "trainings", "groups", "students", "professors", "surveyTemplates", "courses"] as const;
  const rows = base.reduce((n, k) => n + (data[k]?.length ?? 0), 0) + keys + enrolments + rel;
  return { courses: courses.length, enrolments, rows };
}

/**
 * Writes a dataset as JSON, one record per line (readable, diffable, fast for large files).
 * Creates the parent directory.
 *
 * @returns the number of bytes written.
 */
export async function writeDataset(data: ImportFileInput, file: string): Promise<number> {
  const parts: string[] = ["{"];
  const keys = Object.keys(data) as (keyof ImportFileInput)[];
  keys.forEach((k, i) => {
    const rows = (data[k] ?? []) as unknown[];
    parts.push(`${JSON.stringify(k)}: [`);
    rows.forEach((r, j) => parts.push(JSON.stringify(r) + (j < rows.length - 1 ? "," : "")));
    parts.push(`]${i < keys.length - 1 ? "," : ""}`);
  });
  parts.push("}\n");
  const text = parts.join("\n");
  await mkdir(path.dirname(path.resolve(file)), { recursive: true });
  await writeFile(file, text);
  return Buffer.byteLength(text);
}

const USAGE = `usage: tsx scripts/generate.ts [--schools N] [--courses N] [--students N] [--students-per-course N]
                              [--small-courses N] [--seed S] [--as-of ISO] --out FILE.json

  defaults (the demo): --schools 2 --courses 3000 --students 600 --students-per-course 45 --small-courses 50
                       --seed 2026 --as-of ${DEFAULT_AS_OF}
  benchmark:           --schools 10 --courses 100000 --students-per-course 10   (about 1,000,000 enrolments)`;

/** CLI entry point. Returns the exit status. */
export async function main(argv: string[]): Promise<number> {
  let values;
  try {
    ({ values } = parseArgs({
      args: argv,
      options: {
        schools: { type: "string" },
        courses: { type: "string" },
        students: { type: "string" },
        "students-per-course": { type: "string" },
        "small-courses": { type: "string" },
        seed: { type: "string" },
        "as-of": { type: "string" },
        out: { type: "string", short: "o" },
        help: { type: "boolean", short: "h" },
      },
    }));
  } catch (err) {
    console.error(`${(err as Error).message}\n${USAGE}`);
    return 2;
  }
  if (values.help) {
    console.log(USAGE);
    return 0;
  }
  if (!values.out) {
    console.error(`--out is required\n${USAGE}`);
    return 2;
  }
  const num = (s: string | undefined) => (s === undefined ? undefined : Number(s));
  const t0 = performance.now();
  let data: ImportFileInput;
  try {
    data = generateDataset({
      schools: num(values.schools),
      courses: num(values.courses),
      students: num(values.students),
      studentsPerCourse: num(values["students-per-course"]),
      smallCourses: num(values["small-courses"]),
      seed: num(values.seed),
      asOf: values["as-of"],
    });
  } catch (err) {
    console.error(`${(err as Error).message}\n${USAGE}`);
    return 2;
  }
  const out = userPath(values.out);
  const bytes = await writeDataset(data, out);
  const s = datasetStats(data);
  const fmt = (n: number) => n.toLocaleString("en-US");
  console.error(
    `wrote ${out}: ${data.schools!.length} schools, ${fmt(s.courses)} courses, ${fmt(s.enrolments)} course↔student rows, ` +
      `${fmt(s.rows)} rows in all, ${(bytes / 2 ** 20).toFixed(1)} MB in ${((performance.now() - t0) / 1000).toFixed(1)} s`,
  );
  for (const school of data.schools!) console.error(`  ${school.id}  ${school.apiKeys![0]}  ${school.name}`);
  return 0;
}

if (process.argv[1] && import.meta.url === pathToFileURL(path.resolve(process.argv[1])).href) {
  process.exitCode = await main(process.argv.slice(2));
}
