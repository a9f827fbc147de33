/**
 * The import's references (docs/operations.md § "Data import (operators)"): every id a course
 * names is in its school, in the file or in the database, as an API write requires
 * (400 GROUPS_NOT_FOUND …); one found nowhere is a problem naming the course, the id and its
 * JSON path. Here the lookup runs on SHARD_0, where the school's stored rows are.
 */
import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { validateImport } from "../../src/db/import";
import { openReferences, referenceProblems, storedReferences } from "../../src/db/import-references";
import { loadFixture, runSteps } from "../support/shards";

const SCHOOL = "sch_refs";

/** The problems of `data`'s references, looked up on SHARD_0. */
async function problemsOf(data: unknown) {
  const checked = validateImport(data);
  if (!checked.ok) throw new Error(JSON.stringify(checked.problems));
  const refs = openReferences(checked.file);
  const stored = (await runSteps<{ tbl: string; school_id: string; id: string }>(env.SHARD_0, storedReferences(refs))).flat();
  return referenceProblems(refs, stored);
}

const course = (over: Record<string, unknown>) => ({
  id: "crs_refs_1",
  schoolId: SCHOOL,
  name: "Maths",
  startDateTime: "2026-09-07T08:00:00.000Z",
  endDateTime: "2026-09-07T09:00:00.000Z",
  ...over,
});

describe("an imported course's references", () => {
  it("an id in neither the file nor the database is a problem naming the course and the id; stored and filed ids pass", async () => {
    await loadFixture(
      {
        schools: [{ id: SCHOOL, name: "Lycée Refs" }],
        groups: [{ id: "grp_stored", schoolId: SCHOOL, name: "Stored" }],
        students: [{ id: "stu_stored", schoolId: SCHOOL, firstName: "Léa", lastName: "Martin", email: "lea@example.com" }],
        // Another school's group of the same id: not this school's.
        trainings: [{ id: "trn_other", schoolId: "sch_refs_other", name: "BTS" }],
      },
      undefined,
      env,
      "SHARD_0",
    );
    const problems = await problemsOf({
      groups: [{ id: "grp_filed", schoolId: SCHOOL, name: "Filed" }],
      courses: [
        course({ groupIds: ["grp_stored", "grp_filed", "grp_nowhere"], studentIds: ["stu_stored", "stu_nowhere"] }),
        course({
          id: "crs_refs_2",
          trainingId: "trn_other",
          professors: [{ professorId: "prf_nowhere" }],
          surveyTemplateIds: ["svt_nowhere"],
        }),
      ],
    });
    expect(problems).toEqual([
      {
        path: "courses[0].groupIds[2]",
        message: 'course "crs_refs_1" names group "grp_nowhere", which is neither in the file nor in the database for school "sch_refs"',
      },
      {
        path: "courses[0].studentIds[1]",
        message: 'course "crs_refs_1" names student "stu_nowhere", which is neither in the file nor in the database for school "sch_refs"',
      },
      {
        path: "courses[1].trainingId",
        message: 'course "crs_refs_2" names training "trn_other", which is neither in the file nor in the database for school "sch_refs"',
      },
      {
        path: "courses[1].professors[0].professorId",
        message: 'course "crs_refs_2" names professor "prf_nowhere", which is neither in the file nor in the database for school "sch_refs"',
      },
      {
        path: "courses[1].surveyTemplateIds[0]",
        message: 'course "crs_refs_2" names survey template "svt_nowhere", which is neither in the file nor in the database for school "sch_refs"',
      },
    ]);
  });

  it("a file that defines every id it names needs no lookup", () => {
    const checked = validateImport({ groups: [{ id: "grp_a", schoolId: SCHOOL, name: "A" }], courses: [course({ groupIds: ["grp_a"] })] });
    expect(checked.ok && storedReferences(openReferences(checked.file))).toEqual([]);
  });

  it("a lookup reads at most 500 ids, one school's of one table", () => {
    const ids = Array.from({ length: 1001 }, (_, i) => `stu_${i}`);
    const checked = validateImport({ courses: [course({ studentIds: ids })] });
    expect(checked.ok && storedReferences(openReferences(checked.file)).length).toBe(3);
  });
});
