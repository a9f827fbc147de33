/**
 * The plans of an import batch with its events (docs/architecture.md § Invariants: no scan
 * of a growing table, no temp B-tree on a growing set): every statement reads the school's
 * tables through their indexes by course, walking only the batch's own rows (the scratch table
 * `import_course_states`, at most one batch of courses, and its VALUES lists), so that a
 * batch costs its courses, never the school's.
 */
import { env } from "cloudflare:test";
import { expect, it } from "vitest";
import { importFileSchema } from "../../src/db/import";
import { shardSteps } from "../../src/db/import-rows";
import { renderBound } from "../../src/db/import-sql";
import { importEvents } from "../../src/events/import-events";
import { fixture } from "../support/fixtures";
import { loadFixture } from "../support/helpers";

/** A search of a school's table by the school alone (but its one row of `school_changes`): a walk of all its rows. */
const WHOLE_SCHOOL = /^SEARCH (?!s |import_course_states |school_changes )\S+ USING (COVERING )?INDEX \S+ \(school_id=\?\)$/;

/** Plan lines that walk a batch's own rows: the scratch table (`s`, `n` its numbered copy), VALUES, bound lists, subqueries of one course. */
const BATCH_ROWS = /^SCAN (s|n|import_course_states|\d+-ROW VALUES CLAUSE|json_each|CONSTANT ROW|\(subquery-\d+\))(\s|$)/;

it("walks only the batch's rows: no other scan, no temp B-tree", async () => {
  await loadFixture(fixture);
  const now = Date.parse("2026-09-01T06:00:00Z");
  const file = importFileSchema.parse(fixture);
  // A changed course of each school, so that the file's schools have events to write.
  const changed = { ...file, courses: file.courses.map((c) => ({ ...c, name: `${c.name} (2)` })) };
  const refused: string[] = [];
  for (const s of renderBound(shardSteps(changed, now, importEvents(now)))) {
    const { results } = await env.SHARD_0.prepare(`EXPLAIN QUERY PLAN ${s.sql}`)
      .bind(...s.params)
      .all<{ detail: string }>();
    for (const { detail } of results) {
      // A stored record part sorts one course's own list (at most the contract's 1,000 rows), as the listing does.
      const ownList = detail === "USE TEMP B-TREE FOR group_concat(ORDER BY)" && s.sql.startsWith("INSERT INTO course_parts");
      if ((/TEMP B-TREE/.test(detail) && !ownList) || WHOLE_SCHOOL.test(detail) || (/\bSCAN\b/.test(detail) && !BATCH_ROWS.test(detail)))
        refused.push(`${s.sql.slice(0, 60)}: ${detail}`);
    }
  }
  expect(refused).toEqual([]);
});
