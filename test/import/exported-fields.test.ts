/**
 * The import's fields for an export's rows (docs/operations.md § "Data import (operators)",
 * § "Taking one school's data out"): keys carried by their hash, a course's `version`, and the
 * school's `changeSeq`, each under the import's rules (a stored key keeps its state; a version
 * never goes back; only a course the import changes publishes an event).
 */
import { env } from "cloudflare:test";
import { beforeEach, describe, expect, it } from "vitest";
import { importFileSchema, validateImport } from "../../src/db/import";
import { hashedKeys, keyOwnershipProblems } from "../../src/db/import-rows";
import { importEvents } from "../../src/events/import-events";
import { sha256Hex } from "../../src/lib/crypto";
import { callJson } from "../support/helpers";
import { loadFixture, shardOf } from "../support/shards";

const KEY = "sk_live_exported_0123456789abcdefghijklmnopqrstuv";
const NOW = Date.parse("2026-08-01T00:00:00Z");

const keyHash = async (key: string, over: Record<string, unknown> = {}) => ({
  id: `key_${SCHOOL}`,
  hash: await sha256Hex(key),
  label: "ERP sync",
  last4: key.slice(-4),
  scopes: ["courses:read", "webhooks:read"],
  createdAt: "2026-03-01T08:00:00.000Z",
  revokedAt: null,
  expiresAt: "2030-01-01T00:00:00.000Z",
  ...over,
});

/** Each test its own school (storage is shared by the tests of a file). */
let SCHOOL = "";
let n = 0;
beforeEach(() => {
  SCHOOL = `sch_exported_${++n}`;
});

const course = (over: Record<string, unknown> = {}) => ({
  id: "crs_exported_1",
  schoolId: SCHOOL,
  name: "Algèbre",
  startDateTime: "2026-09-07T08:00:00.000Z",
  endDateTime: "2026-09-07T10:00:00.000Z",
  createdAt: "2026-01-02T03:04:05.678Z",
  updatedAt: "2026-05-06T07:08:09.012Z",
  version: 7,
  ...over,
});

const file = (school: Record<string, unknown>, courses: unknown[] = []) => ({ schools: [{ id: SCHOOL, name: "Exported", ...school }], courses });

const stored = async () =>
  (await shardOf(SCHOOL)).prepare("SELECT version, created_at, updated_at, change_seq, name FROM courses WHERE school_id = ?").bind(SCHOOL).first();
async function outboxRows(): Promise<{ type: string; changeCursor: string; data: { course: { version: number } } }[]> {
  const shard = await shardOf(SCHOOL);
  const { results } = await shard.prepare("SELECT payload FROM outbox WHERE school_id = ? ORDER BY rowid").bind(SCHOOL).all<{ payload: string }>();
  return results.map((r) => JSON.parse(r.payload));
}

