/**
 * `GET /__bench/page-floor` of the benchmark entry only: what a page of course records costs
 * when nothing builds them, read from tables that scripts/bench-page-floor.ts writes into a
 * benchmark copy of a shard (never a migration), and the listing's own read without its
 * other steps. It bounds from below what any way of storing the records can reach through D1
 * and `wrangler dev` (bench/RESULTS.md § "The page's floor").
 */
import { drizzle } from "drizzle-orm/d1";
import { parseListQuery } from "../courses/filters";
import { selectCoursePage } from "../courses/query";
import { readCoursePage } from "../courses/read";
import type { RequestContext } from "../http/context";
import { ApiError } from "../http/errors";
import { success, successRaw } from "../http/respond";

/** The 100 records of the all-includes first page, as the listing's SQL builds them, one row each (`i`, `rec`). */
export const PAGE_RECORDS_TABLE = "bench_page_records";
/** Every course's all-includes record, one row each, keyed as `course_parts` (rowid table). */
export const COURSE_RECORDS_TABLE = "bench_course_records";

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
  rows: `SELECT rec FROM ${PAGE_RECORDS_TABLE} ORDER BY i`,
  value: `SELECT concat('[', group_concat(rec, ','), ']') FROM (SELECT rec FROM ${PAGE_RECORDS_TABLE} ORDER BY i)`,
  courses: `SELECT c.id, (SELECT r.rec FROM ${COURSE_RECORDS_TABLE} r WHERE r.school_id = c.school_id AND r.course_id = c.id) FROM courses c WHERE c.school_id = ?1 ORDER BY c.start_ms, c.id LIMIT 101`,
  count: `SELECT rec FROM ${PAGE_RECORDS_TABLE} ORDER BY i`,
};

/** The all-includes first page of 100 (the listing's query of scripts/bench-page-floor.ts). */
const ALL_INCLUDES = parseListQuery(
  new URLSearchParams("limit=100&includeStudents=true&includeTeachers=true&includeSurveyTemplates=true&includeTraining=true"),
);

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
  const d1 = (env as unknown as Record<string, D1Database | undefined>)[url.searchParams.get("shard") ?? ""];
  if (!(form in FORMS || form === "statement" || form === "read") || d1 === undefined || !/^SHARD_\d+$/.test(url.searchParams.get("shard") ?? ""))
    throw new ApiError("INVALID_PARAMETER", "form must be rows, value, courses, count, statement or read, and shard a SHARD_<n> binding");
  if (form === "read") {
    const page = await rc.db(() => readCoursePage({ d1, db: drizzle(d1), bookmark: () => null }, school, ALL_INCLUDES));
    return successRaw(`[${page.value.rows.map((r) => r.record).join(",")}]`);
  }
  if (form === "statement") {
    const { sql, params } = selectCoursePage(drizzle(d1), { schoolId: school }, ALL_INCLUDES).toSQL();
    const rows = await rc.db(() =>
      d1
        .prepare(sql)
        .bind(...params)
        .raw<unknown[]>(),
    );
    return successRaw(
      `[${rows
        .slice(0, 100)
        .map((r) => r.at(-1))
        .join(",")}]`,
    );
  }
  const stmt = d1.prepare(FORMS[form]!);
  const rows = await rc.db(() => (form === "courses" ? stmt.bind(url.searchParams.get("school") ?? "") : stmt).raw<unknown[]>());
  if (form === "count") return success(rows.length);
  if (form === "value") return successRaw(String(rows[0]?.[0]));
  const recs = form === "courses" ? rows.slice(0, 100).map((r) => r[1]) : rows.map((r) => r[0]);
  return successRaw(`[${recs.join(",")}]`);
}
