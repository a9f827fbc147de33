/**
 * One school's data as an import file (docs/operations.md § "Taking one school's data out"):
 * every training, group, survey template, student, professor and course with its relation
 * lists, `version`, `createdAt` and `updatedAt`, and the school with its API keys' hashes and
 * its last change number, so that `npm run import` of the text into an empty deployment lists
 * the same records. Read in keyset pages (bounded rows and bytes per statement, strings only
 * as parameters: the D1 HTTP API's driver binds nothing else); each page of courses and their
 * relation rows is one D1 batch, so every course comes out as one committed state.
 * Runs in Node and in workerd.
 */
import { storedScopes } from "../lib/scopes";
import { formatInstant } from "../lib/time";
import type { MoveDatabases } from "./move";

/** Rows of a table other than courses per statement. */
const PAGE_ROWS = 1_000;
/** Most courses per page (one batch); fewer when their relation rows pass `RELATION_ROWS`. */
const MAX_COURSE_PAGE = 500;
/**
 * Most rows of one relation table per statement (two ids of at most 64 characters and two
 * flags: under 2 MB of result).
 */
const RELATION_ROWS = 10_000;
/** Reads of a course whose relation lists take more than one statement, before giving up on a course that keeps changing. */
const SINGLE_COURSE_TRIES = 5;

/** Why a school cannot be exported (nothing was written): unknown, or being moved. */
export class ExportRefused extends Error {
  constructor(message: string) {
    super(message);
    this.name = "ExportRefused";
  }
}

/** What an export wrote, for its summary line. */
export interface ExportCounts {
  courses: number;
  keys: number;
  /** D1 statements sent (a batch counts its statements). */
  statements: number;
}

/** A `courses` row as read: instants in ms since the epoch, flags 0/1. */
type CourseRow = Record<"id" | "name", string> &
  Record<"classroom" | "creator_id" | "training_id", string | null> &
  Record<"start_ms" | "end_ms" | "archived" | "absences_sent" | "created_at" | "updated_at" | "version", number>;

interface RelationRow {
  c: string;
  v: string;
  co_teacher?: number;
  signed?: number;
}

/** The relation tables of a course, with the import file's field each becomes. */
const RELATIONS = [
  { table: "course_groups", column: "group_id", extra: "" },
  { table: "course_students", column: "student_id", extra: "" },
  { table: "course_professors", column: "professor_id", extra: ", co_teacher, signed" },
  { table: "course_survey_templates", column: "survey_template_id", extra: "" },
] as const;

const COURSE_COLUMNS = "id, name, start_ms, end_ms, classroom, creator_id, training_id, archived, absences_sent, created_at, updated_at, version";

/** The page's courses: the school's next `n` after `after`, by id (the primary key's order). */
const coursePage = (n: number) => `SELECT ${COURSE_COLUMNS} FROM courses WHERE school_id = ? AND id > ? ORDER BY id LIMIT ${n}`;

/** A relation table's rows of the same page (up to `RELATION_ROWS` + 1: one more tells the page is too large), by its primary key. */
const relationPage = (r: (typeof RELATIONS)[number], n: number) =>
  `SELECT course_id AS c, ${r.column} AS v${r.extra} FROM ${r.table} WHERE school_id = ? AND course_id > ?
     AND course_id <= (SELECT max(id) FROM (SELECT id FROM courses WHERE school_id = ? AND id > ? ORDER BY id LIMIT ${n}))
   ORDER BY course_id, ${r.column} LIMIT ${RELATION_ROWS + 1}`;

/** One course's rows of a relation table after `v`, for a course whose rows take several statements. */
const relationOfCourse = (r: (typeof RELATIONS)[number]) =>
  `SELECT course_id AS c, ${r.column} AS v${r.extra} FROM ${r.table} WHERE school_id = ? AND course_id = ? AND ${r.column} > ? ORDER BY ${r.column} LIMIT ${RELATION_ROWS}`;

const json = (v: unknown) => JSON.stringify(v);

/**
 * The import file of `schoolId` as text, in pieces (one record a line, like
 * `npm run generate`). The school itself closes the file: its change number is read after
 * the courses, so that it is at least every exported course's.
 *
 * @param counts filled as the export goes (courses, keys, statements).
 * @throws ExportRefused when the directory does not know the school, or it is being moved
 *   (thrown before the first piece).
 * @throws Error when a query fails, or a course with more than 10,000 rows in one relation
 *   table changes during each of 5 reads.
 */
