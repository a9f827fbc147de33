/**
 * A school's export (src/db/export.ts, docs/operations.md § "Taking one school's data out"):
 * an import file that validates and that, imported again, changes nothing; read in bounded
 * statements through indexes (no scan, no temp B-tree), a course with more relation rows than
 * one statement carries included. The round trip into a fresh deployment, listings compared,
 * is `npm run test:export` (scripts/selftest-export.ts).
 */
import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { type ExportCounts, ExportRefused, exportSchool } from "../../src/db/export";
import { validateImport } from "../../src/db/import";
import { importEvents } from "../../src/events/import-events";
import { fixture, KEY_A } from "../support/fixtures";
import { callJson } from "../support/helpers";
import { loadFixture, shardOf } from "../support/shards";

/** Runs the export of `schoolId`, recording every statement's SQL text. */
async function exported(schoolId: string): Promise<{ file: any; sql: Set<string>; counts: ExportCounts }> {
  const sql = new Set<string>();
  const record = (d1: D1Database): D1Database =>
    new Proxy(d1, {
      get(target, prop) {
        if (prop === "prepare")
          return (text: string) => {
            sql.add(text);
            return target.prepare(text);
          };
        const v = Reflect.get(target, prop);
        return typeof v === "function" ? v.bind(target) : v;
      },
    });
  const counts: ExportCounts = { courses: 0, keys: 0, statements: 0 };
  let text = "";
  for await (const piece of exportSchool(
    { directory: record(env.DIRECTORY), shards: { SHARD_0: record(env.SHARD_0), SHARD_1: record(env.SHARD_1) } },
    schoolId,
    counts,
  ))
    text += piece;
  return { file: JSON.parse(text), sql, counts };
}

/** Every row of the school, every table of its shard and its keys, as sorted JSON lines. */
async function rowsOf(schoolId: string): Promise<string[]> {
  const shard = await shardOf(schoolId);
  const { results: tables } = await shard
    .prepare("SELECT m.name FROM sqlite_master m WHERE m.type = 'table' AND EXISTS (SELECT 1 FROM pragma_table_info(m.name) WHERE name = 'school_id')")
    .all<{ name: string }>();
  const out: string[] = [];
  for (const { name } of tables) {
    const { results } = await shard.prepare(`SELECT * FROM "${name}" WHERE school_id = ?`).bind(schoolId).all();
    out.push(...results.map((r) => `${name} ${JSON.stringify(r)}`));
  }
  const { results: keys } = await env.DIRECTORY.prepare("SELECT * FROM api_keys WHERE school_id = ?").bind(schoolId).all();
  out.push(...keys.map((r) => `api_keys ${JSON.stringify(r)}`));
  return out.sort();
}

describe("a school's export", () => {
  it("is an import file of the school's rows that, imported again, changes and publishes nothing", async () => {
    await loadFixture(fixture);
    const before = await rowsOf("sch_a");
    const { file, counts } = await exported("sch_a");
    const checked = validateImport(file);
    expect(checked.ok && checked.file.courses.length).toBe(fixture.courses.filter((c) => c.schoolId === "sch_a").length);
    expect(counts.courses).toBe(file.courses.length);
    expect(file.schools).toHaveLength(1);
    expect(file.schools[0].apiKeys).toEqual([]);
    expect(file.schools[0].apiKeyHashes.map((k: { hash: string }) => k.hash)).toHaveLength(counts.keys);
    expect(JSON.stringify(file)).not.toContain(KEY_A);
    const now = Date.parse("2026-09-01T00:00:00Z");
    await loadFixture(file, now, env, undefined, importEvents(now));
    expect(await rowsOf("sch_a")).toEqual(before);
  });

  it("states each course as GET /v3/courses/{id} lists it", async () => {
    await loadFixture(fixture);
    const { file } = await exported("sch_a");
    for (const c of file.courses.slice(0, 5)) {
      const { body } = await callJson(`/v3/courses/${c.id}`, { key: KEY_A });
      const r = body.result;
      expect([c.name, c.startDateTime, c.endDateTime, c.version, c.createdAt, c.updatedAt, c.groupIds]).toEqual([
        r.name,
        r.startDateTime,
        r.endDateTime,
        r.version,
        r.createdAt,
        r.updatedAt,
        r.groupIds,
      ]);
    }
  });

  it("refuses an unknown school before writing anything", async () => {
    const pieces = exportSchool({ directory: env.DIRECTORY, shards: { SHARD_0: env.SHARD_0 } }, "sch_nowhere");
    await expect(pieces.next()).rejects.toThrow(ExportRefused);
  });

  it("reads a course of 10,001 students in several statements, and keeps its pages' plans on indexes", async () => {
    const students = Array.from({ length: 10_001 }, (_, i) => `stu_big_${String(i).padStart(5, "0")}`);
    await loadFixture({
      schools: [{ id: "sch_big", name: "Big" }],
      students: students.map((id) => ({ id, schoolId: "sch_big", firstName: "A", lastName: "B", email: "a@example.org" })),
      courses: ["crs_a", "crs_b", "crs_c"].map((id) => ({
        id,
        schoolId: "sch_big",
        name: id,
        startDateTime: "2026-09-07T08:00:00Z",
        endDateTime: "2026-09-07T10:00:00Z",
        studentIds: id === "crs_b" ? students : students.slice(0, 3),
      })),
    });
    const { file, sql } = await exported("sch_big");
    expect(file.courses.map((c: { id: string; studentIds: string[] }) => [c.id, c.studentIds.length])).toEqual([
      ["crs_a", 3],
      ["crs_b", 10_001],
      ["crs_c", 3],
    ]);
    expect(file.courses[1].studentIds).toEqual(students);
    const refused: string[] = [];
    for (const text of sql) {
      const params = Array.from({ length: (text.match(/\?/g) ?? []).length }, () => "x");
      const db = text.includes("api_keys") || text.includes("FROM schools") ? env.DIRECTORY : env.SHARD_0;
      const { results } = await db
        .prepare(`EXPLAIN QUERY PLAN ${text}`)
        .bind(...params)
        .all<{ detail: string }>();
      for (const { detail } of results) if (/TEMP B-TREE|\bSCAN\b/.test(detail)) refused.push(`${text.slice(0, 70)}: ${detail}`);
      expect(text.length).toBeLessThan(100_000);
      expect(params.length).toBeLessThanOrEqual(100);
    }
    expect(refused).toEqual([]);
  });
});
