/**
 * The cron sweep walks every shard's outbox (docs/reference.md § Database shards): a school's
 * unpublished rows are republished whichever shard holds it, and a shard whose database
 * fails delays only its own schools.
 */
import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { shardFor } from "../../src/db/shards";
import { sweepOutbox } from "../../src/events/outbox";
import type { SchoolEvent } from "../../src/events/types";
import { loadFixture, recordingHubs } from "../support/shards";
import { courseEvent } from "../support/webhooks/harness";

const hour = 3_600_000;
const later = Date.now() + hour;

/** A school placed on `shard`, with `n` unpublished events an hour old in its outbox. */
async function schoolWithBacklog(id: string, shard: string, n: number): Promise<SchoolEvent[]> {
  await loadFixture({ schools: [{ id, name: id, apiKeys: [] }] }, undefined, env, shard);
  const events = Array.from({ length: n }, (_, i) => courseEvent(id, "course.updated", i));
  await shardFor(env, shard)
    .prepare("INSERT INTO outbox (event_id, school_id, payload, created_at) SELECT json_extract(value, '$.id'), ?, value, ? + key FROM json_each(?)")
    .bind(id, later - 2 * hour, JSON.stringify(events))
    .run();
  return events;
}

const unpublished = async (shard: string, schoolId: string) =>
  (await shardFor(env, shard).prepare("SELECT count(*) AS n FROM outbox WHERE school_id = ? AND published_at IS NULL").bind(schoolId).first<{ n: number }>())!
    .n;

describe("the cron sweep over the shards", () => {
  it("republishes the due rows of schools on both shards in one sweep", async () => {
    await schoolWithBacklog("sch_sweep_0", "SHARD_0", 3);
    await schoolWithBacklog("sch_sweep_1", "SHARD_1", 2);
    const published: string[] = [];
    expect(await sweepOutbox(recordingHubs(published), later)).toMatchObject({ schools: 2, republished: 5, failed: 0 });
    expect(published.sort()).toEqual(["sch_sweep_0", "sch_sweep_0", "sch_sweep_0", "sch_sweep_1", "sch_sweep_1"]);
    expect([await unpublished("SHARD_0", "sch_sweep_0"), await unpublished("SHARD_1", "sch_sweep_1")]).toEqual([0, 0]);
  });

  it("a shard whose database fails delays only its own schools", async () => {
    await schoolWithBacklog("sch_ok_0", "SHARD_0", 2);
    await schoolWithBacklog("sch_down_1", "SHARD_1", 2);
    const published: string[] = [];
    const broken = new Proxy(env.SHARD_1, {
      get: (target, prop) =>
        prop === "prepare" || prop === "withSession"
          ? () => {
              throw new Error("D1 unavailable");
            }
          : Reflect.get(target, prop),
    });
    const result = await sweepOutbox({ ...recordingHubs(published), SHARD_1: broken } as typeof env, later);
    expect(result).toMatchObject({ schools: 1, republished: 2 });
    expect(published).toEqual(["sch_ok_0", "sch_ok_0"]);
    expect([await unpublished("SHARD_0", "sch_ok_0"), await unpublished("SHARD_1", "sch_down_1")]).toEqual([0, 2]);
    // Once the shard is back, the next sweep publishes its school's rows.
    expect(await sweepOutbox(recordingHubs(published), later)).toMatchObject({ schools: 1, republished: 2 });
    expect(await unpublished("SHARD_1", "sch_down_1")).toBe(0);
  });
});

describe("the sweep's hub calls, across shards", () => {
  it("never more than `concurrency` hubs at a time for the whole sweep, whatever the shards", async () => {
    for (let i = 0; i < 4; i++) {
      await schoolWithBacklog(`sch_pool_0_${i}`, "SHARD_0", 1);
      await schoolWithBacklog(`sch_pool_1_${i}`, "SHARD_1", 1);
    }
    let running = 0;
    let most = 0;
    const SCHOOL_HUB = {
      idFromName: (name: string) => ({ name }),
      get: () => ({
        publish: async () => {
          running += 1;
          most = Math.max(most, running);
          await new Promise((resolve) => setTimeout(resolve, 20));
          running -= 1;
          return {};
        },
      }),
    };
    const slow = { ...env, SCHOOL_HUB } as unknown as typeof env;
    // Two shards with a sweep of 3 hubs at a time: 3, not 2 × 3 (nor 2 × 1).
    expect(await sweepOutbox(slow, later, { concurrency: 3 })).toMatchObject({ schools: 8, republished: 8, failed: 0 });
    expect(most).toBe(3);
  });
});