export async function* exportSchool(
  dbs: MoveDatabases,
  schoolId: string,
  counts: ExportCounts = { courses: 0, keys: 0, statements: 0 },
): AsyncGenerator<string> {
  const all = async <T>(d1: D1Database, sql: string, ...params: string[]): Promise<T[]> => {
    counts.statements++;
    return (
      await d1
        .prepare(sql)
        .bind(...params)
        .all<T>()
    ).results;
  };
  const [school] = await all<{ name: string; shard: string; state: string }>(dbs.directory, "SELECT name, shard, state FROM schools WHERE id = ?", schoolId);
  if (!school) throw new ExportRefused(`no school "${schoolId}" in the directory`);
  const shard = dbs.shards[school.shard];
  if (!shard) throw new ExportRefused(`school "${schoolId}" is on "${school.shard}", which is not a shard of wrangler.toml`);
  if (school.state !== "active")
    throw new ExportRefused(`school "${schoolId}" is being moved to another shard: finish the move first (npm run shards -- move ${schoolId} …)`);

  yield "{\n";
  // Tables keyed (school_id, id): pages by id.
  const kinds = [
    { key: "trainings", table: "trainings", columns: "id, name" },
    { key: "groups", table: "groups", columns: "id, name" },
    { key: "surveyTemplates", table: "survey_templates", columns: "id, name" },
    { key: "students", table: "students", columns: "id, first_name, last_name, email" },
    { key: "professors", table: "professors", columns: "id, first_name, last_name, email" },
  ];
  for (const k of kinds) {
    yield `${json(k.key)}: [`;
    let after = "";
    let first = true;
    for (;;) {
      const rows = await all<Record<string, string>>(
        shard,
        `SELECT ${k.columns} FROM ${k.table} WHERE school_id = ? AND id > ? ORDER BY id LIMIT ${PAGE_ROWS}`,
        schoolId,
        after,
      );
      for (const r of rows) {
        const item =
          r.email === undefined ? { id: r.id, schoolId, name: r.name } : { id: r.id, schoolId, firstName: r.first_name, lastName: r.last_name, email: r.email };
        yield `${first ? "\n" : ",\n"}${json(item)}`;
        first = false;
      }
      if (rows.length < PAGE_ROWS) break;
      after = rows[rows.length - 1]!.id!;
    }
    yield "\n],\n";
  }

  yield '"courses": [';
  let first = true;
  for await (const c of courses(shard, schoolId, counts)) {
    yield `${first ? "\n" : ",\n"}${json(c)}`;
    first = false;
    counts.courses++;
  }
  yield "\n],\n";

  // The school last: its change number is then at least that of every course above.
  const [changes] = await all<{ seq: number }>(shard, "SELECT seq FROM school_changes WHERE school_id = ?", schoolId);
  yield `"schools": [\n{"id":${json(schoolId)},"name":${json(school.name)},"changeSeq":${changes?.seq ?? 0},"apiKeys":[],"apiKeyHashes":[`;
  // Keys by rowid, through api_keys_school_idx (school_id, then rowid): no sort.
  let after = "0";
  for (;;) {
    const rows = await all<{
      r: number;
      key_hash: string;
      id: string;
      label: string | null;
      last4: string | null;
      scopes: string;
      created_at: number;
      revoked_at: number | null;
      expires_at: number | null;
    }>(
      dbs.directory,
      `SELECT rowid AS r, key_hash, id, label, last4, scopes, created_at, revoked_at, expires_at FROM api_keys WHERE school_id = ? AND rowid > CAST(? AS INTEGER) ORDER BY rowid LIMIT ${PAGE_ROWS}`,
      schoolId,
      after,
    );
    for (const k of rows) {
      const item = {
        id: k.id,
        hash: k.key_hash,
        label: k.label,
        last4: k.last4,
        scopes: storedScopes(k.scopes),
        createdAt: formatInstant(k.created_at),
        revokedAt: k.revoked_at === null ? null : formatInstant(k.revoked_at),
        expiresAt: k.expires_at === null ? null : formatInstant(k.expires_at),
      };
      yield `${counts.keys === 0 ? "\n" : ",\n"}${json(item)}`;
      counts.keys++;
    }
    if (rows.length < PAGE_ROWS) break;
    after = String(rows[rows.length - 1]!.r);
  }
  yield "\n]}\n]\n}\n";
}

/** An exported course: the import file's course (src/db/import.ts), every field stated. */
interface ExportedCourse {
  id: string;
  schoolId: string;
  name: string;
  startDateTime: string;
  endDateTime: string;
  classroom: string | null;
  creatorId: string | null;
  trainingId: string | null;
  archived: boolean;
  absencesSent: boolean;
  createdAt: string;
  updatedAt: string;
  version: number;
  groupIds: string[];
  studentIds: string[];
  professors: { professorId: string; coTeacher: boolean; signed: boolean }[];
  surveyTemplateIds: string[];
}