describe("keys carried by their hash", () => {
  it("are stored as they were: id, label, last 4, scopes, creation, expiry; the plaintext key authenticates", async () => {
    await loadFixture(file({ apiKeyHashes: [await keyHash(KEY)] }));
    const row = await env.DIRECTORY.prepare("SELECT * FROM api_keys WHERE key_hash = ?")
      .bind(await sha256Hex(KEY))
      .first();
    expect(row).toMatchObject({
      school_id: SCHOOL,
      id: `key_${SCHOOL}`,
      label: "ERP sync",
      last4: "stuv",
      scopes: "courses:read webhooks:read",
      created_at: Date.parse("2026-03-01T08:00:00Z"),
      revoked_at: null,
      expires_at: Date.parse("2030-01-01T00:00:00Z"),
    });
    expect((await callJson("/v3/courses", { key: KEY })).status).toBe(200);
  });

  it("a revoked one stays revoked; importing it again keeps the stored state", async () => {
    const revoked = "sk_live_exported_revoked_0123456789abcdefghijklm";
    await loadFixture(file({ apiKeyHashes: [await keyHash(revoked, { revokedAt: "2026-04-01T00:00:00.000Z" })] }));
    expect((await callJson("/v3/courses", { key: revoked })).status).toBe(401);
    await loadFixture(file({ apiKeyHashes: [await keyHash(revoked, { id: "key_exported_2", label: "other", revokedAt: null })] }));
    const row = await env.DIRECTORY.prepare("SELECT id, label, revoked_at FROM api_keys WHERE key_hash = ?")
      .bind(await sha256Hex(revoked))
      .first();
    expect(row).toEqual({ id: `key_${SCHOOL}`, label: "ERP sync", revoked_at: Date.parse("2026-04-01T00:00:00Z") });
  });

  it("a hash stored for another school is an error with its JSON path", async () => {
    const parsed = importFileSchema.parse(file({ apiKeyHashes: [await keyHash(KEY)] }));
    expect(keyOwnershipProblems(hashedKeys(parsed), [{ key_hash: await sha256Hex(KEY), school_id: "sch_other" }])).toEqual([
      { path: "schools[0].apiKeyHashes[0]", message: expect.stringContaining('"sch_other"') },
    ]);
  });

  it("are validated with every problem's JSON path", async () => {
    const k = await keyHash(KEY);
    const r = validateImport(file({ apiKeyHashes: [{ ...k, hash: "ABC", scopes: ["everything"], label: "a\u001b]52;c;x\u0007" }, k] }));
    expect(r.ok).toBe(false);
    const paths = r.ok ? [] : r.problems.map((p) => p.path);
    expect(paths).toEqual(
      expect.arrayContaining([
        "schools[0].apiKeyHashes[0].hash",
        "schools[0].apiKeyHashes[0].scopes[0]",
        "schools[0].apiKeyHashes[0].label",
        "schools[0].apiKeyHashes[1].id",
      ]),
    );
  });
});

describe("a course's version", () => {
  it("a new course is written with the file's version and stamps, and publishes course.created", async () => {
    const key = "sk_live_exported_course_0123456789abcdefghijklmno";
    await loadFixture(file({ apiKeyHashes: [await keyHash(key)] }, [course()]), NOW, env, undefined, importEvents(NOW));
    expect(await stored()).toMatchObject({
      version: 7,
      created_at: Date.parse("2026-01-02T03:04:05.678Z"),
      updated_at: Date.parse("2026-05-06T07:08:09.012Z"),
    });
    const events = await outboxRows();
    expect(events.map((e) => [e.type, e.data.course.version])).toEqual([["course.created", 7]]);
    const listed = await callJson("/v3/courses/crs_exported_1", { key });
    expect([listed.status, listed.body?.result?.version]).toEqual([200, 7]);
  });

  it("importing it again, even with a higher version, changes and publishes nothing", async () => {
    await loadFixture(file({}, [course()]), NOW, env, undefined, importEvents(NOW));
    await loadFixture(file({}, [course({ version: 12 })]), NOW, env, undefined, importEvents(NOW));
    expect(await stored()).toMatchObject({ version: 7 });
    expect(await outboxRows()).toHaveLength(1);
  });

  it("a change raises the version by one, or to the file's if higher: it never goes back", async () => {
    await loadFixture(file({}, [course()]), NOW, env, undefined, importEvents(NOW));
    await loadFixture(file({}, [course({ name: "Algèbre 2", version: 3 })]), NOW, env, undefined, importEvents(NOW));
    expect(await stored()).toMatchObject({ version: 8, name: "Algèbre 2" });
    await loadFixture(file({}, [course({ name: "Algèbre 3", version: 20 })]), NOW, env, undefined, importEvents(NOW));
    expect(await stored()).toMatchObject({ version: 20, name: "Algèbre 3" });
    expect((await outboxRows()).map((e) => [e.type, e.data.course.version])).toEqual([
      ["course.created", 7],
      ["course.updated", 8],
      ["course.updated", 20],
    ]);
  });
});

describe("the school's changeSeq", () => {
  it("numbers the import's changes after it, and never lowers the school's sequence", async () => {
    await loadFixture(file({ changeSeq: 500 }, [course()]), NOW, env, undefined, importEvents(NOW));
    expect(await stored()).toMatchObject({ change_seq: 501 });
    await loadFixture(file({ changeSeq: 10 }, [course({ name: "Algèbre 2" })]), NOW, env, undefined, importEvents(NOW));
    expect(await stored()).toMatchObject({ change_seq: 502 });
  });
});
