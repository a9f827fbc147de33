/**
 * `GET /__bench/page-floor` of the benchmark entry only: what a page of course records costs
 * when nothing builds them, read from tables that scripts/bench-page-floor.ts writes into a
 * benchmark copy of a shard (never a migration). It bounds from below what any way of storing
 * the records can reach through D1 and `wrangler dev` (bench/RESULTS.md § "The page's floor").
 */
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
 */
const FORMS: Record<string, string> = {
  rows: `SELECT rec FROM ${PAGE_RECORDS_TABLE} ORDER BY i`,
  value: `SELECT concat('[', group_concat(rec, ','), ']') FROM (SELECT rec FROM ${PAGE_RECORDS_TABLE} ORDER BY i)`,
  courses: `SELECT c.id, (SELECT r.rec FROM ${COURSE_RECORDS_TABLE} r WHERE r.school_id = c.school_id AND r.course_id = c.id) FROM courses c WHERE c.school_id = ?1 ORDER BY c.start_ms, c.id LIMIT 101`,
  count: `SELECT rec FROM ${PAGE_RECORDS_TABLE} ORDER BY i`,
};

/**
 * The handler: `?shard=SHARD_k&school=ID&form=rows|value|courses|count` → the success envelope
 * of the records (`count`: of their number), timed in `Server-Timing` like any read.
 *
 * @throws ApiError 400 INVALID_PARAMETER on an unknown form or shard binding.
 */
export async function benchPageFloor(req: Request, env: Env, _exec: ExecutionContext, rc: RequestContext): Promise<Response> {
  const url = new URL(req.url);
  const form = url.searchParams.get("form") ?? "";
  const d1 = (env as unknown as Record<string, D1Database | undefined>)[url.searchParams.get("shard") ?? ""];
  if (!(form in FORMS) || d1 === undefined || !/^SHARD_\d+$/.test(url.searchParams.get("shard") ?? ""))
    throw new ApiError("INVALID_PARAMETER", "form must be rows, value, courses or count, and shard a SHARD_<n> binding");
  const stmt = d1.prepare(FORMS[form]!);
  const rows = await rc.db(() => (form === "courses" ? stmt.bind(url.searchParams.get("school") ?? "") : stmt).raw<unknown[]>());
  if (form === "count") return success(rows.length);
  if (form === "value") return successRaw(String(rows[0]?.[0]));
  const recs = form === "courses" ? rows.slice(0, 100).map((r) => r[1]) : rows.map((r) => r[0]);
  return successRaw(`[${recs.join(",")}]`);
}
