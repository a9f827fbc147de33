/**
 * docs/architecture.md § "Invariants": every single filter is served by an index led by the school;
 * EXPLAIN QUERY PLAN must never show a scan of the whole course table. Equality filters,
 * their common pairs and date windows walk an index in the requested order (start, id) and
 * stop at the page: no sort of the matching courses, no walk of the whole school.
 */
import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { parseListQuery, parseSearchBody } from "../../src/courses/filters";
import { selectCoursePage } from "../../src/courses/query";
import { getDb } from "../../src/db/client";

const plan = async (q: ReturnType<typeof parseListQuery>) => {
  const { sql, params } = selectCoursePage(getDb(env.SHARD_0), { schoolId: "h" }, q).toSQL();
  const rows = await env.SHARD_0.prepare(`EXPLAIN QUERY PLAN ${sql}`)
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

  const WEEK = "courseStartDateTime=2026-09-07T08:00:00Z&courseEndDateTime=2026-09-14T08:00:00Z";
  /** Query → the index columns the courses SEARCH must constrain beyond school_id. */
  const walks: [string, RegExp][] = [
    ["courseStartDateTime=2026-09-07T08:00:00Z", /start_ms>\?/],
    [WEEK, /start_ms>\?/],
    ["archived=true", /archived=\?/],
    ["archived=false", /archived=\?/],
    ["absencesSent=true", /absences_sent=\?/],
    ["absencesNotSent=true", /absences_sent=\?/],
    ["classroom=B204", /classroom=\?/],
    ["creatorId=usr_1", /creator_id=\?/],
    ["trainingId=trn_1", /training_id=\?/],
  ];
  for (const flag of ["archived=true", "archived=false", "absencesSent=true", "absencesNotSent=true"])
    for (const other of ["classroom=B204", "creatorId=usr_1", "trainingId=trn_1"])
      walks.push([`${flag}&${other}`, /(archived|absences_sent|classroom|creator_id|training_id)=\?/]);
  for (const other of ["classroom=B204", "creatorId=usr_1", "trainingId=trn_1", "archived=true", "absencesSent=true"])
    walks.push([`${WEEK}&${other}`, /(start_ms>\?|archived=\?|absences_sent=\?|classroom=\?|creator_id=\?|training_id=\?)/]);

  for (const [qs, constrained] of walks) {
    it(`walks in (start, id) order and stops at the page: ${qs}`, async () => {
      for (const order of ["", "&sort=-startDateTime"]) {
        const q = parseListQuery(new URLSearchParams(qs));
        if (order) q.sort = [{ field: "startDateTime", order: "desc" }];
        const details = await plan(q);
        const all = details.join("\n");
        // Ascending: no sort at all. Descending start with the ascending id tie-break
        // (docs/reference.md): SQLite sorts only each run of equal starts ("LAST TERM"), still walking
        // in order and stopping at the page; a sort of every matching course is refused.
        expect(all, all).not.toMatch(order ? /TEMP B-TREE FOR (RIGHT PART OF )?ORDER BY/ : /TEMP B-TREE/);
        const search = details.find((d) => /^SEARCH courses USING/.test(d));
        expect(search, all).toMatch(/^SEARCH courses USING (COVERING )?INDEX \w+ \(school_id=\? AND /);
        expect(search, all).toMatch(constrained);
      }
    });
  }

  it("a long id-list search sorted by name then startDateTime, either direction, walks an index in that order", async () => {
    const studentId = Array.from({ length: 10_000 }, (_, i) => `stu_${i}`);
    for (const order of ["asc", "desc"] as const) {
      const details = await plan(
        parseSearchBody({
          studentId,
          sort: [
            { field: "name", order: "asc" },
            { field: "startDateTime", order },
          ],
        }),
      );
      const all = details.join("\n");
      // At most the id tie-break of equal (name, start) runs is sorted ("LAST TERM").
      expect(all, all).not.toMatch(/TEMP B-TREE FOR (RIGHT PART OF )?ORDER BY/);
      expect(all, all).toMatch(order === "asc" ? /courses_school_name_start_idx \(school_id=\?\)/ : /courses_school_name_start_desc_idx \(school_id=\?\)/);
    }
  });

  // Keyset paging (src/courses/sort.ts): the cursor's row bounds the first key, so the walk
  // starts at the cursor in the index and still stops at the page.
  const pastCursor = (q: ReturnType<typeof parseListQuery>) => ({ ...q, after: { values: [Date.UTC(2026, 8, 7, 8)], id: "crs_05" } });

  it("the default order after a cursor walks (school, start, id) from the cursor: no temp B-tree", async () => {
    for (const qs of ["", "limit=20", "includeStudents=true&includeTeachers=true&includeSurveyTemplates=true&includeTraining=true"]) {
      const details = await plan(pastCursor(parseListQuery(new URLSearchParams(qs))));
      const all = details.join("\n");
      // The includes' group_concat(ORDER BY) sorts each course's few related rows, not the page.
      expect(all, all).not.toMatch(/TEMP B-TREE FOR (RIGHT PART OF |LAST TERM OF )?ORDER BY/);
      expect(
        details.find((d) => /^SEARCH courses USING/.test(d)),
        all,
      ).toMatch(/^SEARCH courses USING (COVERING )?INDEX courses_school_start_idx \(school_id=\? AND start_ms>\?\)/);
    }
  });

  for (const [qs, constrained] of walks) {
    it(`after a cursor, still walks in (start, id) order and stops at the page: ${qs}`, async () => {
      for (const order of ["asc", "desc"] as const) {
        const q = pastCursor(parseListQuery(new URLSearchParams(qs)));
        q.sort = [{ field: "startDateTime", order }];
        const details = await plan(q);
        const all = details.join("\n");
        expect(all, all).not.toMatch(order === "desc" ? /TEMP B-TREE FOR (RIGHT PART OF )?ORDER BY/ : /TEMP B-TREE/);
        const search = details.find((d) => /^SEARCH courses USING/.test(d));
        expect(search, all).toMatch(constrained);
        // The cursor's start bounds the walk: it begins at the cursor, not at the school's first course.
        expect(search, all).toMatch(order === "asc" ? /start_ms>\?/ : /start_ms<\?/);
        for (const d of details) expect(d, all).not.toMatch(/^SCAN (courses|course_\w+)\b/);
      }
    });
  }
});
