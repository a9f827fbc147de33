/**
 * A change cursor survives a move between shards (docs/reference.md § "GET /v3/courses/changes"):
 * the school's change sequence moves with its courses, so a cursor taken before the move
 * answers, after it, the changes that followed it — none repeated, none skipped — and the
 * next write on the new shard takes the next number.
 */
import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { moveSchool } from "../../src/db/move";
import { shardBindings } from "../../src/db/shard-names";
import { shardFor } from "../../src/db/shards";
import { callJson } from "../support/helpers";
import { loadFixture, publishPayloads, shardNameOf } from "../support/shards";

const dbs = () => ({ directory: env.DIRECTORY, shards: Object.fromEntries(shardBindings(env).map((b) => [b, shardFor(env, b)])) });
const base = { startDateTime: "2026-10-01T10:00:00+02:00", endDateTime: "2026-10-01T12:00:00+02:00" };

describe("a change cursor across a move", () => {
  it("a cursor taken before the move answers the changes after it, on the new shard", async () => {
    const id = "sch_chgmove";
    const key = "sk_test_change_move_0123456789abcdefghijklmn";
    await loadFixture({ schools: [{ id, name: "École mobile", apiKeys: [key] }] }, undefined, env, "SHARD_0");
    const created: string[] = [];
    for (const name of ["A", "B", "C"]) {
      const { status, body } = await callJson("/v3/courses", { method: "POST", key, json: { ...base, name } });
      expect(status).toBe(201);
      created.push(body.result.id);
    }
    const [a, b, c] = created as [string, string, string];
    const before = (await callJson("/v3/courses/changes?after=chg_1", { key })).body.pagination.nextCursor;
    expect(before).toBe("chg_3");
    await callJson(`/v3/courses/${b}`, { method: "PATCH", key, json: { name: "B2" } });
    const cursor = "chg_2";

    await moveSchool(dbs(), id, "SHARD_1", { publish: publishPayloads });
    expect(await shardNameOf(id)).toBe("SHARD_1");
    expect(await env.SHARD_1.prepare("SELECT seq FROM school_changes WHERE school_id = ?").bind(id).first<number>("seq")).toBe(4);

    expect((await callJson(`/v3/courses/changes?after=${cursor}`, { key })).body).toMatchObject({ pagination: { nextCursor: "chg_4", hasMore: false } });
    expect((await callJson(`/v3/courses/changes?after=${cursor}`, { key })).body.result.map((r: { id: string }) => r.id)).toEqual([c, b]);
    // The next change takes the next number, not one the old shard gave already.
    expect((await callJson(`/v3/courses/${a}`, { method: "PATCH", key, json: { name: "A2" } })).status).toBe(200);
    const after = await callJson(`/v3/courses/changes?after=${before}`, { key });
    expect(after.body.result.map((r: { id: string }) => r.id)).toEqual([b, a]);
    expect(after.body.pagination).toEqual({ nextCursor: "chg_5", hasMore: false });
    expect((await callJson("/v3/courses?limit=1", { key })).body.pagination.changesCursor).toBe("chg_5");
  });
});
