/**
 * The import model (API.md § "Data import"): the whole file validated first with every
 * problem's JSON path; upserts that leave the database unchanged when run twice.
 */
import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { validateImport } from "../src/db/import";
import { fixture } from "./fixtures";
import { loadFixture, IMPORT_TABLES as TABLES } from "./helpers";

async function snapshot(): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const t of TABLES) {
    const { results } = await env.DB.prepare(`SELECT * FROM ${t}`).all();
    results.sort((a, b) => (JSON.stringify(a) < JSON.stringify(b) ? -1 : 1));
    out[t] = JSON.stringify(results);
  }
  return out;
}

describe("validateImport", () => {
  it("accepts the fixture", () => {
    expect(validateImport(fixture).ok).toBe(true);
  });

  it("reports every problem with its JSON path", () => {
    const broken = {
      schools: [
        { id: "sch_1", name: "A", apiKeys: ["pk_nope", "sk_dup"] },
        { id: "sch_1", name: "B", apiKeys: ["sk_dup"] },
      ],
      students: [{ id: "stu 1", schoolId: "sch_1", firstName: "", lastName: "X", email: "not-an-email" }],
      courses: [
        { id: "crs_1", schoolId: "sch_1", name: "C", startDateTime: "2026-09-07T10:00:00", endDateTime: "2026-09-07T12:00:00Z", colour: "red" },
        {
          id: "crs_2",
          schoolId: "sch_1",
          name: "D",
          startDateTime: "2026-09-07T10:00:00Z",
          endDateTime: "2026-09-07T09:00:00Z",
          professors: [{ professorId: "prf_1" }, { professorId: "prf_1" }],
        },
      ],
      teachers: [],
    };
    const result = validateImport(broken);
    expect(result.ok).toBe(false);
    const paths = (result as { problems: { path: string }[] }).problems.map((p) => p.path).sort();
    expect(paths).toEqual([
      "$",
      "courses[0]",
      "courses[0].startDateTime",
      "courses[1].endDateTime",
      "courses[1].professors[1].professorId",
      "schools[0].apiKeys[0]",
      "schools[1].apiKeys[0]",
      "schools[1].id",
      "students[0].email",
      "students[0].firstName",
      "students[0].id",
    ]);
  });

  it("rejects what is not an object", () => {
    expect(validateImport([1, 2])).toMatchObject({ ok: false, problems: [{ path: "$" }] });
  });
});

describe("importing", () => {
  it("twice changes nothing; a relation list in the file replaces the stored one", async () => {
    await loadFixture(fixture);
    const once = await snapshot();
    await loadFixture(fixture);
    expect(await snapshot()).toEqual(once);
    const fewer = { ...fixture, courses: fixture.courses.map((c) => (c.id === "crs_06" ? { ...c, studentIds: ["stu_2"] } : c)) };
    await loadFixture(fewer);
    const { results } = await env.DB.prepare("SELECT student_id FROM course_students WHERE course_id = 'crs_06'").all();
    expect(results).toEqual([{ student_id: "stu_2" }]);
  });

  it("stores API keys only as SHA-256 hashes", async () => {
    await loadFixture(fixture);
    const { results } = await env.DB.prepare("SELECT key_hash FROM api_keys").all<{ key_hash: string }>();
    for (const r of results) expect(r.key_hash).toMatch(/^[0-9a-f]{64}$/);
    expect(JSON.stringify(await snapshot())).not.toContain("sk_test_");
  });
});
