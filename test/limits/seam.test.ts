/**
 * The test seam refuses what production refuses (test/support/production-limits.ts, with the limits
 * pages it cites), on every path: D1 bindings (`prepare`, `batch`, `exec`, `dump`, sessions), the
 * Worker's own bindings (requests and the cron), a Durable Object's SQL and key-value storage, and
 * the stored rows of both. Each limit at its bound (accepted) and one past it (refused).
 */
import { createExecutionContext, createScheduledController, env, waitOnExecutionContext } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { useD1Seam } from "../../src/db/client";
import worker from "../../src/index";
import { useStorageSeam } from "../../src/webhooks/platform/platform";
import { fixture, KEY_A } from "../support/fixtures";
import { callJson, loadFixture } from "../support/helpers";
import { recentInvocations } from "../support/invocations";
import { inHub, newSchool, ownStorage } from "../support/webhooks/harness";

/** `n` SQL string literals, `'0', '1', …`. */
const literals = (n: number) => Array.from({ length: n }, (_, i) => `'${i % 10}'`).join(", ");
/** `n` parameter markers. */
const marks = (n: number) => Array.from({ length: n }, () => "?").join(", ");

/** A call of `fn` with `n` arguments (json_object takes key/value pairs: an odd count is refused by the seam before SQLite sees it). */
const callOf = (fn: string, n: number) => `SELECT ${fn}(${literals(n)}) AS v`;
const FUNCTIONS = ["concat", "json_object", "json_array", "coalesce"];

// https://developers.cloudflare.com/d1/platform/limits/ and
// https://developers.cloudflare.com/durable-objects/platform/limits/ § SQL storage limits.
const MAX_ARGUMENTS = 32;
const MAX_PARAMETERS = 100;
const MAX_SQL_BYTES = 100_000;
const MAX_VALUE_BYTES = 2_000_000;
const MAX_PATTERN_BYTES = 50;
// Durable Objects limits § SQLite-backed general limits: "Key and value combined cannot exceed 2 MB".
const MAX_KV_PAIR_BYTES = 2_000_000;

/** A statement of exactly `bytes` bytes. */
const statementOf = (bytes: number) => {
  const head = "SELECT 1 AS v ";
  return `${head}${" ".repeat(bytes - head.length)}`;
};

