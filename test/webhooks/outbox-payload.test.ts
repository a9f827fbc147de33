/**
 * A published outbox row keeps no payload (docs/architecture.md § The outbox; issue 38, item
 * 16): the statement that marks a row published empties its `payload`, on the write path's
 * own publish and on the sweep's, so the rows kept 7 days as marks weigh next to nothing and
 * a school's writes cannot fill its shard with events already handed to the hub.
 */
import { env } from "cloudflare:test";
import { expect, it } from "vitest";
import { sweepOutbox } from "../../src/events/outbox";
import { callJson } from "../support/helpers";
import { shardOf } from "../support/shards";
import { courseEvent, newSchool } from "../support/webhooks/harness";

/** The school's outbox rows: whether each is published and its payload's length (characters). */
async function outboxRows(schoolId: string): Promise<{ published: number; payload: number }[]> {
  const shard = await shardOf(schoolId);
  const { results } = await shard
    .prepare("SELECT published_at IS NOT NULL AS published, length(payload) AS payload FROM outbox WHERE school_id = ? ORDER BY rowid")
    .bind(schoolId)
    .all<{ published: number; payload: number }>();
  return results;
}

it("a write's own publish empties the payload of the rows it marks published", async () => {
  const { schoolId, key } = await newSchool("payload-write");
  const post = await callJson("/v3/courses", {
    method: "POST",
    key,
    json: { name: "Optique", startDateTime: "2026-11-02T08:00:00Z", endDateTime: "2026-11-02T10:00:00Z" },
  });
  expect(post.status).toBe(201);
  expect(await outboxRows(schoolId)).toEqual([{ published: 1, payload: 0 }]);
});

it("the sweep empties the payload of the rows it publishes", async () => {
  const { schoolId } = await newSchool("payload-sweep");
  const shard = await shardOf(schoolId);
  const event = courseEvent(schoolId, "course.updated");
  // A row whose write's own publish failed: written 31 s ago, unpublished, payload whole.
  await shard
    .prepare("INSERT INTO outbox (event_id, school_id, payload, created_at) VALUES (?, ?, ?, ?)")
    .bind(event.id, schoolId, JSON.stringify(event), Date.now() - 31_000)
    .run();
  expect((await outboxRows(schoolId))[0]).toEqual({ published: 0, payload: JSON.stringify(event).length });

  expect(await sweepOutbox(env, Date.now())).toMatchObject({ republished: 1, failed: 0 });
  expect(await outboxRows(schoolId)).toEqual([{ published: 1, payload: 0 }]);
});
