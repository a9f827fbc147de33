/**
 * docs/architecture.md § "The change sequence": a page of GET /v3/courses/changes walks
 * `courses_school_change_idx` from the cursor and stops at the page — no scan of the course
 * table, no sort of the school's changes — whatever its include flags (an include sorts
 * only one course's own rows, as in the listing).
 */
import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { parseChangesQuery } from "../../src/courses/filters";
import { selectCourseChanges } from "../../src/courses/query";
import { getDb } from "../../src/db/client";

async function plan(query: string): Promise<string[]> {
  const q = parseChangesQuery(new URLSearchParams(query));
  const { sql, params } = selectCourseChanges(getDb(env.SHARD_0), { schoolId: "h" }, q).toSQL();
  const rows = await env.SHARD_0.prepare(`EXPLAIN QUERY PLAN ${sql}`)
    .bind(...params)
    .all<{ detail: string }>();
  return rows.results.map((r) => r.detail);
}

const ALL_INCLUDES = "includeStudents=true&includeTeachers=true&includeSurveyTemplates=true&includeTraining=true";

/** The plan's lines, once checked to walk the index from the cursor, scanning no course table. */
async function walked(query: string): Promise<{ details: string[]; all: string }> {
  const details = await plan(query);
  const all = details.join("\n");
  expect(details[0], all).toMatch(/^SEARCH courses USING INDEX courses_school_change_idx \(school_id=\? AND change_seq>\?\)$/);
  for (const d of details) expect(d, all).not.toMatch(/^SCAN (courses|course_\w+)\b/);
  return { details, all };
}

describe("the change query's plan", () => {
  for (const query of ["", "after=chg_1042&limit=10"]) {
    it(`walks courses_school_change_idx with no temp B-tree: ${query || "(no parameters)"}`, async () => {
      const { all } = await walked(query);
      expect(all, all).not.toMatch(/TEMP B-TREE/);
    });
  }

  it("with every include, sorts only one course's own rows (as the listing), never the page", async () => {
    const { details, all } = await walked(`after=chg_7&${ALL_INCLUDES}`);
    expect(all, all).not.toMatch(/TEMP B-TREE FOR (RIGHT PART OF )?ORDER BY/);
    for (const d of details.filter((x) => /TEMP B-TREE/.test(x))) expect(d, all).toBe("USE TEMP B-TREE FOR group_concat(ORDER BY)");
  });
});
