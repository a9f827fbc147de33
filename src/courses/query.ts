/**
 * The course query builder: one `CourseQuery` → one drizzle SELECT that returns a page of
 * courses, each as its final JSON record with every related list embedded (correlated
 * subqueries), so that a listing is a single statement whatever its includes (docs/architecture.md §
 * "Invariants"). The change page (`selectCourseChanges`) builds the same records in change order.
 *
 * Id lists travel as one JSON parameter read with `json_each(?)`, never as one bound
 * parameter per id (D1 allows 100 per statement).
 */
import { and, asc, eq, gt, gte, lte, type SQL, sql } from "drizzle-orm";
import type { DrizzleD1Database } from "drizzle-orm/d1";
import { courses, schoolChanges } from "../db/shard-schema";
import { fold } from "../lib/text";
import type { ChangesQuery, CourseQuery } from "./filters";
import { courseRecordJson } from "./record";
import { afterRow, courseOrder, sortValuesJson } from "./sort";

/** The school a statement reads (the directory named it; src/courses/session.ts). */
export type SchoolScope = { schoolId: string };

const jsonIds = (ids: string[]) => sql`(SELECT value FROM json_each(${JSON.stringify(ids)}))`;

/**
 * Id lists longer than this are matched course by course instead of course ids first
 * (see `related`). 100 is the GET limit, so GET lists always take the selective plan.
 */
const LONG_LIST = 100;

/**
 * "The course is related to at least one of `ids`" in one of two equivalent forms:
 * - short lists (≤ LONG_LIST): `id IN (course ids of the listed ids)` — SQLite reads the
 *   relation index `(school_id, <column>, course_id)` for each listed id, a few rows each;
 * - long lists: `EXISTS (a relation row of this course whose <column> is listed)` — SQLite
 *   walks the courses in the requested order and probes each course's few relation rows
 *   through the primary key `(school_id, course_id, …)` against the list (hashed once), so a
 *   10,000-id list costs a few probes per course of the page instead of materializing every
 *   course id of 10,000 students. The unary `+` keeps SQLite from iterating the list.
 * Same rows either way; only the plan differs (benchmarked in bench/RESULTS.md).
 */
function related(school: SQL, table: string, column: string, ids: string[]): SQL {
  const t = sql.raw(table);
  const col = sql.raw(column);
  return ids.length <= LONG_LIST
    ? sql`${courses.id} IN (SELECT course_id FROM ${t} WHERE school_id = ${school} AND ${col} IN ${jsonIds(ids)})`
    : sql`EXISTS (SELECT 1 FROM ${t} r WHERE r.school_id = ${courses.schoolId} AND r.course_id = ${courses.id} AND +r.${col} IN ${jsonIds(ids)})`;
}

/** Folded names at least this long (in code points) may be looked up in the trigram index. */
const TRIGRAM = 3;

/**
 * Up to this many courses (all schools) holding the needle's rarest trigram, the trigram
 * index finds the candidates; above it, walking the courses in the requested order finds a
 * page sooner than the index lists every match (at 100,000 courses: "economie", 8,000
 * courses for its rarest trigram, 2 ms walking vs 17 ms through the index; an absent name
 * 0.1 ms through the index vs 35 ms walking — see bench/NOTES.md).
 */
const TRIGRAM_INDEX_MAX_DOCS = 1000;

/**
 * Up to 3 of the needle's trigrams (3 consecutive code points, as the trigram tokenizer cuts
 * them): first, middle and last. The fewest courses holding any of them bounds the matches
 * from above; each costs one vocabulary lookup, so a 200-character name does not cost 198.
 */
function sampleTrigrams(needle: string): string[] {
  const cps = [...needle];
  const at = (i: number) => cps.slice(i, i + 3).join("");
  const last = cps.length - 3;
  return [...new Set([at(0), at(Math.floor(last / 2)), at(last)])];
}

/**
 * "The folded name contains `needle`" (docs/reference.md § "GET /v3/courses": case- and
 * accent-insensitive substring, `%` and `_` literal), decided by instr() on the folded name —
 * not LIKE: D1 refuses LIKE patterns past about 50 bytes and instr() needs no escaping.
 */
