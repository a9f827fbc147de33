/**
 * A move resumed after its switch (src/db/move.ts, docs/operations.md § Database shards): the
 * old shard marks the school `gone` before any of its rows is deleted, on every path — also
 * when the switch stopped after the directory named the new shard and before that mark — so
 * that no read answers a page of rows being deleted (docs/reference.md § Database shards: no
 * empty or partial page) and the old shard's size no longer counts the school.
 */
import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { getDb } from "../../src/db/client";
import { abortMove, moveSchool } from "../../src/db/move";
import { type ShardSize, shardSize } from "../../src/db/placement";
import { heldQuery, shardFor } from "../../src/db/shards";
import { callJson } from "../support/helpers";
import { loadFixture, runSteps } from "../support/shards";

/** A method of `o`, bound to it (the runtime's D1 objects need their own `this`). */
const own = (o: object, p: string | symbol) => {
  const v = Reflect.get(o, p);
  return typeof v === "function" ? v.bind(o) : v;
};

/** `d1` whose statements call `before(sql, args)` before each `run()`; a throw there stops the statement. */
function beforeRun(d1: D1Database, before: (sql: string, args: unknown[]) => Promise<void> | void): D1Database {
  return new Proxy(d1, {
    get: (db, p) =>
      p !== "prepare"
        ? own(db, p)
        : (sql: string) =>
            new Proxy(db.prepare(sql), {
              get: (stmt, q) =>
                q !== "bind"
                  ? own(stmt, q)
                  : (...args: unknown[]) =>
                      new Proxy(stmt.bind(...args), {
                        get: (bound, r) =>
                          r !== "run"
                            ? own(bound, r)
                            : async () => {
                                await before(sql, args);
                                return bound.run();
                              },
                      }),
            }),
  });
}

const old = () => shardFor(env, "SHARD_0");
/** The old shard's state of the school. */
const heldState = async (schoolId: string) =>
  (await old().prepare("SELECT state FROM held_schools WHERE school_id = ?").bind(schoolId).first<{ state: string }>())?.state;
/** Whether a read on the old shard would answer (its batch's word that the shard holds the school). */
const readable = async (schoolId: string) => (await heldQuery(getDb(old()), schoolId).all())[0]?.held;
const oldSize = async () => (await runSteps<ShardSize>(old(), [shardSize]))[0]![0]!;

let n = 0;
/** A school of 40 courses on SHARD_0, and its key. */
async function school(): Promise<{ id: string; key: string }> {
  n += 1;
  const id = `sch_resume${n}`;
  const key = `sk_test_resume_${n}_0123456789abcdefghijklmno`;
  const courses = Array.from({ length: 40 }, (_, i) => ({
    id: `crs_resume${n}_${String(i).padStart(2, "0")}`,
    schoolId: id,
    name: `Séance ${i}`,
    startDateTime: "2026-09-14T08:00:00Z",
    endDateTime: "2026-09-14T10:00:00Z",
  }));
  await loadFixture({ schools: [{ id, name: "École reprise", apiKeys: [key] }], courses }, undefined, env, "SHARD_0");
  return { id, key };
}

/** Moves the school to SHARD_1 with a switch that stops after the directory named SHARD_1, before the old shard marks it gone. */
async function cutSwitch(schoolId: string, resume: (shards: Record<string, D1Database>) => Promise<unknown>) {
  const cut = beforeRun(old(), (sql, args) => {
    if (sql.startsWith("INSERT INTO held_schools") && args[1] === "gone") throw new Error("cut before the old shard marks the school gone");
  });
  await expect(moveSchool({ directory: env.DIRECTORY, shards: { SHARD_0: cut, SHARD_1: shardFor(env, "SHARD_1") } }, schoolId, "SHARD_1")).rejects.toThrow(
    "cut before",
  );
  expect(await env.DIRECTORY.prepare("SELECT shard, move_step FROM schools WHERE id = ?").bind(schoolId).first()).toEqual({
    shard: "SHARD_1",
    move_step: "switched",
  });
  expect(await heldState(schoolId)).toBe("fenced");
  // What the old shard says before each statement that deletes the school's rows there.
  const seen: { readable: number | undefined; schools: number }[] = [];
  const watched = beforeRun(old(), async (sql) => {
    if (sql.startsWith("DELETE FROM")) seen.push({ readable: await readable(schoolId), schools: (await oldSize()).schools });
  });
  await resume({ SHARD_0: watched, SHARD_1: shardFor(env, "SHARD_1") });
  return seen;
}

describe("a move resumed after a switch that stopped before the old shard was marked gone", () => {
  it("moveSchool run again: no read answers from the old shard while its rows are deleted; its size no longer counts the school", async () => {
    const s = await school();
    const schoolsBefore = (await oldSize()).schools;
    const seen = await cutSwitch(s.id, async (shards) => {
      expect(await moveSchool({ directory: env.DIRECTORY, shards }, s.id, "SHARD_1")).toMatchObject({ result: "moved" });
    });
    // One DELETE per table of the school's rows at least, each after the mark.
    expect(seen.length).toBeGreaterThanOrEqual(12);
    expect(seen).toEqual(seen.map(() => ({ readable: 0, schools: schoolsBefore - 1 })));
    expect(await heldState(s.id)).toBe("gone");
    const r = await callJson("/v3/courses?limit=100", { key: s.key });
    expect([r.status, r.body.result.length]).toEqual([200, 40]);
  });

  it("--abort of the same state finishes the move the same way", async () => {
    const s = await school();
    const schoolsBefore = (await oldSize()).schools;
    const seen = await cutSwitch(s.id, async (shards) => {
      expect(await abortMove({ directory: env.DIRECTORY, shards }, s.id)).toBe("finished");
    });
    expect(seen.length).toBeGreaterThanOrEqual(12);
    expect(seen).toEqual(seen.map(() => ({ readable: 0, schools: schoolsBefore - 1 })));
  });
});
