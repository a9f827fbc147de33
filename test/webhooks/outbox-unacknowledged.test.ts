/**
 * A course write whose own publish failed (docs/reference.md § "POST /v3/courses — create a
 * course · PATCH /v3/courses/{id} — change one", docs/architecture.md § The outbox): it
 * answers its 2xx all the same — the write is committed, and an error would invite a client
 * to repeat a write that happened — its outbox rows stay unpublished, and the sweep
 * publishes them after 30 s. Its events are then accepted by the hub at that later moment,
 * ordered by that acceptance: a registration deleted meanwhile never receives them (the
 * deregistration promise), a live one does.
 */
import { createExecutionContext, env } from "cloudflare:test";
import { afterAll, beforeAll, expect, it } from "vitest";
import { failingPublishEnv } from "../../src/bench/faults";
import { sweepOutbox } from "../../src/events/outbox";
import worker from "../../src/index";
import { callJson } from "../support/helpers";
import { checkResponse } from "../support/openapi-check";
import { shardOf } from "../support/shards";
import { drain, newSchool, register } from "../support/webhooks/harness";
import { Receivers } from "../support/webhooks/receivers";

const receivers = new Receivers();
beforeAll(() => receivers.install());
afterAll(() => receivers.restore());

/** `env` whose hubs cannot be reached: a write's own publish fails. */
const unreachable = failingPublishEnv(env);

/** A course write sent to the Worker with the hub unreachable. */
const writeUnpublished = (key: string, method: string, path: string, json: unknown) =>
  worker.fetch(
    new Request(`http://api.test${path}`, {
      method,
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify(json),
    }),
    unreachable,
    createExecutionContext(),
  );

it("POST and PATCH answer 201 and 200; the sweep publishes their events; a registration deleted in between receives none", async () => {
  const { schoolId, key } = await newSchool("unack");
  const gone = await register(key, "https://deleted-before-sweep.example.com/hook");
  await register(key, "https://kept.example.com/hook");

  const post = await writeUnpublished(key, "POST", "/v3/courses", {
    name: "Optique",
    startDateTime: "2026-11-02T08:00:00Z",
    endDateTime: "2026-11-02T10:00:00Z",
  });
  expect(post.status).toBe(201);
  await checkResponse("POST", "http://api.test/v3/courses", post.clone());
  const id = ((await post.json()) as { result: { id: string } }).result.id;
  const patch = await writeUnpublished(key, "PATCH", `/v3/courses/${id}`, { archived: true });
  expect(patch.status).toBe(200);
  await checkResponse("PATCH", `http://api.test/v3/courses/${id}`, patch);

  const shard = await shardOf(schoolId);
  const unpublished = async () =>
    (await shard.prepare("SELECT count(*) AS n FROM outbox WHERE school_id = ? AND published_at IS NULL").bind(schoolId).first<{ n: number }>())!.n;
  // course.created, course.updated, course.archived: all waiting for the sweep.
  expect(await unpublished()).toBe(3);

  // The registration is deleted after the writes were answered and before their events were accepted.
  expect((await callJson(`/v3/webhooks/${gone.id}`, { method: "DELETE", key })).status).toBe(200);
  expect(await sweepOutbox(env, Date.now() + 30_001)).toMatchObject({ republished: 3, failed: 0 });
  expect(await unpublished()).toBe(0);

  await drain(schoolId);
  expect(receivers.to("kept.example.com").map((r) => r.event.type)).toEqual(["course.created", "course.updated", "course.archived"]);
  expect(receivers.to("deleted-before-sweep.example.com")).toEqual([]);
});
