/**
 * The benchmark entry's fault switch (src/bench/faults.ts), which `npm run test:restart`
 * relies on: with `x-bench-fail-publish: 1` a course write commits in D1 with its outbox row
 * and its own publish to the hub fails, so the row is left to the cron's sweep; without the
 * header the same write is published before it answers.
 */
import { createExecutionContext, env, waitOnExecutionContext } from "cloudflare:test";
import { expect, it } from "vitest";
import benchWorker from "../../src/bench/entry";
import { failingPublishEnv } from "../../src/bench/faults";
import { BASE } from "../support/helpers";
import { shardOf } from "../support/shards";
import { newSchool } from "../support/webhooks/harness";

const course = { name: "Fault switch", startDateTime: "2026-10-05T08:00:00Z", endDateTime: "2026-10-05T10:00:00Z" };

/** POST /v3/courses through the benchmark entry, with the switch on or off. */
async function write(key: string, failPublish: boolean): Promise<void> {
  const headers: Record<string, string> = { authorization: `Bearer ${key}`, "content-type": "application/json" };
  if (failPublish) headers["x-bench-fail-publish"] = "1";
  const exec = createExecutionContext();
  const req = new Request(`${BASE}/v3/courses`, { method: "POST", headers, body: JSON.stringify(course) });
  const res = await benchWorker.fetch(req as Request<unknown, IncomingRequestCfProperties>, env, exec);
  await res.arrayBuffer();
  await waitOnExecutionContext(exec);
}

/** The school's courses and outbox rows in its shard, and the events its hub's feed holds. */
async function state(schoolId: string) {
  const shard = await shardOf(schoolId);
  const count = async (sql: string) => (await shard.prepare(sql).bind(schoolId).first<{ n: number }>())!.n;
  const feed = await env.SCHOOL_HUB.get(env.SCHOOL_HUB.idFromName(schoolId)).readFeed({ limit: 100, types: null, waitMs: 0 });
  return {
    courses: await count("SELECT count(*) AS n FROM courses WHERE school_id = ?"),
    unpublished: await count("SELECT count(*) AS n FROM outbox WHERE school_id = ? AND published_at IS NULL"),
    inHub: "expired" in feed ? -1 : feed.bodies.length,
  };
}

it("x-bench-fail-publish: 1 — the write commits, its outbox row stays unpublished, the hub has nothing", async () => {
  const { schoolId, key } = await newSchool("fault");
  await write(key, true);
  expect(await state(schoolId)).toEqual({ courses: 1, unpublished: 1, inHub: 0 });
});

it("without the header the same write is published before it answers", async () => {
  const { schoolId, key } = await newSchool("nofault");
  await write(key, false);
  expect(await state(schoolId)).toEqual({ courses: 1, unpublished: 0, inHub: 1 });
});

it("the switch refuses publish with its own error and nothing else: the hub is reached through it", async () => {
  const { schoolId } = await newSchool("through");
  const hubs = failingPublishEnv(env).SCHOOL_HUB;
  const hub = hubs.get(hubs.idFromName(schoolId));
  await expect(hub.publish([])).rejects.toThrow("bench fault switch: this request's publish to the hub was made to fail");
  const feed = await hub.readFeed({ limit: 100, types: null, waitMs: 0 });
  expect("expired" in feed ? feed : feed.bodies).toEqual([]);
});
