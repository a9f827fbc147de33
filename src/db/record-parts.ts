/**
 * JSON text built by SQLite, and the course record's stored parts: the included lists of
 * people and survey templates (`course_parts`, src/db/shard-schema.ts), which every write
 * that changes one rebuilds in its own batch (`rebuildParts`) and a page concatenates
 * (src/courses/record.ts; docs/architecture.md § Course reads). No SQL function call takes
 * more than production's 32 arguments (`MAX_FUNCTION_ARGS`).
 */
import { type SQL, sql } from "drizzle-orm";

/** An INTEGER 0/1 column as a JSON boolean. */
export const bool = (column: string) => `CASE WHEN ${column} THEN 'true' ELSE 'false' END`;

/** A text or number column as a JSON value (`json_quote`: escaped string, number, or `null`). */
export const value = (column: string) => `json_quote(${column})`;

/**
 * Most arguments D1 and Durable Object SQLite take in one SQL function call (Cloudflare's limits
 * pages, "Maximum arguments per SQL function": https://developers.cloudflare.com/d1/platform/limits/,
 * https://developers.cloudflare.com/durable-objects/platform/limits/). Production refuses a
 * statement with a call over it (`too many arguments on function concat`); the local runtime
 * allows more, so only this bound keeps a statement that passes locally from failing deployed.
 */
const MAX_FUNCTION_ARGS = 32;

/**
 * One concat() of `args` (SQL of strings; NULL ones skipped), nested when they are more than
 * `MAX_FUNCTION_ARGS`: the fewest leading arguments are folded into an inner concat() so that
 * the outer call takes exactly the maximum (repeated past 63). The folded head is the record's
 * first few short fields, so the only extra work is copying those few bytes once more; the
 * large nested lists, at the end, are copied once, as in a single call.
 *
 * Not `||`: the operator copies the whole string built so far at each step (SQLite alone took
 * 20–24 % longer for a page, bench/NOTES.md § "Records built in SQL") and yields NULL when
 * any operand is NULL, where concat() skips it.
 */
function concatOf(args: string[]): string {
  if (args.length <= MAX_FUNCTION_ARGS) return `concat(${args.join(", ")})`;
  const head = Math.min(MAX_FUNCTION_ARGS, args.length - MAX_FUNCTION_ARGS + 1);
  return concatOf([`concat(${args.slice(0, head).join(", ")})`, ...args.slice(head)]);
}

/**
 * A JSON object from `[key, SQL of its JSON text]` pairs, by `concatOf`: two arguments per
 * field (the key with its comma and colon, then the value) and the braces. Every value is
 * JSON text already (`json_quote`, a nested list, `true`/`false`; never NULL, which concat()
 * would skip), so SQLite parses nothing again. json_object takes a nested list that comes out
 * of a subquery as JSON only when it is wrapped in json() — a re-parse that cost more than the
 * rest of the page (bench/NOTES.md) — and its key/value calls cost more than one concat().
 */
export const object = (fields: [string, string][]) => concatOf(["'{'", ...fields.flatMap(([k, v], i) => [`'${i === 0 ? "" : ","}"${k}":'`, v]), "'}'"]);

/** "The relation row `r` is of the course (`school`, `id`: SQL of its key)". */
const ofCourse = (school: string, id: string) => `r.school_id = ${school} AND r.course_id = ${id}`;

/**
 * A course's rows of a relation table `r` joined as in `from`, as the JSON text of an array of
 * `item` (JSON text) in `order` (`[]` when none: concat() skips the NULL of no rows). The
 * aggregate's own ORDER BY (SQLite ≥ 3.44) sorts the course's few rows.
 */
const list = (item: string, from: string, order: string, of: string) =>
  `(SELECT concat('[', group_concat(${item}, ',' ORDER BY ${order}), ']') FROM ${from} WHERE ${of})`;

/**
 * People (students, teachers) by lastName, firstName, id (docs/reference.md § "Course record"): each
 * name by its folded key (`fold()`, stored by every write path), then as written, so that
 * `Émile` and `emile` keep a fixed order.
 */
const PEOPLE_ORDER = "p.last_name_folded, p.last_name, p.first_name_folded, p.first_name, p.id";

/** `{ id, firstName, lastName, email, …extra }` of the person `p` in scope. */
const person = (extra: [string, string][] = []): string =>
  object([["id", value("p.id")], ["firstName", value("p.first_name")], ["lastName", value("p.last_name")], ["email", value("p.email")], ...extra]);

/** `{ id, name }` of the row `t` in scope (a survey template, a training). */
export const named = object([
  ["id", value("t.id")],
  ["name", value("t.name")],
]);

/**
 * The included lists stored per course in `course_parts` (src/db/shard-schema.ts), by their
 * record key: students and teachers by lastName, firstName, id, survey templates by name, id,
 * names folded.
 */
export type RecordPart = "students" | "teachers" | "surveyTemplates";

/** Every stored part, in the order of the record's keys. */
export const RECORD_PARTS: readonly RecordPart[] = ["students", "teachers", "surveyTemplates"];

/** The SQL that builds a part's JSON text for the course whose key is `school`, `id` (SQL). */
function buildPart(part: RecordPart, school: string, id: string): string {
  const of = ofCourse(school, id);
  switch (part) {
    case "students":
      return list(person(), "course_students r JOIN students p ON p.school_id = r.school_id AND p.id = r.student_id", PEOPLE_ORDER, of);
    case "teachers":
      return list(
        person([
          ["coTeacher", bool("r.co_teacher")],
          ["signed", bool("r.signed")],
        ]),
        "course_professors r JOIN professors p ON p.school_id = r.school_id AND p.id = r.professor_id",
        PEOPLE_ORDER,
        of,
      );
    case "surveyTemplates":
      return list(
        named,
        "course_survey_templates r JOIN survey_templates t ON t.school_id = r.school_id AND t.id = r.survey_template_id",
        "t.name_folded, t.name, t.id",
        of,
      );
  }
}

/** Head of the upsert of a part's rebuild: its keys' SELECT follows (see `rebuildPartsText`). */
const rebuildHead = (part: RecordPart) =>
  `INSERT INTO course_parts (school_id, course_id, part, json) SELECT k.school_id, k.course_id, '${part}', ${buildPart(part, "k.school_id", "k.course_id")} FROM (`;
// `WHERE true`: an upsert from a SELECT needs a WHERE before ON CONFLICT (SQLite's parse).
const REBUILD_TAIL = ") AS k WHERE true ON CONFLICT (school_id, course_id, part) DO UPDATE SET json = excluded.json";

/**
 * The statement that (re)builds `part` of the courses that `keys` selects (SQL text of a
 * SELECT of `school_id`, `course_id`), from the relation and people tables as they are when
 * it runs: an upsert into `course_parts`.
 * Its cost is the listed courses' relation rows, each course's through its primary key:
 * `keys` bounds it.
 */
export const rebuildPartsText = (part: RecordPart, keys: string): string => `${rebuildHead(part)}${keys}${REBUILD_TAIL}`;

/** `rebuildPartsText` with `keys` as drizzle SQL (bound parameters). */
export const rebuildParts = (part: RecordPart, keys: SQL): SQL => sql`${sql.raw(rebuildHead(part))}${keys}${sql.raw(REBUILD_TAIL)}`;

/** SQL of a stored part of the page's course (the `courses` row in scope): one primary-key lookup of `course_parts`. */
export const storedPart = (part: RecordPart) =>
  `(SELECT cp.json FROM course_parts cp WHERE cp.school_id = "courses"."school_id" AND cp.course_id = "courses"."id" AND cp.part = '${part}')`;
