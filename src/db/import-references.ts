/**
 * The import's check of its courses' references (docs/operations.md § "Data import
 * (operators)"): every group, student, professor, training and survey template a course
 * names must exist in its school, in the file or already in the database, as an API write
 * requires (400 GROUPS_NOT_FOUND …, src/courses/storage.ts `checkReferences`). The ids the
 * file does not define are looked up on the school's shard before anything is written; any
 * found nowhere refuses the whole file, each named with its course and JSON path.
 *
 * Runs in Node and in workerd (no Node or Workers APIs).
 */
import type { ImportFile, ImportProblem } from "./import";
import type { ImportStep } from "./import-sql";

/** The tables a course refers to, with the word its problems use. */
const TABLES = {
  groups: "group",
  students: "student",
  professors: "professor",
  trainings: "training",
  survey_templates: "survey template",
} as const;

type RefTable = keyof typeof TABLES;

/** A course's reference to an id its file does not define: it must be in the database. */
export interface OpenReference {
  schoolId: string;
  table: RefTable;
  id: string;
  courseId: string;
  /** The reference's JSON path in the file (`courses[3].groupIds[1]`). */
  path: string;
}

/** Ids per lookup: one JSON parameter, and a literal statement far below D1's 100 KB (64-character ids: 34 KB). */
const IDS_PER_QUERY = 500;

/** The file's references that it does not define itself, in file order. */
export function openReferences(file: ImportFile): OpenReference[] {
  const defined = new Set<string>();
  const define = (table: RefTable, rows: readonly { schoolId: string; id: string }[]) => {
    for (const r of rows) defined.add(JSON.stringify([table, r.schoolId, r.id]));
  };
  define("groups", file.groups);
  define("students", file.students);
  define("professors", file.professors);
  define("trainings", file.trainings);
  define("survey_templates", file.surveyTemplates);
  const open: OpenReference[] = [];
  file.courses.forEach((c, i) => {
    const refer = (table: RefTable, id: string, path: string): void => {
      if (!defined.has(JSON.stringify([table, c.schoolId, id]))) open.push({ schoolId: c.schoolId, table, id, courseId: c.id, path: `courses[${i}].${path}` });
    };
    if (c.trainingId != null) refer("trainings", c.trainingId, "trainingId");
    for (const [j, id] of c.groupIds.entries()) refer("groups", id, `groupIds[${j}]`);
    for (const [j, id] of c.studentIds.entries()) refer("students", id, `studentIds[${j}]`);
    for (const [j, p] of c.professors.entries()) refer("professors", p.professorId, `professors[${j}].professorId`);
    for (const [j, id] of c.surveyTemplateIds.entries()) refer("survey_templates", id, `surveyTemplateIds[${j}]`);
  });
  return open;
}

/**
 * The statements that read which of `refs` (all of one shard) the database holds: rows
 * `{ tbl, school_id, id }`, each statement one school's ids of one table (at most
 * `IDS_PER_QUERY`, one JSON parameter), found through the table's primary key.
 */
export function storedReferences(refs: readonly OpenReference[]): ImportStep[] {
  const groups = new Map<string, { table: RefTable; schoolId: string; ids: Set<string> }>();
  for (const r of refs) {
    const key = JSON.stringify([r.table, r.schoolId]);
    const g = groups.get(key) ?? { table: r.table, schoolId: r.schoolId, ids: new Set<string>() };
    g.ids.add(r.id);
    groups.set(key, g);
  }
  const steps: ImportStep[] = [];
  for (const { table, schoolId, ids } of groups.values()) {
    const all = [...ids];
    for (let i = 0; i < all.length; i += IDS_PER_QUERY) {
      const list = JSON.stringify(all.slice(i, i + IDS_PER_QUERY));
      steps.push({
        kind: "command",
        sql: (v) =>
          `SELECT ${v(table)} AS tbl, school_id, id FROM ${table} WHERE school_id = ${v(schoolId)} AND id IN (SELECT value FROM json_each(${v(list)}))`,
      });
    }
  }
  return steps;
}

/**
 * The references found neither in the file nor in the database (`stored`: the rows
 * `storedReferences` read), one problem each, naming the course and the id.
 */
export function referenceProblems(refs: readonly OpenReference[], stored: readonly { tbl: string; school_id: string; id: string }[]): ImportProblem[] {
  const found = new Set(stored.map((r) => JSON.stringify([r.tbl, r.school_id, r.id])));
  return refs
    .filter((r) => !found.has(JSON.stringify([r.table, r.schoolId, r.id])))
    .map((r) => ({
      path: r.path,
      message: `course "${r.courseId}" names ${TABLES[r.table]} "${r.id}", which is neither in the file nor in the database for school "${r.schoolId}"`,
    }));
}
