/**
 * What production refuses on paths the seam (test/support/production-limits.ts) once let through:
 * the whole row behind `first(column)`, a result over 50 MB, tables created at runtime (through
 * D1 `exec`, or anywhere in a Durable Object statement's text), the puts of an asynchronous
 * transaction, key-value sizes as the platform serializes them, and 128 keys per key-value call.
 * Each refusal asserted is the seam's own: the local runtime accepts all of these.
 */
import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { inHub, newSchool, ownStorage } from "../support/webhooks/harness";

// https://developers.cloudflare.com/d1/platform/limits/ and
// https://developers.cloudflare.com/durable-objects/platform/limits/.
const MAX_ROW_BYTES = 2_000_000;
const MAX_KV_PAIR_BYTES = 2_000_000;
const MAX_KEYS_PER_CALL = 128;

const SEAM = /simulated production limit/;

describe("D1", () => {
  it("first(column) checks the whole row, not only the column it keeps", async () => {
    const half = "x".repeat(MAX_ROW_BYTES / 2);
    // Two strings and a number (8 bytes): 2,000,000 bytes, then 2,000,008.
    await expect(env.SHARD_0.prepare("SELECT ? AS a, ? AS b, 1 AS n").bind(half, half.slice(8)).first("n")).resolves.toBe(1);
    await expect(env.SHARD_0.prepare("SELECT ? AS a, ? AS b, 1 AS n").bind(half, half).first("n")).rejects.toThrow(
      /^D1_ERROR: string or blob too big: SQLITE_TOOBIG \(simulated production limit: a result row of 2000008 bytes/,
    );
  });

  it("a statement's result of 50 MB is refused, each row under 2 MB", async () => {
    // Rows of 1,999,988 bytes (a number and a 1,999,980-character string built in SQL):
    // 25 are 49,999,700 bytes, 26 are 51,999,688.
    const rows = (n: number) =>
      `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ${n}) SELECT i, hex(zeroblob(${MAX_ROW_BYTES / 2 - 10})) AS v FROM n`;
    expect((await env.SHARD_0.prepare(rows(25)).all()).results).toHaveLength(25);
    await expect(env.SHARD_0.prepare(rows(26)).all()).rejects.toThrow(/^D1_ERROR: query result exceeds the maximum size of 50 MB \(simulated production limit/);
  });

  it("a table created at runtime through exec, and a column added, get the row guards", async () => {
    await env.SHARD_1.exec("CREATE TABLE seam_runtime (a TEXT, b TEXT)");
    const half = "a".repeat(MAX_ROW_BYTES / 2);
    await env.SHARD_1.prepare("INSERT INTO seam_runtime VALUES (?, ?)").bind(half, half).run();
    await expect(env.SHARD_1.prepare("INSERT INTO seam_runtime VALUES (?, ?)").bind(half, `${half}b`).run()).rejects.toThrow(SEAM);
    await env.SHARD_1.prepare("ALTER TABLE seam_runtime ADD COLUMN c TEXT").run();
    await expect(env.SHARD_1.prepare("INSERT INTO seam_runtime VALUES (?, ?, ?)").bind(half, half, "c").run()).rejects.toThrow(SEAM);
    // A column can still be dropped: the guards step aside for the change.
    await env.SHARD_1.exec("ALTER TABLE seam_runtime DROP COLUMN c");
    await expect(env.SHARD_1.prepare("INSERT INTO seam_runtime VALUES (?, ?)").bind(half, `${half}b`).run()).rejects.toThrow(SEAM);
    expect((await env.SHARD_1.prepare("SELECT count(*) AS n FROM seam_runtime").first("n")) as number).toBe(1);
  });
});

describe("a Durable Object's storage", () => {
  it("a table created anywhere in a statement's text is guarded", async () => {
    const { schoolId } = await newSchool("gap-ddl");
    await inHub(schoolId, (hub) => {
      const sql = ownStorage(hub).sql;
      sql.exec("/* a comment first */ CREATE TABLE seam_late_a (a TEXT, b TEXT)");
      sql.exec("SELECT 1; CREATE TABLE seam_late_b (a TEXT, b TEXT)");
      const half = "a".repeat(MAX_ROW_BYTES / 2);
      for (const table of ["seam_late_a", "seam_late_b"]) {
        sql.exec(`INSERT INTO ${table} VALUES (?, ?)`, half, half);
        expect(() => sql.exec(`INSERT INTO ${table} VALUES (?, ?)`, half, `${half}b`)).toThrow(SEAM);
      }
    });
  });

  it("the puts of an asynchronous transaction are checked", async () => {
    const { schoolId } = await newSchool("gap-txn");
    await inHub(schoolId, async (hub) => {
      const storage = ownStorage(hub);
      const big = "v".repeat(MAX_KV_PAIR_BYTES);
      await expect(async () => storage.transaction((txn) => txn.put("k", big))).rejects.toThrow(
        /^Key and value combined cannot exceed 2 MB \(simulated production limit/,
      );
      await expect(async () => storage.transaction((txn) => txn.put({ k: big }))).rejects.toThrow(SEAM);
      expect(await storage.get("k")).toBeUndefined();
    });
  });

  it("a pair's size is the key's UTF-8 bytes and the value as V8 serializes it", async () => {
    const { schoolId } = await newSchool("gap-v8");
    await inHub(schoolId, async (hub) => {
      const storage = ownStorage(hub);
      // Latin-1 text: one byte a character (2,200,000 in UTF-8). Header 2, tag 1, length 3.
      storage.kv.put("k", "é".repeat(MAX_KV_PAIR_BYTES - 1 - 6));
      expect(() => storage.kv.put("k", "é".repeat(MAX_KV_PAIR_BYTES - 6))).toThrow(/"k" is 2000001 bytes/);
      // Other text: two bytes a character (2,700,000 in UTF-8), and a padding byte here.
      await storage.put("k", "€".repeat(900_000));
      await expect(async () => storage.put("k", "€".repeat(1_000_000))).rejects.toThrow(SEAM);
      // Numbers that are not small integers: 9 bytes each (1,500,000 bytes of JSON).
      const doubles = Array.from({ length: 300_000 }, () => 0.5);
      expect(() => storage.kv.put("k", doubles)).toThrow(/"k" is 27000\d\d bytes/);
      expect(storage.kv.get("k")).toHaveLength(900_000);
    });
  });

  it("128 keys per get, put or delete run; 129 are refused", async () => {
    const { schoolId } = await newSchool("gap-keys");
    await inHub(schoolId, async (hub) => {
      const storage = ownStorage(hub);
      const keys = (n: number) => Array.from({ length: n }, (_, i) => `key${i}`);
      await storage.put(Object.fromEntries(keys(MAX_KEYS_PER_CALL).map((k) => [k, 1])));
      expect((await storage.get(keys(MAX_KEYS_PER_CALL))).size).toBe(MAX_KEYS_PER_CALL);
      const tooMany = /^Maximum number of key value pairs is 128\. 129 pairs were provided\. \(simulated production limit/;
      await expect(async () => storage.put(Object.fromEntries(keys(MAX_KEYS_PER_CALL + 1).map((k) => [k, 1])))).rejects.toThrow(tooMany);
      await expect(async () => storage.get(keys(MAX_KEYS_PER_CALL + 1))).rejects.toThrow(tooMany);
      await expect(async () => storage.delete(keys(MAX_KEYS_PER_CALL + 1))).rejects.toThrow(tooMany);
      await expect(async () => storage.transaction((txn) => txn.delete(keys(MAX_KEYS_PER_CALL + 1)))).rejects.toThrow(tooMany);
      expect(await storage.delete(keys(MAX_KEYS_PER_CALL))).toBe(MAX_KEYS_PER_CALL);
    });
  });
});
