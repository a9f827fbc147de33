/**
 * The `name` filter's trigram index (migrations/shard/0001_name_trigram.sql) follows every write:
 * created, renamed and imported courses are found by their new name only, and the filter
 * keeps its exact semantics (docs/reference.md § "GET /v3/courses": case- and accent-insensitive
 * substring of the name) through the index.
 */
import { env } from "cloudflare:test";
import { beforeAll, describe, expect, it } from "vitest";
import { nextPageCursor, parseListQuery } from "../../src/courses/filters";
import { selectCoursePage } from "../../src/courses/query";
import { getDb } from "../../src/db/client";
import { coursesA, fixture, KEY_A } from "../support/fixtures";
import { callJson, loadFixture } from "../support/helpers";
import { referenceList } from "../support/reference";
import { shardOf } from "../support/shards";

beforeAll(async () => {
  await loadFixture(fixture);
});

const found = async (name: string) =>
  ((await callJson(`/v3/courses?${new URLSearchParams({ name, limit: "100" })}`, { key: KEY_A })).body.result as { id: string }[]).map((c) => c.id);

describe("name filter through the trigram index", () => {
  it("finds a created course, then only under its new name after a rename", async () => {
    const created = await callJson("/v3/courses", {
      method: "POST",
      key: KEY_A,
      json: { name: "Zoologie « Œuvres » 50%_off", startDateTime: "2027-01-04T08:00:00Z", endDateTime: "2027-01-04T10:00:00Z" },
    });
    expect(created.status).toBe(201);
    const id = created.body.result.id as string;
    expect(await found("ZOOLOGIE")).toEqual([id]);
    expect(await found("« œuv")).toEqual([id]);
    expect(await found("50%_")).toEqual([id]);
    expect(await found("50%%")).toEqual([]);

    const renamed = await callJson(`/v3/courses/${id}`, { method: "PATCH", key: KEY_A, json: { name: "Botanique appliquée" } });
    expect(renamed.status).toBe(200);
    expect(await found("zoolog")).toEqual([]);
    expect(await found("botaniq")).toEqual([id]);
    expect(await found("APPLIQUEE")).toEqual([id]);
  });

  it("stays in sync with direct row changes (insert, update, delete)", async () => {
    const shard = await shardOf("sch_a");
    const row = (id: string, name: string) =>
      shard
        .prepare("INSERT INTO courses (school_id, id, name, name_folded, start_ms, end_ms, created_at, updated_at) VALUES ('sch_a', ?, ?, ?, 0, 1, 0, 0)")
        .bind(id, name, name.toLowerCase());
    await shard.batch([row("crs_fts_1", "Xylophone"), row("crs_fts_2", "Xylographie")]);
    expect(await found("xylo")).toEqual(["crs_fts_1", "crs_fts_2"]);
    await shard.prepare("UPDATE courses SET name = 'Harpe', name_folded = 'harpe' WHERE school_id = 'sch_a' AND id = 'crs_fts_1'").run();
    await shard.prepare("DELETE FROM courses WHERE school_id = 'sch_a' AND id = 'crs_fts_2'").run();
    expect(await found("xylo")).toEqual([]);
    expect(await found("harp")).toEqual(["crs_fts_1"]);
  });

  it("3+ code points read the trigram index; 1–2 check the school's names", async () => {
    const plan = async (name: string) => {
      const { sql, params } = selectCoursePage(getDb(env.SHARD_0), { schoolId: "h" }, parseListQuery(new URLSearchParams({ name }))).toSQL();
      const rows = await env.SHARD_0.prepare(`EXPLAIN QUERY PLAN ${sql}`)
        .bind(...params)
        .all<{ detail: string }>();
      return rows.results.map((r) => r.detail).join("\n");
    };
    expect(await plan("éco")).toMatch(/courses_name_fts VIRTUAL TABLE/);
    expect(await plan("éc")).not.toMatch(/courses_name_fts/);
  });

  const names = ["economie", "ALG", "phi", "ie ", "é%_", "zzq", "a\u0000b\u0000c", ...coursesA.map((c) => c.name.slice(1, 6))];

  it("both branches of a 3+ code point name (trigram index, walk in order) give the reference's pages", async () => {
    for (const name of names) {
      for (const page of [1, 2]) {
        const q = parseListQuery(new URLSearchParams({ name, limit: "2", page: String(page) }));
        const expected = referenceList({ name, limit: 2, page });
        for (const maxDocs of [-1, Number.MAX_SAFE_INTEGER]) {
          const rows = await selectCoursePage(getDb(await shardOf("sch_a")), { schoolId: "sch_a" }, q, maxDocs);
          expect({ name, page, maxDocs, ids: rows.slice(0, 2).map((r) => r.id), hasMore: rows.length > 2 }).toEqual({ name, page, maxDocs, ...expected });
        }
      }
    }
  });

  it("both branches of a 3+ code point name, walked by cursor one course a page, give the reference's order", async () => {
    const db = getDb(await shardOf("sch_a"));
    for (const name of names) {
      for (const maxDocs of [-1, Number.MAX_SAFE_INTEGER]) {
        const ids: string[] = [];
        let cursor: string | undefined;
        for (let n = 0; n < 20; n++) {
          const q = parseListQuery(new URLSearchParams({ name, limit: "1", ...(cursor ? { cursor } : {}) }));
          const rows = await selectCoursePage(db, { schoolId: "sch_a" }, q, maxDocs);
          ids.push(...rows.slice(0, 1).map((r) => r.id));
          if (rows.length <= 1) break;
          cursor = nextPageCursor(q, rows[0]!);
        }
        expect({ name, maxDocs, ids }).toEqual({ name, maxDocs, ids: referenceList({ name, limit: 100 }).ids });
      }
    }
  });
});
