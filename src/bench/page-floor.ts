/**
 * `GET /__bench/page-floor` of the benchmark entry only: what a page of course records costs
 * when nothing builds them, read from tables that scripts/bench-page-floor.ts writes into a
 * benchmark copy of a shard (never a migration), and the listing's own read without its
 * other steps. It bounds from below what any way of storing the records can reach through D1
 * and `wrangler dev` (bench/RESULTS.md § "The page's floor").
 */
import { parseListQuery } from "../courses/filters";
import { selectCoursePage } from "../courses/query";
import { readCoursePage } from "../courses/read";
import { getDb } from "../db/client";
import type { RequestContext } from "../http/context";
import { ApiError } from "../http/errors";
import { success, successRaw } from "../http/respond";

/** The 100 records of the all-includes first page, as the listing's SQL builds them, one row each (`i`, `rec`). */
export const PAGE_RECORDS_TABLE = "bench_page_records";
/** Every course's all-includes record, one row each, keyed as `course_parts` (rowid table). */
export const COURSE_RECORDS_TABLE = "bench_course_records";

/** The 100 stored page records, in page order. */
const PAGE_ROWS = `SELECT rec FROM ${PAGE_RECORDS_TABLE} ORDER BY i`;

/**
 * The forms of the page-floor read (`form` query parameter), each one D1 statement:
 * `rows` the 100 stored page records, `value` the same as one value (`group_concat`),
 * `courses` each course's stored record walked in the listing's order (`start_ms`, `id`; 101
 * rows as a page), `count` the 100 stored page records read but only counted in the answer.
 * Two more read the all-includes page as the listing builds it: `statement` its page
 * statement alone, sent raw; `read` the listing's whole batch through drizzle
 * (`readCoursePage`), without the key's check, the session or the query's validation.
 */
const FORMS: Record<string, string> = {
  rows: PAGE_ROWS,
  value: `SELECT concat('[', group_concat(rec, ','), ']') FROM (${PAGE_ROWS})`,
  courses: `SELECT c.id, (SELECT r.rec FROM ${COURSE_RECORDS_TABLE} r WHERE r.school_id = c.school_id AND r.course_id = c.id) FROM courses c WHERE c.school_id = ?1 ORDER BY c.start_ms, c.id LIMIT 101`,
  count: PAGE_ROWS,
};
/** The forms that read the page as the listing builds it (no table of this file). */
const LISTING_FORMS = new Set(["statement", "read"]);

/** The query string of the all-includes first page of 100: the page every form serves. */
export const ALL_INCLUDES_QUERY = "limit=100&includeStudents=true&includeTeachers=true&includeSurveyTemplates=true&includeTraining=true";
const ALL_INCLUDES = parseListQuery(new URLSearchParams(ALL_INCLUDES_QUERY));

/**
 * The handler: `?shard=SHARD_k&school=ID&form=rows|value|courses|count|statement|read` → the success envelope
 * of the records (`count`: of their number), timed in `Server-Timing` like any read.
 *
 * @throws ApiError 400 INVALID_PARAMETER on an unknown form or shard binding.
 */
export async function benchPageFloor(req: Request, env: Env, _exec: ExecutionContext, rc: RequestContext): Promise<Response> {
  const url = new URL(req.url);
  const form = url.searchParams.get("form") ?? "";
  const school = url.searchParams.get("school") ?? "";
  const shard = url.searchParams.get("shard") ?? "";
  const d1 = /^SHARD_\d+$/.test(shard) ? (env as unknown as Record<string, D1Database | undefined>)[shard] : undefined;
  if (!(form in FORMS || LISTING_FORMS.has(form)) || d1 === undefined)
    throw new ApiError("INVALID_PARAMETER", "form must be rows, value, courses, count, statement or read, and shard a SHARD_<n> binding");
  if (form === "read") {
    const page = await rc.db(() => readCoursePage({ d1, db: getDb(d1), bookmark: () => null }, school, ALL_INCLUDES));
    return successRaw(`[${page.value.rows.map((r) => r.record).join(",")}]`);
  }
  let stmt: D1PreparedStatement;
  if (form === "statement") {
    const { sql, params } = selectCoursePage(getDb(d1), { schoolId: school }, ALL_INCLUDES).toSQL();
    stmt = d1.prepare(sql).bind(...params);
  } else stmt = d1.prepare(FORMS[form]!);
  const rows = await rc.db(() => (form === "courses" ? stmt.bind(school) : stmt).raw<unknown[]>());
  if (form === "count") return success(rows.length);
  if (form === "value") return successRaw(String(rows[0]?.[0]));
  // The page statement and the walk read 101 rows (the page and its `hasMore` row); the record is the last column.
  return successRaw(
    `[${rows
      .slice(0, 100)
      .map((r) => r.at(-1))
      .join(",")}]`,
  );
}
