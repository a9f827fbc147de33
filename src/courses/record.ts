/**
 * Course records as the API writes them (API.md § "Course record"), built by SQLite: the
 * page statement (src/courses/query.ts) returns each course as the JSON text of its final
 * record, nested lists in the contract's order, so that a listing reaches the client without
 * the Worker parsing, sorting or serializing a record (src/http/respond.ts `successRaw`).
 *
 * The same record is built in JS from a course's state by `stateToRecord`
 * (src/courses/change.ts) for write responses and events; test/record-sql.test.ts holds both
 * to the same shape.
 */
import { type SQL, sql } from "drizzle-orm";
import type { Includes } from "./filters";

/**
 * An instant column (INTEGER ms since the epoch) as `2026-09-07T08:00:00.000Z`, exactly as
 * `formatInstant` (src/lib/time.ts) writes it for the years 0000–9999 (SQLite's date range):
 * `unixepoch` rounds `ms / 1000.0` back to whole milliseconds, `%f` prints them.
 */
const instant = (column: string) => `strftime('%Y-%m-%dT%H:%M:%fZ', ${column} / 1000.0, 'unixepoch')`;

/** An INTEGER 0/1 column as a JSON boolean (json_object would write 0/1). */
const bool = (column: string) => `json(CASE WHEN ${column} THEN 'true' ELSE 'false' END)`;

/**
 * A course's rows of a relation table `r` joined with `extra`, in `order`, as one JSON array
 * of `item`. The ORDER BY sits in a subquery that SQLite does not flatten into the aggregate,
 * so json_group_array receives the rows in that order. `json()` keeps the array JSON (not a
 * string) through the scalar subquery into the enclosing json_object.
 */
const list = (item: string, from: string, order: string) =>
  `json((SELECT json_group_array(${item}) FROM (SELECT * FROM ${from} WHERE r.school_id = "courses"."school_id" AND r.course_id = "courses"."id" ORDER BY ${order})))`;

/**
 * People (students, teachers) by lastName, firstName, id (API.md § "Course record"): each
 * name by its folded key (`fold()`, stored by every write path), then as written, so that
 * `Émile` and `emile` keep a fixed order.
 */
const PEOPLE_ORDER = "p.last_name_folded, p.last_name, p.first_name_folded, p.first_name, p.id";

const person = (extra: string) => `json_object('id', id, 'firstName', first_name, 'lastName', last_name, 'email', email${extra})`;

/**
 * The JSON text of the course record of the `courses` row in scope, with the include fields
 * asked for: the keys in the order of `courseRecordSchema` (src/courses/schemas.ts),
 * `null` for absent optional values, booleans as JSON booleans, instants as in
 * `formatInstant`, `groupIds` and `professorIds` ascending, students and teachers by
 * lastName, firstName, id and survey templates by name, id, names folded.
 */
export function courseRecordJson(inc: Includes): SQL<string> {
  const ids = (table: string, column: string) => list(column, `${table} r`, column);
  const fields = [
    `'id', "courses"."id"`,
    `'name', "courses"."name"`,
    `'startDateTime', ${instant(`"courses"."start_ms"`)}`,
    `'endDateTime', ${instant(`"courses"."end_ms"`)}`,
    `'classroom', "courses"."classroom"`,
    `'creatorId', "courses"."creator_id"`,
    `'trainingId', "courses"."training_id"`,
    `'groupIds', ${ids("course_groups", "group_id")}`,
    `'professorIds', ${ids("course_professors", "professor_id")}`,
    `'archived', ${bool(`"courses"."archived"`)}`,
    `'absencesSent', ${bool(`"courses"."absences_sent"`)}`,
    `'version', "courses"."version"`,
    `'createdAt', ${instant(`"courses"."created_at"`)}`,
    `'updatedAt', ${instant(`"courses"."updated_at"`)}`,
  ];
  if (inc.students)
    fields.push(`'students', ${list(person(""), "course_students r JOIN students p ON p.school_id = r.school_id AND p.id = r.student_id", PEOPLE_ORDER)}`);
  if (inc.teachers)
    fields.push(
      `'teachers', ${list(
        person(`, 'coTeacher', ${bool("co_teacher")}, 'signed', ${bool("signed")}`),
        "course_professors r JOIN professors p ON p.school_id = r.school_id AND p.id = r.professor_id",
        PEOPLE_ORDER,
      )}`,
    );
  if (inc.surveyTemplates)
    fields.push(
      `'surveyTemplates', ${list(
        "json_object('id', id, 'name', name)",
        "course_survey_templates r JOIN survey_templates t ON t.school_id = r.school_id AND t.id = r.survey_template_id",
        "t.name_folded, t.name, t.id",
      )}`,
    );
  if (inc.training)
    fields.push(
      `'training', json((SELECT json_object('id', t.id, 'name', t.name) FROM trainings t WHERE t.school_id = "courses"."school_id" AND t.id = "courses"."training_id"))`,
    );
  return sql<string>`${sql.raw(`json_object(${fields.join(", ")})`)}`;
}
