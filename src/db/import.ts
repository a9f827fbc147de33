/**
 * The data import model (API.md § "Data import (operators)"): the file schema and its
 * translation into idempotent upsert statements. Used by `npm run import` (scripts/) and by
 * the tests to load fixtures, so both load data the same way.
 *
 * Runs in Node and in workerd (no Node or Workers APIs besides Web Crypto).
 */
import { z } from "zod";
import { sha256Hex } from "../lib/crypto";
import { ID_RE } from "../lib/ids";
import { fold, jsonPath } from "../lib/text";
import { parseInstant } from "../lib/time";

const id = z.string().regex(ID_RE, "must be an id of 1–64 characters [A-Za-z0-9_-]");
const nonEmpty = z.string().min(1, "must not be empty").max(200, "must be at most 200 characters");
const instant = z.string().refine((s) => parseInstant(s) !== undefined, "must be an ISO 8601 instant with a zone");

const schoolSchema = z.strictObject({
  id,
  name: nonEmpty,
  apiKeys: z.array(z.string().regex(/^sk_[A-Za-z0-9_-]{1,200}$/, "must start with sk_ and use [A-Za-z0-9_-]")).default([]),
});
const namedSchema = z.strictObject({ id, schoolId: id, name: nonEmpty });
const personSchema = z.strictObject({
  id,
  schoolId: id,
  firstName: nonEmpty,
  lastName: nonEmpty,
  email: z.email("must be an email address"),
});
const courseSchema = z
  .strictObject({
    id,
    schoolId: id,
    name: nonEmpty,
    startDateTime: instant,
    endDateTime: instant,
    classroom: nonEmpty.nullable().optional(),
    creatorId: id.nullable().optional(),
    trainingId: id.nullable().optional(),
    archived: z.boolean().default(false),
    absencesSent: z.boolean().default(false),
    createdAt: instant.optional(),
    updatedAt: instant.optional(),
    groupIds: z.array(id).default([]),
    studentIds: z.array(id).default([]),
    professors: z
      .array(z.strictObject({ professorId: id, coTeacher: z.boolean().default(false), signed: z.boolean().default(false) }))
      .default([])
      .superRefine((list, ctx) => {
        const seen = new Set<string>();
        list.forEach((p, i) => {
          if (seen.has(p.professorId)) ctx.addIssue({ code: "custom", path: [i, "professorId"], message: `professor "${p.professorId}" is listed twice` });
          seen.add(p.professorId);
        });
      }),
    surveyTemplateIds: z.array(id).default([]),
  });

/** The import file: every array optional. */
export const importFileSchema = z.strictObject({
  schools: z.array(schoolSchema).default([]),
  trainings: z.array(namedSchema).default([]),
  groups: z.array(namedSchema).default([]),
  students: z.array(personSchema).default([]),
  professors: z.array(personSchema).default([]),
  surveyTemplates: z.array(namedSchema).default([]),
  courses: z.array(courseSchema).default([]),
});

/** A validated import file. */
export type ImportFile = z.output<typeof importFileSchema>;
/** An import course (validated). */
export type ImportCourse = ImportFile["courses"][number];

/** One problem of an import file: its JSON path (`courses[3].endDateTime`) and message. */
export interface ImportProblem {
  path: string;
  message: string;
}

/**
 * Validates a decoded import file, reporting every problem with its JSON path, all at once:
 * the schema (unknown fields included), end after start, duplicate ids within a kind, an API
 * key listed twice. References to other ids are not checked: they may already be in the
 * database.
 */
export function validateImport(
  data: unknown,
): { ok: true; file: ImportFile } | { ok: false; problems: ImportProblem[] } {
  const parsed = importFileSchema.safeParse(data);
  const problems: ImportProblem[] = parsed.success
    ? []
    : parsed.error.issues.map((i) => ({
        path: jsonPath(i.path),
        message: i.code === "unrecognized_keys" ? `unknown field(s): ${(i as { keys: string[] }).keys.join(", ")}` : i.message,
      }));
  problems.push(...crossChecks(data));
  return parsed.success && problems.length === 0 ? { ok: true, file: parsed.data } : { ok: false, problems };
}

const KINDS = ["schools", "trainings", "groups", "students", "professors", "surveyTemplates", "courses"] as const;

/**
 * Checks across items, run on the raw file so that they report alongside schema problems
 * (items too malformed to tell are skipped): duplicate ids within a kind (per school), an
 * API key listed twice, a course whose end is not after its start.
 */
