/**
 * `npm run shards -- status` warns when one school holds more than 10 % of its shard's 10 GB
 * (docs/operations.md § Database shards), from each school's rows counted through the
 * tables' primary keys, each count capped at the rows that alone would pass the warning's
 * bytes: bounded however large the school (src/db/placement.ts `schoolSize`).
 */
import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { estimateSchoolBytes, type SchoolSize, schoolSize } from "../../src/db/placement";
import { loadFixture, runSteps } from "../support/shards";

const SCHOOL = "sch_size";

describe("a school's size on its shard", () => {
  it("counts its courses and relation rows, each capped at what passes the bytes asked", async () => {
    const studentIds = Array.from({ length: 30 }, (_, i) => `stu_size_${i}`);
    await loadFixture(
      {
        schools: [{ id: SCHOOL, name: "Lycée Size" }],
        students: studentIds.map((id) => ({ id, schoolId: SCHOOL, firstName: "A", lastName: "B", email: "a@example.com" })),
        groups: [{ id: "grp_size", schoolId: SCHOOL, name: "G" }],
        courses: [0, 1].map((i) => ({
          id: `crs_size_${i}`,
          schoolId: SCHOOL,
          name: "Maths",
          startDateTime: "2026-09-07T08:00:00.000Z",
          endDateTime: "2026-09-07T09:00:00.000Z",
          studentIds,
          groupIds: ["grp_size"],
        })),
      },
      undefined,
      env,
      "SHARD_0",
    );
    const size = async (capBytes: number) => (await runSteps<SchoolSize>(env.SHARD_0, [schoolSize(SCHOOL, capBytes)]))[0]![0]!;
    // Uncapped: 2 courses, 2 × (30 students + 1 group) relation rows; 2,500 bytes a course, 400 a relation row.
    const all = await size(1_000_000_000);
    expect(all).toEqual({ courses: 2, relations: 62 });
    expect(estimateSchoolBytes(all)).toBe(2 * 2_500 + 62 * 400);
    // Capped at 4,000 bytes: 2 courses (cap 2), at most 10 rows of each relation table.
    expect(await size(4_000)).toEqual({ courses: 2, relations: 10 + 2 });
    expect(estimateSchoolBytes(await size(4_000))).toBeGreaterThan(4_000);
  });
});
