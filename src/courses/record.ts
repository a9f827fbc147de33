/**
 * Course records as the API writes them (docs/reference.md § "Course record"), built by SQLite: the
 * page statement (src/courses/query.ts) returns each course as the JSON text of its final
 * record, nested lists in the contract's order, so that a listing reaches the client without
 * the Worker parsing, sorting or serializing a record (src/http/respond.ts `successRaw`).
 *
 * The same record is built in JS from a course's state by `stateToRecord`
 * (src/courses/change.ts) for write responses and events; test/courses/record-sql.test.ts holds both
 * to the same shape, test/courses/record-shapes.test.ts every statement shape (includes,
 * filters, sorts) at the contract's largest lists. No SQL function call takes more than
 * production's 32 arguments (`MAX_FUNCTION_ARGS`).
 */
import { type SQL, sql } from "drizzle-orm";
import type { Includes } from "./filters";

/**
 * An instant column (INTEGER ms since the epoch) as a JSON string `"2026-09-07T08:00:00.000Z"`,
 * exactly as `formatInstant` (src/lib/time.ts) writes it for the years 0000–9999 (SQLite's
 * date range; outside it `null`, where `formatInstant` would write a 6-digit year that the
 * contract's pattern refuses too): `unixepoch` rounds `ms / 1000.0` back to whole
 * milliseconds, `subsec` prints them (datetime() costs SQLite half of what strftime() does).
 */
const instant = (column: string) => `coalesce('"' || replace(datetime(${column} / 1000.0, 'unixepoch', 'subsec'), ' ', 'T') || 'Z"', 'null')`;

/** An INTEGER 0/1 column as a JSON boolean. */
const bool = (column: string) => `CASE WHEN ${column} THEN 'true' ELSE 'false' END`;

/** A text or number column as a JSON value (`json_quote`: escaped string, number, or `null`). */
const value = (column: string) => `json_quote(${column})`;

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
const object = (fields: [string, string][]) => concatOf(["'{'", ...fields.flatMap(([k, v], i) => [`'${i === 0 ? "" : ","}"${k}":'`, v]), "'}'"]);

const ofCourse = `r.school_id = "courses"."school_id" AND r.course_id = "courses"."id"`;

/**
 * A course's rows of a relation table `r` joined as in `from`, as the JSON text of an array of
 * `item` (JSON text) in `order` (`[]` when none: concat() skips the NULL of no rows). The
 * aggregate's own ORDER BY (SQLite ≥ 3.44) sorts the course's few rows.
 */
const list = (item: string, from: string, order: string) =>
  `(SELECT concat('[', group_concat(${item}, ',' ORDER BY ${order}), ']') FROM ${from} WHERE ${ofCourse})`;

/**
 * A course's ids of a relation table, ascending, as a JSON array. The ORDER BY sits in a
 * subquery that SQLite does not flatten into the aggregate: the primary key (school_id,
 * course_id, <column>) yields the rows in that order, so nothing is sorted (an aggregate
 * ORDER BY would sort them again: test/courses/query-plan.test.ts refuses any temp B-tree).
 */
const ids = (table: string, column: string) =>
  `(SELECT concat('[', group_concat(${value(column)}, ','), ']') FROM (SELECT ${column} FROM ${table} r WHERE ${ofCourse} ORDER BY ${column}))`;

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
const named = object([
  ["id", value("t.id")],
  ["name", value("t.name")],
]);

/**
 * The JSON text of the course record of the `courses` row in scope, with the include fields
 * asked for: the keys in the order of `courseRecordSchema` (src/courses/schemas.ts),
 * `null` for absent optional values, booleans as JSON booleans, instants as in
 * `formatInstant`, `groupIds` and `professorIds` ascending, students and teachers by
 * lastName, firstName, id and survey templates by name, id, names folded.
 */
export function courseRecordJson(inc: Includes): SQL<string> {
  const col = (name: string) => `"courses"."${name}"`;
  const fields: [string, string][] = [
    ["id", value(col("id"))],
    ["name", value(col("name"))],
    ["startDateTime", instant(col("start_ms"))],
    ["endDateTime", instant(col("end_ms"))],
    ["classroom", value(col("classroom"))],
    ["creatorId", value(col("creator_id"))],
    ["trainingId", value(col("training_id"))],
    ["groupIds", ids("course_groups", "group_id")],
    ["professorIds", ids("course_professors", "professor_id")],
    ["archived", bool(col("archived"))],
    ["absencesSent", bool(col("absences_sent"))],
    ["version", value(col("version"))],
    ["createdAt", instant(col("created_at"))],
    ["updatedAt", instant(col("updated_at"))],
  ];
  if (inc.students)
    fields.push(["students", list(person(), "course_students r JOIN students p ON p.school_id = r.school_id AND p.id = r.student_id", PEOPLE_ORDER)]);
  if (inc.teachers)
    fields.push([
      "teachers",
      list(
        person([
          ["coTeacher", bool("r.co_teacher")],
          ["signed", bool("r.signed")],
        ]),
        "course_professors r JOIN professors p ON p.school_id = r.school_id AND p.id = r.professor_id",
        PEOPLE_ORDER,
      ),
    ]);
  if (inc.surveyTemplates)
    fields.push([
      "surveyTemplates",
      list(
        named,
        "course_survey_templates r JOIN survey_templates t ON t.school_id = r.school_id AND t.id = r.survey_template_id",
        "t.name_folded, t.name, t.id",
      ),
    ]);
  if (inc.training)
    fields.push(["training", `coalesce((SELECT ${named} FROM trainings t WHERE t.school_id = ${col("school_id")} AND t.id = ${col("training_id")}), 'null')`]);
  return sql<string>`${sql.raw(object(fields))}`;
}
