/**
 * A move's cost is the school's rows, not the shard's (docs/architecture.md § Shards, § Invariants:
 * no scan of a growing table, no temp B-tree on a growing set): every statement that a move
 * and its undo run — the drain, the copy's pages and inserts, the checks, the deletes, on the
 * outbox and on every other table of the school — is read back with EXPLAIN QUERY PLAN on the
 * database it ran on, and none may scan a table or sort into a temp B-tree.
 */
import { env } from "cloudflare:test";
import { expect, it } from "vitest";
import { abortMove, moveSchool } from "../../src/db/move";
import { shardBindings } from "../../src/db/shard-names";
import { shardFor } from "../../src/db/shards";
import { recordingD1, refusedPlans, type SentStatement } from "../support/d1-statements";
import { callJson } from "../support/helpers";
import { loadFixture, publishPayloads } from "../support/shards";
import { writeHubUnreachable } from "../support/webhooks/unreachable";

it("no statement of a move, its drain or its undo scans a table or sorts into a temp B-tree", async () => {
  const id = "sch_moveplans";
  const key = "sk_test_moveplans_0123456789abcdefghijklmnop";
  const courses = Array.from({ length: 30 }, (_, i) => ({
    id: `crs_mp_${String(i).padStart(2, "0")}`,
    schoolId: id,
    name: `Séance ${i}`,
    startDateTime: "2026-09-14T08:00:00Z",
    endDateTime: "2026-09-14T10:00:00Z",
    groupIds: ["grp_mp"],
    professors: [{ professorId: "prf_mp" }],
  }));
  await loadFixture(
    {
      schools: [{ id, name: "École des plans", apiKeys: [key] }],
      groups: [{ id: "grp_mp", schoolId: id, name: "G" }],
      professors: [{ id: "prf_mp", schoolId: id, firstName: "P", lastName: "Q", email: "p@example.org" }],
      courses,
    },
    undefined,
    env,
    "SHARD_0",
  );
  // Outbox rows, published and not, and idempotency records: every table has rows to move.
  // The first two writes' own publish fails: their rows stay unpublished, payload whole.
  for (let i = 0; i < 4; i++) {
    const json = { name: `Écrit ${i}`, startDateTime: "2026-10-01T08:00:00Z", endDateTime: "2026-10-01T10:00:00Z", studentIds: [] };
    const headers = { "idempotency-key": `mp-${i}` };
    const r =
      i < 2
        ? await writeHubUnreachable(key, "POST", "/v3/courses", json, headers)
        : (await callJson("/v3/courses", { method: "POST", key, json, headers })).res;
    expect(r.status).toBe(201);
  }

  const recorded = Object.fromEntries(["DIRECTORY", ...shardBindings(env)].map((b) => [b, recordingD1(b === "DIRECTORY" ? env.DIRECTORY : shardFor(env, b))]));
  const dbs = { directory: recorded.DIRECTORY!.db, shards: Object.fromEntries(shardBindings(env).map((b) => [b, recorded[b]!.db])) };
  const publish = publishPayloads;
  // Small pages: the copy's and the checks' statements that read on from a page's last key run too.
  const limits = { pageRows: 7, batchBytes: 2_000 };
  await expect(
    moveSchool(dbs, id, "SHARD_1", {
      publish,
      limits,
      onStep: (step) => {
        if (step === "verified") throw new Error("interrupted");
      },
    }),
  ).rejects.toThrow("interrupted");
  expect(await abortMove(dbs, id)).toBe("undone");
  expect(await moveSchool(dbs, id, "SHARD_1", { publish, limits })).toMatchObject({ result: "moved" });

  for (const b of ["DIRECTORY", ...shardBindings(env)]) {
    expect(await refusedPlans(b === "DIRECTORY" ? env.DIRECTORY : shardFor(env, b), recorded[b]!.sent)).toEqual([]);
  }
  // And each search of a shard's table is led by the school, or is one row by its key (a
  // range on another key would walk every school's rows).
  for (const b of shardBindings(env)) {
    for (const q of new Set(recorded[b]!.sent.map((x) => x.sql))) {
      const values = recorded[b]!.sent.find((x) => x.sql === q)!.values;
      const { results } = await shardFor(env, b)
        .prepare(`EXPLAIN QUERY PLAN ${q}`)
        .bind(...values)
        .all<{ detail: string }>();
      const unled = results.map((r) => r.detail).filter((d) => /^SEARCH /.test(d) && !/\(school_id=\?|\((rowid|event_id)=\?\)|INTEGER PRIMARY KEY/.test(d));
      expect(unled, q).toEqual([]);
    }
  }
  // The statements read above include the outbox's drain and its marks, pages, inserts and deletes.
  const sent: SentStatement[] = Object.values(recorded).flatMap((r) => r.sent);
  const onOutbox = new Set(sent.filter((r) => /\boutbox\b(?!_)/.test(r.sql)).map((r) => r.sql));
  expect(new Set([...onOutbox].map((q) => q.split(" ")[0]))).toEqual(new Set(["SELECT", "INSERT", "DELETE", "UPDATE"]));
  expect(onOutbox.size).toBeGreaterThanOrEqual(5);
});