function crossChecks(data: unknown): ImportProblem[] {
  const problems: ImportProblem[] = [];
  if (typeof data !== "object" || data === null) return problems;
  const items = (kind: string): Record<string, unknown>[] => {
    const list = (data as Record<string, unknown>)[kind];
    return Array.isArray(list) ? list.map((x) => (typeof x === "object" && x !== null ? (x as Record<string, unknown>) : {})) : [];
  };
  for (const kind of KINDS) {
    const seen = new Set<string>();
    items(kind).forEach((r, i) => {
      if (typeof r.id !== "string") return;
      const key = `${typeof r.schoolId === "string" ? r.schoolId : ""}/${r.id}`;
      if (seen.has(key)) problems.push({ path: `${kind}[${i}].id`, message: `duplicate id "${r.id}"` });
      seen.add(key);
    });
  }
  const keys = new Set<string>();
  items("schools").forEach((s, i) => {
    if (!Array.isArray(s.apiKeys)) return;
    s.apiKeys.forEach((k, j) => {
      if (typeof k !== "string") return;
      if (keys.has(k)) problems.push({ path: `schools[${i}].apiKeys[${j}]`, message: "API key listed twice" });
      keys.add(k);
    });
  });
  items("courses").forEach((c, i) => {
    const start = typeof c.startDateTime === "string" ? parseInstant(c.startDateTime) : undefined;
    const end = typeof c.endDateTime === "string" ? parseInstant(c.endDateTime) : undefined;
    if (start !== undefined && end !== undefined && !(end > start)) {
      problems.push({ path: `courses[${i}].endDateTime`, message: "endDateTime must be after startDateTime" });
    }
  });
  return problems;
}

/** A SQL statement with positional `?` parameters. */
export interface Statement {
  sql: string;
  params: (string | number | null)[];
}

/** Rows per multi-row INSERT: keeps every statement under D1's 100 bound parameters. */
const maxRows = (columns: number) => Math.max(1, Math.floor(100 / columns));

function insertRows(
  table: string,
  columns: string[],
  rows: (string | number | null)[][],
  conflict: string,
): Statement[] {
  const out: Statement[] = [];
  const per = maxRows(columns.length);
  const tuple = `(${columns.map(() => "?").join(", ")})`;
  for (let i = 0; i < rows.length; i += per) {
    const chunk = rows.slice(i, i + per);
    out.push({
      sql: `INSERT INTO ${table} (${columns.join(", ")}) VALUES ${chunk.map(() => tuple).join(", ")} ${conflict}`,
      params: chunk.flat(),
    });
  }
  return out;
}

const ms = (s: string) => parseInstant(s)!;
const bool = (b: boolean) => (b ? 1 : 0);

/**
 * Translates a validated import file into upsert statements, in dependency order.
 * Rows are upserted by id (per school); an imported course's relation lists replace the
 * stored ones (DELETE of the course's relation rows, then INSERT). Running the statements
 * twice leaves the database as once. API keys are stored only as SHA-256 hashes.
 *
 * @param now ms since the epoch, used for `createdAt`/`updatedAt` of courses that omit them
 *   (on first insert only: an existing row keeps its stored values) and for key `created_at`.
 */
export async function importStatements(file: ImportFile, now = Date.now()): Promise<Statement[]> {
  const out: Statement[] = [];
  out.push(...insertRows("schools", ["id", "name"], file.schools.map((s) => [s.id, s.name]), "ON CONFLICT(id) DO UPDATE SET name = excluded.name"));
  const keyRows: (string | number)[][] = [];
  for (const s of file.schools) for (const k of s.apiKeys) keyRows.push([await sha256Hex(k), s.id, now]);
  out.push(
    ...insertRows(
      "api_keys",
      ["key_hash", "school_id", "created_at"],
      keyRows,
      "ON CONFLICT(key_hash) DO UPDATE SET school_id = excluded.school_id, revoked_at = NULL",
    ),
  );
  const named = (table: string, rows: { id: string; schoolId: string; name: string }[]) =>
    out.push(...insertRows(table, ["school_id", "id", "name"], rows.map((r) => [r.schoolId, r.id, r.name]), "ON CONFLICT(school_id, id) DO UPDATE SET name = excluded.name"));
  named("trainings", file.trainings);
  named("groups", file.groups);
  named("survey_templates", file.surveyTemplates);
  const people = (table: string, rows: ImportFile["students"]) =>
    out.push(
      ...insertRows(
        table,
        ["school_id", "id", "first_name", "last_name", "email"],
        rows.map((r) => [r.schoolId, r.id, r.firstName, r.lastName, r.email]),
        "ON CONFLICT(school_id, id) DO UPDATE SET first_name = excluded.first_name, last_name = excluded.last_name, email = excluded.email",
      ),
    );
  people("students", file.students);
  people("professors", file.professors);
  out.push(...courseStatements(file.courses, now));
  return out;
}