describe("D1: each limit at its bound and one past it", () => {
  const db = () => env.SHARD_0;

  for (const fn of FUNCTIONS) {
    it(`${fn}: 32 arguments run, 33 are refused as production refuses them`, async () => {
      await expect(db().prepare(callOf(fn, MAX_ARGUMENTS)).first("v")).resolves.toBeTruthy();
      await expect(
        db()
          .prepare(callOf(fn, MAX_ARGUMENTS + 1))
          .first(),
      ).rejects.toThrow(
        new RegExp(`^D1_ERROR: too many arguments on function ${fn} at offset 7: SQLITE_ERROR \\(simulated production limit: 33 arguments > 32\\)`),
      );
    });
  }

  it("arguments are counted per call: nested calls, subqueries, IN and VALUES lists, quotes and comments apart", async () => {
    const nested = `SELECT concat(concat(${literals(32)}), ${literals(31)}) AS v`;
    expect(await db().prepare(nested).first("v")).toHaveLength(63);
    const quoted = `SELECT concat('a,b', /* , , */ "v", -- , ,\n 'c)', (SELECT group_concat(x, ',' ORDER BY x) FROM (SELECT 1 AS x))) AS v FROM (SELECT 'z' AS v)`;
    expect(await db().prepare(quoted).first("v")).toBe("a,bzc)1");
    const lists = `SELECT 1 IN (${literals(40)}) AS v UNION ALL SELECT * FROM (VALUES (${literals(1)})) LIMIT 1`;
    expect(await db().prepare(lists).first("v")).toBe(0);
    await expect(
      db()
        .prepare(`SELECT concat('x', concat(${literals(33)})) AS v`)
        .first(),
    ).rejects.toThrow(/too many arguments on function concat at offset 19: SQLITE_ERROR \(simulated production limit: 33 arguments > 32\)/);
  });

  it("100 bound parameters run, 101 are refused", async () => {
    const ones = (n: number) => Array.from({ length: n }, () => "1");
    expect(
      await db()
        .prepare(`SELECT json_array(${marks(30)}) AS a, json_array(${marks(30)}) AS b, json_array(${marks(30)}) AS c, json_array(${marks(10)}) AS d`)
        .bind(...ones(MAX_PARAMETERS))
        .first("d"),
    ).toBe(
      `[${ones(10)
        .map((v) => `"${v}"`)
        .join(",")}]`,
    );
    await expect(
      db()
        .prepare(`SELECT json_array(${marks(30)}), json_array(${marks(30)}), json_array(${marks(30)}), json_array(${marks(11)})`)
        .bind(...ones(MAX_PARAMETERS + 1))
        .first(),
    ).rejects.toThrow(/too many SQL variables: SQLITE_RANGE \(simulated production limit: 101 bound parameters > 100\)/);
  });

  it("a statement of 100,000 bytes runs, 100,001 bytes are refused", async () => {
    expect(await db().prepare(statementOf(MAX_SQL_BYTES)).first("v")).toBe(1);
    await expect(
      db()
        .prepare(statementOf(MAX_SQL_BYTES + 1))
        .first(),
    ).rejects.toThrow(/^D1_ERROR: statement too long: SQLITE_TOOBIG \(simulated production limit: 100001 bytes of SQL > 100000\)/);
  });

  it("a LIKE or GLOB pattern of 50 bytes runs, 51 bytes are refused (literal or bound)", async () => {
    // 25 two-byte characters: 50 bytes.
    const pattern = "é".repeat(MAX_PATTERN_BYTES / 2);
    expect(await db().prepare("SELECT ? LIKE ? AS v").bind(pattern, pattern).first("v")).toBe(1);
    expect(
      await db()
        .prepare(`SELECT 'x' GLOB '${"x".repeat(MAX_PATTERN_BYTES)}' AS v`)
        .first("v"),
    ).toBe(0);
    await expect(db().prepare("SELECT 'é' LIKE ? AS v").bind(`${pattern}x`).first()).rejects.toThrow(
      /LIKE or GLOB pattern too complex: SQLITE_ERROR \(simulated production limit: a pattern of 5[12] bytes > 50\)/,
    );
    await expect(
      db()
        .prepare(`SELECT 'x' GLOB '${"x".repeat(MAX_PATTERN_BYTES + 1)}' AS v`)
        .first(),
    ).rejects.toThrow(/LIKE or GLOB pattern too complex: SQLITE_ERROR \(simulated production limit: a pattern of 5[12] bytes > 50\)/);
  });

  it("a bound value of 2,000,000 bytes runs, 2,000,001 are refused; so is a value built past it", async () => {
    expect(
      await db()
        .prepare("SELECT length(?) AS n")
        .bind("é".repeat(MAX_VALUE_BYTES / 2))
        .first("n"),
    ).toBe(MAX_VALUE_BYTES / 2);
    await expect(
      db()
        .prepare("SELECT length(?) AS n")
        .bind(`${"é".repeat(MAX_VALUE_BYTES / 2)}x`)
        .first(),
    ).rejects.toThrow(/^D1_ERROR: string or blob too big: SQLITE_TOOBIG \(simulated production limit/);
    const half = "x".repeat(MAX_VALUE_BYTES / 2);
    await expect(db().prepare("SELECT ? || ? AS v").bind(half, `${half}y`).first()).rejects.toThrow(/too big: SQLITE_TOOBIG \(simulated production limit/);
    await expect(
      db().batch([
        db()
          .prepare("SELECT zeroblob(?) AS z")
          .bind(MAX_VALUE_BYTES + 1),
      ]),
    ).rejects.toThrow(/too big: SQLITE_TOOBIG \(simulated production limit/);
    // A result row of two values under the limit each, over it together.
    await expect(db().prepare("SELECT ? AS a, ? AS b").bind(half, `${half}y`).first()).rejects.toThrow(/a result row of 2000001 bytes/);
    // Counted in UTF-8 bytes: two values of 400,000 "€" (1,200,000 bytes each), 2,400,000 together.
    const euros = "€".repeat(400_000);
    await expect(db().prepare("SELECT ? AS a, ? AS b").bind(euros, euros).first()).rejects.toThrow(/a result row of 2400000 bytes/);
  });

  it("a stored row of 2,000,000 bytes is written, one byte more is refused and nothing is written", async () => {
    // trainings (school_id, id, name): three texts, the whole row counted.
    const insert = (id: string, nameBytes: number) =>
      db().prepare("INSERT INTO trainings (school_id, id, name) VALUES (?, ?, ?)").bind("sch_row", id, "n".repeat(nameBytes)).run();
    const taken = "sch_row".length + "trn_a".length;
    await insert("trn_a", MAX_VALUE_BYTES - taken);
    await expect(insert("trn_b", MAX_VALUE_BYTES - taken + 1)).rejects.toThrow(/too big: SQLITE_TOOBIG \(simulated production limit/);
    // An UPDATE that grows a row past the limit too.
    await expect(db().prepare("UPDATE trainings SET name = name || 'x' WHERE school_id = 'sch_row'").run()).rejects.toThrow(
      /too big: SQLITE_TOOBIG \(simulated production limit/,
    );
    const { results } = await db().prepare("SELECT id, length(name) AS n FROM trainings WHERE school_id = 'sch_row'").all();
    expect(results).toEqual([{ id: "trn_a", n: MAX_VALUE_BYTES - taken }]);
  });

  it("every path: batch, exec, sessions, and dump (which production's D1 does not have)", async () => {
    const over = callOf("concat", MAX_ARGUMENTS + 1);
    await expect(db().batch([db().prepare("SELECT 1"), db().prepare(over)])).rejects.toThrow(
      /too many arguments on function concat at offset \d+: SQLITE_ERROR \(simulated production limit/,
    );
    await expect(db().exec(`SELECT 1; ${over}`)).rejects.toThrow(
      /too many arguments on function concat at offset \d+: SQLITE_ERROR \(simulated production limit/,
    );
    await expect(db().exec(statementOf(MAX_SQL_BYTES + 1))).rejects.toThrow(/statement too long: SQLITE_TOOBIG \(simulated production limit/);
    const session = db().withSession("first-primary");
    await expect(session.prepare(over).first()).rejects.toThrow(
      /too many arguments on function concat at offset \d+: SQLITE_ERROR \(simulated production limit/,
    );
    await expect(session.batch([session.prepare(over)])).rejects.toThrow(
      /too many arguments on function concat at offset \d+: SQLITE_ERROR \(simulated production limit/,
    );
    await expect(env.DIRECTORY.withSession().prepare(over).run()).rejects.toThrow(
      /too many arguments on function concat at offset \d+: SQLITE_ERROR \(simulated production limit/,
    );
    await expect(env.DIRECTORY.dump()).rejects.toThrow(/D1_DUMP_ERROR/);
  });
});

describe("the Worker's own D1 bindings go through the seam", () => {
  /** The D1 methods the last invocation of `kind` called, as the seam counted them. */
  const lastCalls = (kind: "fetch" | "scheduled") =>
    recentInvocations()
      .filter((i) => i.kind === kind)
      .at(-1)?.d1Calls ?? [];

  it("a request's credential check and page read", async () => {
    await loadFixture(fixture);
    expect((await callJson("/v3/courses?limit=1", { key: KEY_A })).status).toBe(200);
    expect(lastCalls("fetch")).toContain("batch");
  });

  it("the cron: the directory's pruning and PRAGMA optimize on every database", async () => {
    const exec = createExecutionContext();
    await worker.scheduled(createScheduledController({ scheduledTime: Date.UTC(2026, 10, 26, 12, 0), cron: "* * * * *" }), env, exec);
    await waitOnExecutionContext(exec);
    expect(lastCalls("scheduled").filter((c) => c === "exec")).toHaveLength(3);
    expect(lastCalls("scheduled")).toContain("run");
  });

  it("no test file can replace or remove the seams", () => {
    expect(() => useD1Seam((d1) => d1)).toThrow(/installed once/);
    expect(() => useStorageSeam((storage) => storage)).toThrow(/installed once/);
  });
});

describe("a Durable Object's storage: SQL and key-value", () => {
  it("each SQL limit at its bound and one past it, on the storage the object itself uses", async () => {
    const { schoolId } = await newSchool("seam");
    await inHub(schoolId, (hub) => {
      const sql = ownStorage(hub).sql;
      const one = (query: string, ...bindings: unknown[]) => sql.exec(query, ...bindings).one();
      for (const fn of FUNCTIONS) {
        expect(one(callOf(fn, MAX_ARGUMENTS)).v).toBeTruthy();
        expect(() => one(callOf(fn, MAX_ARGUMENTS + 1))).toThrow(
          new RegExp(`^too many arguments on function ${fn} at offset 7: SQLITE_ERROR \\(simulated production limit: 33 arguments > 32\\)`),
        );
      }
      expect(() => one(`SELECT json_array(${marks(MAX_PARAMETERS + 1)}) AS v`, ...Array.from({ length: MAX_PARAMETERS + 1 }, () => 1))).toThrow(
        /too many SQL variables: SQLITE_RANGE \(simulated production limit: 101 bound parameters > 100\)/,
      );
      expect(one(`SELECT json_array(${marks(32)}) AS v`, ...Array.from({ length: 32 }, () => 1)).v).toBeTruthy();
      expect(one(statementOf(MAX_SQL_BYTES)).v).toBe(1);
      expect(() => one(statementOf(MAX_SQL_BYTES + 1))).toThrow(
        /^statement too long: SQLITE_TOOBIG \(simulated production limit: 100001 bytes of SQL > 100000\)/,
      );
      expect(one("SELECT 'x' LIKE ? AS v", "x".repeat(MAX_PATTERN_BYTES)).v).toBe(0);
      expect(() => one("SELECT 'x' LIKE ? AS v", "x".repeat(MAX_PATTERN_BYTES + 1))).toThrow(
        /LIKE or GLOB pattern too complex: SQLITE_ERROR \(simulated production limit: a pattern of 5[12] bytes > 50\)/,
      );
      expect(one("SELECT length(?) AS n", "x".repeat(MAX_VALUE_BYTES)).n).toBe(MAX_VALUE_BYTES);
      expect(() => one("SELECT length(?) AS n", "x".repeat(MAX_VALUE_BYTES + 1))).toThrow(/string or blob too big: SQLITE_TOOBIG \(simulated production limit/);
      expect(() => one("SELECT ? || ? AS v", "x".repeat(MAX_VALUE_BYTES / 2), "y".repeat(MAX_VALUE_BYTES / 2 + 1))).toThrow(
        /too big: SQLITE_TOOBIG \(simulated production limit/,
      );
    });
  });

  it("a stored row of 2,000,000 bytes is written, one byte more is refused, in a table created later too", async () => {
    const { schoolId } = await newSchool("seam-row");
    await inHub(schoolId, (hub) => {
      const sql = ownStorage(hub).sql;
      sql.exec("CREATE TABLE seam_probe (a TEXT, b TEXT)");
      const half = MAX_VALUE_BYTES / 2;
      sql.exec("INSERT INTO seam_probe VALUES (?, ?)", "a".repeat(half), "b".repeat(half));
      expect(() => sql.exec("INSERT INTO seam_probe VALUES (?, ?)", "a".repeat(half), "b".repeat(half + 1))).toThrow(
        /too big: SQLITE_TOOBIG \(simulated production limit/,
      );
      expect(() => sql.exec("UPDATE seam_probe SET b = b || 'x'")).toThrow(/too big: SQLITE_TOOBIG \(simulated production limit/);
      sql.exec("ALTER TABLE seam_probe ADD COLUMN c TEXT");
      expect(() => sql.exec("INSERT INTO seam_probe VALUES (?, ?, ?)", "a".repeat(half), "b".repeat(half - 1), "cc")).toThrow(
        /too big: SQLITE_TOOBIG \(simulated production limit/,
      );
      expect(sql.exec("SELECT count(*) AS n, max(length(b)) AS b FROM seam_probe").one()).toEqual({ n: 1, b: half });
    });
  });

  it("a key-value pair of 2 MB is stored, one byte more is refused (sync and async API)", async () => {
    const { schoolId } = await newSchool("seam-kv");
    await inHub(schoolId, async (hub) => {
      const storage = ownStorage(hub);
      // As stored: the key's UTF-8 bytes, then the value serialized (a string: 2 bytes of header, a tag, a 3-byte length).
      const value = (bytes: number) => "v".repeat(bytes - 6);
      storage.kv.put("k", value(MAX_KV_PAIR_BYTES - 1));
      expect(() => storage.kv.put("k", value(MAX_KV_PAIR_BYTES))).toThrow(
        /^Key and value combined cannot exceed 2 MB \(simulated production limit: "k" is 2000001 bytes/,
      );
      await storage.put("k2", value(MAX_KV_PAIR_BYTES - 2));
      await expect(async () => storage.put({ k2: value(MAX_KV_PAIR_BYTES - 1) })).rejects.toThrow(
        /cannot exceed 2 MB \(simulated production limit: "k2" is 2000001 bytes/,
      );
      expect((storage.kv.get("k") as string).length).toBe(MAX_KV_PAIR_BYTES - 1 - 6);
      expect(((await storage.get("k2")) as string).length).toBe(MAX_KV_PAIR_BYTES - 2 - 6);
    });
  });
});
