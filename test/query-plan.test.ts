/**
 * DESIGN.md § "Invariants": every single filter is served by an index led by the school;
 * EXPLAIN QUERY PLAN must never show a scan of the whole course table.
 */
import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { parseListQuery, parseSearchBody } from "../src/courses/filters";
import { selectCoursePage } from "../src/courses/query";
import { getDb } from "../src/db/client";

const plan = async (q: ReturnType<typeof parseListQuery>) => {
  const { sql, params } = selectCoursePage(getDb(env.DB), { keyHash: "h" }, q).toSQL();
  const rows = await env.DB.prepare(`EXPLAIN QUERY PLAN ${sql}`)
    .bind(...params)
    .all<{ detail: string }>();
  return rows.results.map((r) => r.detail);
};

const single: string[] = [
  "",
  "courseStartDateTime=2026-09-07T08:00:00Z",
  "courseEndDateTime=2026-09-07T08:00:00Z",
  "absencesSent=true",
  "absencesNotSent=true",
  "groupId=grp_1,grp_2",
  "studentId=stu_1",
  "professorId=prf_1",
  "trainingId=trn_1",
  "archived=true",
  "archived=false",
  "classroom=B204",
  "creatorId=usr_1",
  "name=alg",
  "createdAt=2026-09-07T08:00:00Z",
  "updatedAt=2026-09-07T08:00:00Z",
  "professorSignatureMissing=true",
  "professorSignatureMissing=false",
  "includeStudents=true&includeTeachers=true&includeSurveyTemplates=true&includeTraining=true",
  "page=50&limit=100",
];

describe("query plans", () => {
  for (const qs of single) {
    it(`no full scan of courses for ${qs || "(no filter)"}`, async () => {
      const details = await plan(parseListQuery(new URLSearchParams(qs)));
      expect(details.join("\n")).toMatch(/SEARCH courses USING (COVERING )?INDEX \w+ \(school_id=\?/);
      for (const d of details) expect(d, details.join("\n")).not.toMatch(/^SCAN (courses|course_\w+)\b/);
    });
  }

  it("no full scan for search sorts and courseId lists", async () => {
    for (const body of [
      { courseId: ["crs_1", "crs_2"] },
      {
        sort: [
          { field: "name", order: "desc" },
          { field: "classroom", order: "asc" },
        ],
      },
      { studentId: Array.from({ length: 1000 }, (_, i) => `stu_${i}`), sort: [{ field: "updatedAt", order: "desc" }] },
    ]) {
      const details = await plan(parseSearchBody(body));
      for (const d of details) expect(d, details.join("\n")).not.toMatch(/^SCAN (courses|course_\w+)\b/);
    }
  });
});