const nameContains = (needle: string) => sql`instr(${courses.nameFolded}, ${needle}) > 0`;

/**
 * Candidates from the FTS5 trigram index `courses_name_fts` (migrations/shard/0001_name_trigram.sql):
 * the needle as one FTS5 phrase (double quotes doubled), whose trigrams in sequence are the
 * substrings; `nameContains` still decides.
 */
const nameCandidates = (needle: string) =>
  sql`${sql.raw('"courses"."rowid"')} IN (SELECT rowid FROM courses_name_fts WHERE courses_name_fts MATCH ${`"${needle.replaceAll('"', '""')}"`})`;

/**
 * Page statement for a `name` of 3+ code points: the rowids of the page come from one of two
 * branches, each a full page query (filters, the cursor's row, order, limit, offset), of which exactly one runs:
 * its LIMIT is 0 unless the trigram count (fts5vocab `courses_name_vocab`: courses holding the
 * needle's rarest sampled trigram, 0 when one is absent) puts it on its side of `maxDocs` — SQLite
 * evaluates LIMIT before it starts a loop, so the other branch costs nothing.
 */
function namePageRowids(school: SQL, q: CourseQuery, needle: string, maxDocs: number): SQL {
  // Counted once (materialized), read by both LIMITs.
  const docs = sql`name_docs(n) AS MATERIALIZED (SELECT min(coalesce((SELECT doc FROM courses_name_vocab WHERE term = j.value), 0)) FROM json_each(${JSON.stringify(sampleTrigrams(needle))}) j)`;
  const branch = (where: SQL, useIndex: boolean) =>
    sql`SELECT rowid FROM (SELECT ${sql.raw('"courses"."rowid"')} AS rowid FROM ${courses} WHERE ${where} ORDER BY ${sql.join(courseOrder(q.sort), sql`, `)}
      LIMIT CASE WHEN (SELECT n FROM name_docs) ${sql.raw(useIndex ? "<=" : ">")} ${maxDocs} THEN ${q.limit + 1} ELSE 0 END OFFSET ${pageOffset(q)})`;
  const others = courseConditions(school, { ...q, name: undefined });
  return sql`WITH ${docs} ${branch(and(others, nameCandidates(needle), nameContains(needle))!, true)} UNION ALL ${branch(and(others, nameContains(needle))!, false)}`;
}

/** The WHERE conditions of a CourseQuery (AND of every filter), school scope first. */
function courseConditions(school: SQL, q: CourseQuery): SQL {
  const c: (SQL | undefined)[] = [eq(courses.schoolId, school)];
  if (q.courseStartDateTime !== undefined) c.push(gte(courses.startMs, q.courseStartDateTime));
  if (q.courseEndDateTime !== undefined) c.push(lte(courses.endMs, q.courseEndDateTime));
  // Both true (or both false) filter nothing (docs/reference.md).
  if (q.absencesSent && !q.absencesNotSent) c.push(eq(courses.absencesSent, true));
  if (q.absencesNotSent && !q.absencesSent) c.push(eq(courses.absencesSent, false));
  if (q.courseId.length > 0) c.push(sql`${courses.id} IN ${jsonIds(q.courseId)}`);
  if (q.groupId.length > 0) c.push(related(school, "course_groups", "group_id", q.groupId));
  if (q.studentId.length > 0) c.push(related(school, "course_students", "student_id", q.studentId));
  if (q.professorId.length > 0) c.push(related(school, "course_professors", "professor_id", q.professorId));
  // One training: an equality, so the (school, training, start, id) index walks in order.
  if (q.trainingId.length === 1) c.push(eq(courses.trainingId, q.trainingId[0]!));
  else if (q.trainingId.length > 1) c.push(sql`${courses.trainingId} IN ${jsonIds(q.trainingId)}`);
  if (q.archived !== undefined) c.push(eq(courses.archived, q.archived));
  if (q.classroom !== undefined) c.push(eq(courses.classroom, q.classroom));
  if (q.creatorId !== undefined) c.push(eq(courses.creatorId, q.creatorId));
  // Names of 3+ code points are served by `namePageRowids` (the page statement checks them).
  if (q.name !== undefined) c.push(nameContains(fold(q.name)));
  if (q.professorSignatureMissing !== undefined) {
    // Probed course by course (index (school_id, signed, course_id)): the set of unsigned
    // courses is large, so materializing it first would cost more than the page.
    const unsigned = sql`EXISTS (SELECT 1 FROM course_professors r WHERE r.school_id = ${courses.schoolId} AND r.signed = 0 AND r.course_id = ${courses.id})`;
    c.push(q.professorSignatureMissing ? unsigned : sql`NOT ${unsigned}`);
  }
  // createdAt / updatedAt: validated, accepted, currently ignored (docs/reference.md).
  if (q.after) c.push(afterRow(q.sort, q.after));
  return and(...c)!;
}

