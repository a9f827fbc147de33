/**
 * Course records as the API writes them (docs/reference.md § "Course record"), built by SQLite:
 * each course comes out of the page statement (src/courses/query.ts) as the JSON text of its
 * final record, so a listing reaches the client unparsed (src/http/respond.ts `successRaw`).
 * The included lists are stored per course (`course_parts`, src/db/record-parts.ts) and
 * concatenated (docs/architecture.md § Course reads). `stateToRecord` (src/courses/change.ts)
 * builds the same record in JS; test/courses/record-sql.test.ts and record-shapes.test.ts hold
 * both to one shape at the largest lists. No SQL function call takes more than production's 32
 * arguments (`MAX_FUNCTION_ARGS`, src/db/record-parts.ts).
 */
import { type SQL, sql } from "drizzle-orm";
import { bool, named, object, RECORD_PARTS, storedPart, value } from "../db/record-parts";
import type { Includes } from "./filters";

/**
 * An instant column (INTEGER ms since the epoch) as a JSON string `"2026-09-07T08:00:00.000Z"`,
 * exactly as `formatInstant` (src/lib/time.ts) writes it for the years 0000–9999 (SQLite's
 * date range; outside it `null`, where `formatInstant` would write a 6-digit year that the
 * contract's pattern refuses too): `unixepoch` rounds `ms / 1000.0` back to whole
 * milliseconds, `subsec` prints them (datetime() costs SQLite half of what strftime() does).
 */
const instant = (column: string) => `coalesce('"' || replace(datetime(${column} / 1000.0, 'unixepoch', 'subsec'), ' ', 'T') || 'Z"', 'null')`;

const ofPageCourse = `r.school_id = "courses"."school_id" AND r.course_id = "courses"."id"`;

/**
 * A course's ids of a relation table, ascending, as a JSON array. The ORDER BY sits in a
 * subquery that SQLite does not flatten into the aggregate: the primary key (school_id,
 * course_id, <column>) yields the rows in that order, so nothing is sorted (an aggregate
 * ORDER BY would sort them again: test/courses/query-plan.test.ts refuses any temp B-tree).
 */
const ids = (table: string, column: string) =>
  `(SELECT concat('[', group_concat(${value(column)}, ','), ']') FROM (SELECT ${column} FROM ${table} r WHERE ${ofPageCourse} ORDER BY ${column}))`;

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
  for (const part of RECORD_PARTS) if (inc[part]) fields.push([part, storedPart(part)]);
  if (inc.training)
    fields.push(["training", `coalesce((SELECT ${named} FROM trainings t WHERE t.school_id = ${col("school_id")} AND t.id = ${col("training_id")}), 'null')`]);
  return sql<string>`${sql.raw(object(fields))}`;
}