function exported(schoolId: string, c: CourseRow, rel: RelationRow[][]): ExportedCourse {
  const [groups, students, professors, surveys] = rel as [RelationRow[], RelationRow[], RelationRow[], RelationRow[]];
  return {
    id: c.id,
    schoolId,
    name: c.name,
    startDateTime: formatInstant(c.start_ms),
    endDateTime: formatInstant(c.end_ms),
    classroom: c.classroom,
    creatorId: c.creator_id,
    trainingId: c.training_id,
    archived: c.archived === 1,
    absencesSent: c.absences_sent === 1,
    createdAt: formatInstant(c.created_at),
    updatedAt: formatInstant(c.updated_at),
    version: c.version,
    groupIds: groups.map((r) => r.v),
    studentIds: students.map((r) => r.v),
    professors: professors.map((r) => ({ professorId: r.v, coTeacher: r.co_teacher === 1, signed: r.signed === 1 })),
    surveyTemplateIds: surveys.map((r) => r.v),
  };
}

/**
 * The school's courses by id, each with its relation lists. A page is one batch (one
 * transaction): the courses and, for each relation table, their rows. A page whose rows of a
 * table pass `RELATION_ROWS` is read again with half as many courses; a single course that
 * still passes it is read in several statements, then its version read again: a course
 * changed meanwhile is read anew (every change raises its version).
 */
async function* courses(shard: D1Database, schoolId: string, counts: ExportCounts): AsyncGenerator<ExportedCourse> {
  let after = "";
  let size = MAX_COURSE_PAGE;
  for (;;) {
    const stmts = [
      shard.prepare(coursePage(size)).bind(schoolId, after),
      ...RELATIONS.map((r) => shard.prepare(relationPage(r, size)).bind(schoolId, after, schoolId, after)),
    ];
    counts.statements += stmts.length;
    const [page, ...rel] = (await shard.batch(stmts)).map((r) => r.results) as [CourseRow[], ...RelationRow[][]];
    const most = Math.max(...rel.map((r) => r.length));
    if (most > RELATION_ROWS && size > 1) {
      size = Math.ceil(size / 2);
      continue;
    }
    if (most > RELATION_ROWS) {
      yield await largeCourse(shard, schoolId, page[0]!, counts);
    } else {
      const byCourse = rel.map((rows) => {
        const m = new Map<string, RelationRow[]>();
        for (const r of rows) {
          const list = m.get(r.c);
          if (list) list.push(r);
          else m.set(r.c, [r]);
        }
        return m;
      });
      for (const c of page)
        yield exported(
          schoolId,
          c,
          byCourse.map((m) => m.get(c.id) ?? []),
        );
    }
    if (page.length < size) return;
    after = page[page.length - 1]!.id;
    // Grow back once the pages' relation rows leave room.
    if (most < RELATION_ROWS / 4) size = Math.min(MAX_COURSE_PAGE, size * 2);
  }
}

/** A course with more than `RELATION_ROWS` rows in a relation table, read in several statements. @throws Error when it changes during each of `SINGLE_COURSE_TRIES` reads. */
async function largeCourse(shard: D1Database, schoolId: string, course: CourseRow, counts: ExportCounts): Promise<ExportedCourse> {
  let c = course;
  for (let tries = 0; tries < SINGLE_COURSE_TRIES; tries++) {
    const rel: RelationRow[][] = [];
    for (const r of RELATIONS) {
      const rows: RelationRow[] = [];
      for (;;) {
        counts.statements++;
        const { results } = await shard
          .prepare(relationOfCourse(r))
          .bind(schoolId, c.id, rows.length === 0 ? "" : rows[rows.length - 1]!.v)
          .all<RelationRow>();
        rows.push(...results);
        if (results.length < RELATION_ROWS) break;
      }
      rel.push(rows);
    }
    counts.statements++;
    const now = await shard.prepare(`SELECT ${COURSE_COLUMNS} FROM courses WHERE school_id = ? AND id = ?`).bind(schoolId, c.id).first<CourseRow>();
    if (now === null) throw new Error(`course "${c.id}" was deleted during the export: run it again`);
    if (now.version === c.version) return exported(schoolId, c, rel);
    c = now;
  }
  throw new Error(`course "${c.id}" changed during each of ${SINGLE_COURSE_TRIES} reads: run the export when the school's writes are quiet`);
}
