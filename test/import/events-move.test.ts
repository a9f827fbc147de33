/**
 * An import's events and a move between shards (docs/operations.md § "Data import
 * (operators)", § Database shards): events an import left unpublished move with the school
 * (the CLI's move has no hub: they are copied, not published), reach the feed once from the
 * new shard, and the school's change numbers go on there where they stopped.
 */
import { env } from "cloudflare:test";
import { exports } from "cloudflare:workers";
import { expect, it } from "vitest";
import { moveSchool } from "../../src/db/move";
import { importEvents } from "../../src/events/import-events";
import { sweepOutbox } from "../../src/events/outbox";
import type { SchoolEvent } from "../../src/events/types";
import { BASE, loadFixture } from "../support/helpers";
import { shardNameOf } from "../support/shards";

const schoolId = "sch_impmove";
const key = `sk_test_${schoolId}_0123456789abcdefghijklmn`;
const course = (id: string, name: string) => ({ id, schoolId, name, startDateTime: "2026-09-14T08:00:00Z", endDateTime: "2026-09-14T10:00:00Z" });
const file = (courses: ReturnType<typeof course>[]) => ({ schools: [{ id: schoolId, name: "École mobile", apiKeys: [key] }], courses });

/** The school's feed (one page), read without the OpenAPI check (see test/import/events.test.ts). */
async function feed(): Promise<SchoolEvent[]> {
  const res = await exports.default.fetch(new Request(`${BASE}/v3/events?limit=100`, { headers: { authorization: `Bearer ${key}` } }));
  expect(res.status).toBe(200);
  return ((await res.json()) as { result: SchoolEvent[] }).result;
}

const rows = async (d1: D1Database) =>
  (await d1.prepare("SELECT event_id, payload, published_at FROM outbox WHERE school_id = ? ORDER BY event_id").bind(schoolId).all()).results;

it("a move publishes none of an import's events and loses none; numbers go on on the new shard", async () => {
  const first = Date.parse("2026-09-01T06:00:00Z");
  await loadFixture(file([course("crs_1", "Un"), course("crs_2", "Deux")]), first, env, "SHARD_0", importEvents(first));
  const before = await rows(env.SHARD_0);
  expect(before.length).toBe(2);
  expect(await moveSchool({ directory: env.DIRECTORY, shards: { SHARD_0: env.SHARD_0, SHARD_1: env.SHARD_1 } }, schoolId, "SHARD_1")).toMatchObject({
    result: "moved",
  });
  expect(await shardNameOf(schoolId)).toBe("SHARD_1");
  // Copied unpublished, nothing published by the move.
  expect(await rows(env.SHARD_1)).toEqual(before);
  expect(await feed()).toEqual([]);
  await sweepOutbox(env, Date.now() + 60_000);
  const published = await feed();
  expect(published.map((e) => e.id)).toEqual(before.map((r) => r.event_id));
  // A second sweep publishes nothing again.
  await sweepOutbox(env, Date.now() + 120_000);
  expect((await feed()).length).toBe(2);
  // The next import's change takes the number after the school's last, on the new shard.
  const second = Date.parse("2026-09-02T06:00:00Z");
  await loadFixture(file([course("crs_1", "Un bis"), course("crs_2", "Deux")]), second, env, undefined, importEvents(second));
  const { results } = await env.SHARD_1.prepare("SELECT payload FROM outbox WHERE school_id = ? AND published_at IS NULL")
    .bind(schoolId)
    .all<{ payload: string }>();
  expect(results.map((r) => (JSON.parse(r.payload) as { changeCursor: string; type: string }).changeCursor)).toEqual(["chg_3"]);
});
