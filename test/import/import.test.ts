/**
 * The import model (docs/operations.md § "Data import (operators)"): the whole file validated first with every
 * problem's JSON path; upserts that leave the database unchanged when run twice.
 */
import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { importFileSchema, validateImport } from "../../src/db/import";
import { importedKeys, keyOwnershipProblems, storedKeyOwners } from "../../src/db/import-rows";
import { renderBound } from "../../src/db/import-sql";
import { sha256Hex } from "../../src/lib/crypto";
import { fixture } from "../support/fixtures";
import { callJson, databasesOf, loadFixture, IMPORT_TABLES as TABLES } from "../support/helpers";
import { shardOf } from "../support/shards";

async function snapshot(): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const t of TABLES) {
    const results = [];
    for (const d1 of databasesOf(t)) results.push(...(await d1.prepare(`SELECT * FROM ${t}`).all()).results);
    results.sort((a, b) => (JSON.stringify(a) < JSON.stringify(b) ? -1 : 1));
    out[t] = JSON.stringify(results);
  }
  return out;
}

/** A well-formed key (`sk_` + 32 characters) listed twice. */
const DUP_KEY = "sk_live_dup_0123456789abcdefghijklmnop";

describe("validateImport", () => {
  it("accepts the fixture", () => {
    expect(validateImport(fixture).ok).toBe(true);
  });

  it("reports every problem with its JSON path", () => {
    const broken = {
      schools: [
        { id: "sch_1", name: "A", apiKeys: ["pk_nope", DUP_KEY] },
        { id: "sch_1", name: "B", apiKeys: [DUP_KEY] },
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

  it("refuses keys shorter than sk_ + 32 characters of [A-Za-z0-9_-], and sk_test_ keys with --remote", () => {
    const keys = [
      `sk_${"a".repeat(31)}`, // one short
      `sk_${"a".repeat(32)}`, // the shortest accepted
      `sk_live_${"b".repeat(17)}-${"c".repeat(8)}`, // 1 short, with a `-` (base64url, as minted)
      "sk_test_demo_4qX7mB2nR9tK5wE8yC3vL6pZ", // the README's demo key
    ];
    const file = { schools: [{ id: "sch_k", name: "K", apiKeys: keys }] };
    const problems = (r: ReturnType<typeof validateImport>) => (r.ok ? [] : r.problems.map((p) => p.path));
    expect(problems(validateImport(file))).toEqual(["schools[0].apiKeys[0]", "schools[0].apiKeys[2]"]);
    const remote = validateImport(file, { remote: true });
    expect(problems(remote)).toEqual(["schools[0].apiKeys[0]", "schools[0].apiKeys[2]", "schools[0].apiKeys[3]"]);
    expect(remote.ok ? "" : remote.problems[2]!.message).toMatch(/--remote refuses/);
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
    const { results } = await (await shardOf("sch_a")).prepare("SELECT student_id FROM course_students WHERE course_id = 'crs_06'").all();
    expect(results).toEqual([{ student_id: "stu_2" }]);
  });

  it("stores API keys only as SHA-256 hashes", async () => {
    await loadFixture(fixture);
    const { results } = await env.DIRECTORY.prepare("SELECT key_hash FROM api_keys").all<{ key_hash: string }>();
    for (const r of results) expect(r.key_hash).toMatch(/^[0-9a-f]{64}$/);
    expect(JSON.stringify(await snapshot())).not.toContain("sk_test_");
  });
});

describe("importing API keys (docs/operations.md § Data import (operators): a key already stored keeps its state)", () => {
  const KEY = "sk_test_import_rules_1";
  const school = (id: string, apiKeys: string[]) => ({ schools: [{ id, name: `School ${id}`, apiKeys }] });
  const row = async (key: string) =>
    env.DIRECTORY.prepare("SELECT * FROM api_keys WHERE key_hash = ?")
      .bind(await sha256Hex(key))
      .first();

  /** The problems the import finds for `data`'s keys against the test D1 (what `npm run import` runs through wrangler). */
  async function ownershipProblems(data: unknown) {
    const keys = await importedKeys(importFileSchema.parse(data));
    const stored = [];
    for (const s of renderBound(storedKeyOwners(keys.map((k) => k.hash)))) {
      stored.push(
        ...(
          await env.DIRECTORY.prepare(s.sql)
            .bind(...s.params)
            .all<{ key_hash: string; school_id: string }>()
        ).results,
      );
    }
    return keyOwnershipProblems(keys, stored);
  }

  it("stores a new key with an id and its last 4 characters", async () => {
    await loadFixture(school("sch_rules", [KEY]));
    expect(await row(KEY)).toMatchObject({
      school_id: "sch_rules",
      id: expect.stringMatching(/^key_[0-9A-Z]{26}$/),
      last4: "es_1",
      label: null,
      revoked_at: null,
    });
  });

  it("importing a key again never un-revokes it, nor changes its id", async () => {
    await loadFixture(school("sch_rules", [KEY]));
    const first = await row(KEY);
    await env.DIRECTORY.prepare("UPDATE api_keys SET revoked_at = 1234 WHERE key_hash = ?")
      .bind(await sha256Hex(KEY))
      .run();
    await loadFixture(school("sch_rules", [KEY]));
    expect(await row(KEY)).toEqual({ ...first, revoked_at: 1234 });
  });

  it("importing a key again never revokes it either", async () => {
    const live = "sk_test_import_rules_live";
    await loadFixture(school("sch_rules", [live]));
    await loadFixture(school("sch_rules", [live]));
    expect(await row(live)).toMatchObject({ revoked_at: null });
    expect((await callJson("/v3/webhooks", { key: live })).status).toBe(200);
  });

  it("a key stored for another school is an error with its JSON path; the store keeps it as it was", async () => {
    await loadFixture(school("sch_rules", [KEY]));
    const before = await row(KEY);
    const file = { schools: [{ id: "sch_rules_other", name: "Other", apiKeys: ["sk_test_import_rules_new", KEY] }] };
    expect(await ownershipProblems(file)).toEqual([{ path: "schools[0].apiKeys[1]", message: expect.stringContaining('"sch_rules"') }]);
    // The same school's keys and new keys are no problem.
    expect(await ownershipProblems(school("sch_rules", [KEY, "sk_test_import_rules_new"]))).toEqual([]);
    // Even were the rows written regardless, the stored key would keep its school.
    await loadFixture(file);
    expect(await row(KEY)).toEqual(before);
  });

  it("reads the owners of many keys in bounded statements (one JSON parameter each)", async () => {
    const hashes = Array.from({ length: 1201 }, (_, i) => i.toString(16).padStart(64, "0"));
    const statements = renderBound(storedKeyOwners(hashes));
    expect(statements).toHaveLength(3);
    for (const s of statements) expect(s.params).toHaveLength(1);
  });
});