/** Rows skipped before the page: none with a cursor (the page starts after its row), else the pages before. */
const pageOffset = (q: CourseQuery) => (q.after ? 0 : (q.page - 1) * q.limit);

/**
 * The page statement: `limit + 1` rows (the extra row tells `hasMore`) at offset
 * `(page - 1) * limit`, or after the cursor's row (`q.after`, src/courses/sort.ts), each the
 * course's id, version, sort-key values (a JSON array, for the next cursor) and final JSON
 * record with the requested includes (`courseRecordJson`, src/courses/record.ts).
 * A `name` of 3+ code points selects the page's rowids first (`namePageRowids`); the outer
 * query then sorts those few rows again and embeds their lists.
 *
 * @param trigramIndexMaxDocs see {@link TRIGRAM_INDEX_MAX_DOCS} (tests force either branch).
 */
export function selectCoursePage(db: DrizzleD1Database, scope: SchoolScope, q: CourseQuery, trigramIndexMaxDocs = TRIGRAM_INDEX_MAX_DOCS) {
  const school = sql`${scope.schoolId}`;
  const needle = q.name === undefined ? undefined : fold(q.name);
  // FTS5 ends a query string at NUL ("unterminated string"): such a needle walks instead.
  const byName = needle !== undefined && [...needle].length >= TRIGRAM && !needle.includes("\u0000");
  return db
    .select({ id: courses.id, version: courses.version, sortValues: sortValuesJson(q.sort), record: courseRecordJson(q.include) })
    .from(courses)
    .where(
      byName
        ? and(eq(courses.schoolId, school), sql`${sql.raw('"courses"."rowid"')} IN (${namePageRowids(school, q, needle, trigramIndexMaxDocs)})`)
        : courseConditions(school, q),
    )
    .orderBy(...courseOrder(q.sort))
    .limit(q.limit + 1)
    .offset(byName ? 0 : pageOffset(q));
}

/** A row of `selectCoursePage`: `record` is the JSON text of the course record. */
export type CourseRow = Awaited<ReturnType<typeof selectCoursePage>>[number];

/**
 * The change page statement: `limit + 1` courses whose latest change follows `q.after`, in
 * change order, each with its change number and final JSON record (`courseRecordJson`). Walks
 * `courses_school_change_idx` from `after`: its cost is the page, whatever came before.
 */
export function selectCourseChanges(db: DrizzleD1Database, scope: SchoolScope, q: ChangesQuery) {
  return db
    .select({ id: courses.id, changeSeq: courses.changeSeq, record: courseRecordJson(q.include) })
    .from(courses)
    .where(and(eq(courses.schoolId, scope.schoolId), gt(courses.changeSeq, q.after)))
    .orderBy(asc(courses.changeSeq))
    .limit(q.limit + 1);
}

/** The school's last change number (`school_changes.seq`; no row: no change yet). */
export const selectLastChange = (db: DrizzleD1Database, scope: SchoolScope) =>
  db.select({ seq: schoolChanges.seq }).from(schoolChanges).where(eq(schoolChanges.schoolId, scope.schoolId));
