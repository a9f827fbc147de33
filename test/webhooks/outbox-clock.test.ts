/**
 * The outbox row's due time is the Worker's clock at the write, never the event's data
 * (docs/architecture.md § The outbox): an event's `createdAt` follows the course's
 * `updatedAt`, which an import may set anywhere — a course imported with `updatedAt` in 2099
 * whose write's publish failed is published by the sweep within the contract's delay (rows
 * unpublished for more than 30 s: docs/operations.md § The cron sweep), not in 2099.
 */
import { createExecutionContext, env } from "cloudflare:test";
import { expect, it } from "vitest";
import { failingPublishEnv } from "../../src/bench/faults";
import { hubFor } from "../../src/events/hub-client";
import { sweepOutbox } from "../../src/events/outbox";
import type { SchoolEvent } from "../../src/events/types";
import worker from "../../src/index";
import { loadFixture, shardOf } from "../support/shards";

/** `env` whose hubs cannot be reached: a write's own publish fails. */
const unreachable = failingPublishEnv(env);

it("a course whose updatedAt is in 2099, its publish failing: the sweep publishes the write's event 30 s later", async () => {
  const schoolId = "sch_clock";
  const key = "sk_test_clock_0123456789abcdefghijklmnopq";
  await loadFixture({
    schools: [{ id: schoolId, name: "École du futur", apiKeys: [key] }],
    courses: [
      {
        id: "crs_clock_1",
        schoolId,
        name: "Demain",
        startDateTime: "2099-03-02T08:00:00Z",
        endDateTime: "2099-03-02T10:00:00Z",
        createdAt: "2099-03-01T00:00:00Z",
        updatedAt: "2099-03-01T00:00:00Z",
      },
    ],
  });
  const patched = await worker.fetch(
    new Request("http://api.test/v3/courses/crs_clock_1", {
      method: "PATCH",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify({ name: "Aujourd'hui" }),
    }),
    unreachable,
    createExecutionContext(),
  );
  expect(patched.status).toBe(200);
  const shard = await shardOf(schoolId);
  const row = async () =>
    (await shard
      .prepare("SELECT payload, published_at FROM outbox WHERE school_id = ?")
      .bind(schoolId)
      .first<{ payload: string; published_at: number | null }>())!;
  const { payload, published_at } = await row();
  const event = JSON.parse(payload) as SchoolEvent;
  // The event itself follows the course's data: its createdAt is after the imported updatedAt.
  expect(event.createdAt > "2099-03-01T00:00:00").toBe(true);
  expect(published_at).toBeNull();

  // Not before 30 s; at 30 s and 1 ms (the next cron run) it is published.
  const written = Date.now();
  expect(await sweepOutbox(env, written - 1_000 + 30_000)).toMatchObject({ republished: 0 });
  expect(await sweepOutbox(env, written + 30_001)).toMatchObject({ schools: 1, republished: 1, failed: 0 });
  expect((await row()).published_at).not.toBeNull();
  // The school's hub holds it: publishing it again is a duplicate.
  expect(await hubFor(env, schoolId).publish([event])).toMatchObject({ accepted: 0, duplicates: 1 });
});