const COURSE_COLUMNS = [
  "school_id", "id", "name", "name_folded", "start_ms", "end_ms", "classroom", "classroom_folded",
  "creator_id", "training_id", "archived", "absences_sent", "created_at", "updated_at",
];

/** Upserts of courses and the replacement of their relation lists. */
export function courseStatements(list: ImportCourse[], now = Date.now()): Statement[] {
  const out: Statement[] = [];
  const row = (c: ImportCourse) => [
    c.schoolId, c.id, c.name, fold(c.name), ms(c.startDateTime), ms(c.endDateTime), c.classroom ?? null,
    c.classroom == null ? null : fold(c.classroom), c.creatorId ?? null, c.trainingId ?? null, bool(c.archived),
    bool(c.absencesSent), c.createdAt ? ms(c.createdAt) : now, c.updatedAt ? ms(c.updatedAt) : now,
  ];
  const base =
    "ON CONFLICT(school_id, id) DO UPDATE SET name = excluded.name, name_folded = excluded.name_folded, start_ms = excluded.start_ms, end_ms = excluded.end_ms, classroom = excluded.classroom, classroom_folded = excluded.classroom_folded, creator_id = excluded.creator_id, training_id = excluded.training_id, archived = excluded.archived, absences_sent = excluded.absences_sent";
  const stamped = list.filter((c) => c.createdAt && c.updatedAt);
  const unstamped = list.filter((c) => !(c.createdAt && c.updatedAt));
  out.push(...insertRows("courses", COURSE_COLUMNS, stamped.map(row), `${base}, created_at = excluded.created_at, updated_at = excluded.updated_at`));
  out.push(...insertRows("courses", COURSE_COLUMNS, unstamped.map(row), base));
  // Replace relation lists: one DELETE per relation table for the whole chunk of courses.
  const bySchool = new Map<string, string[]>();
  for (const c of list) {
    const ids = bySchool.get(c.schoolId);
    if (ids) ids.push(c.id);
    else bySchool.set(c.schoolId, [c.id]);
  }
  for (const [schoolId, ids] of bySchool) {
    for (const table of ["course_groups", "course_students", "course_professors", "course_survey_templates"]) {
      out.push({
        sql: `DELETE FROM ${table} WHERE school_id = ? AND course_id IN (SELECT value FROM json_each(?))`,
        params: [schoolId, JSON.stringify(ids)],
      });
    }
  }
  const rel = (table: string, column: string, pick: (c: ImportCourse) => string[]) =>
    out.push(
      ...insertRows(
        table,
        ["school_id", "course_id", column],
        list.flatMap((c) => [...new Set(pick(c))].map((v) => [c.schoolId, c.id, v])),
        "ON CONFLICT DO NOTHING",
      ),
    );
  rel("course_groups", "group_id", (c) => c.groupIds);
  rel("course_students", "student_id", (c) => c.studentIds);
  rel("course_survey_templates", "survey_template_id", (c) => c.surveyTemplateIds);
  out.push(
    ...insertRows(
      "course_professors",
      ["school_id", "course_id", "professor_id", "co_teacher", "signed"],
      list.flatMap((c) => c.professors.map((p) => [c.schoolId, c.id, p.professorId, bool(p.coTeacher), bool(p.signed)])),
      "ON CONFLICT DO UPDATE SET co_teacher = excluded.co_teacher, signed = excluded.signed",
    ),
  );
  return out;
}

/** Renders a statement with its parameters inlined as SQL literals (for `wrangler d1 execute --file`). */
export function toLiteralSql(s: Statement): string {
  let i = 0;
  return (
    s.sql.replace(/\?/g, () => {
      const v = s.params[i++];
      if (v === null || v === undefined) return "NULL";
      if (typeof v === "number") return String(v);
      return `'${v.replace(/'/g, "''")}'`;
    }) + ";"
  );
}
