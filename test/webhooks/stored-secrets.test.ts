/**
 * What the objects keep of secrets and targets (docs/reference.md § "DELETE /v3/webhooks/{id} (beta)", § "Conventions":
 * idempotent creation, § "POST /v3/webhooks" URL policy): a DELETE erases both secrets and
 * the header values, hub and courier alike; idempotency records (whose answer holds a secret)
 * are pruned by the hub's alarm after 24 h; and an attempt to a URL the policy in force
 * refuses is never sent, but logged failed with the reason.
 */
import { runDurableObjectAlarm } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { hubFor } from "../../src/events/hub-client";
import { courierFor } from "../../src/webhooks/rpc";
import { callJson } from "../support/helpers";
import { courierConfig, courseEvent, drain, inCourier, inHub, newSchool, register } from "../support/webhooks/harness";
import { SimulatedPlatform } from "../support/webhooks/platform-sim";

const rx = new SimulatedPlatform();
beforeAll(() => {
  rx.install();
});
afterAll(() => rx.restore());

describe("secrets", () => {
  it("DELETE erases the secret, a rotation's previous secret and the header values, in the hub and the courier", async () => {
    const { schoolId, key } = await newSchool("erase");
    const hook = await register(key, "https://erase.example.com/in", { headers: { "x-api-key": "erase-me-123" } });
    await callJson(`/v3/webhooks/${hook.id}/secret/rotate`, { method: "POST", key, json: { graceSeconds: 3600 } });
    await hubFor(env, schoolId).publish([courseEvent(schoolId)]);
    await drain(schoolId);
    expect(rx.to("erase.example.com")).toHaveLength(1);
    expect((await callJson(`/v3/webhooks/${hook.id}`, { method: "DELETE", key })).status).toBe(200);
    const row = await inHub(schoolId, (_h, state) =>
      state.storage.sql
        .exec<{ secret: string; previous_secret: string | null; headers: string }>(
          `SELECT secret, previous_secret, headers FROM webhooks WHERE id = ?`,
          hook.id,
        )
        .one(),
    );
    expect(row).toEqual({ secret: "", previous_secret: null, headers: "{}" });
    const kept = await inCourier(hook.id, (_c, state) => JSON.stringify([...state.storage.kv.list()]));
    expect(kept).not.toContain("whsec_");
    expect(kept).not.toContain("erase-me-123");
  });

  it("DELETE erases the idempotent answer too: a replay of its key answers 404 and creates nothing", async () => {
    const { schoolId, key } = await newSchool("idemdel");
    const post = () =>
      callJson("/v3/webhooks", {
        method: "POST",
        key,
        json: { url: "https://idemdel.example.com/in?token=t0ken" },
        headers: { "Idempotency-Key": "replay-after-delete" },
      });
    const created = await post();
    expect(created.status).toBe(201);
    const secret = created.body.result.secret as string;
    expect((await callJson(`/v3/webhooks/${created.body.result.id}`, { method: "DELETE", key })).status).toBe(200);
    const stored = await inHub(schoolId, (_h, state) => JSON.stringify(state.storage.sql.exec(`SELECT * FROM idempotency_keys`).toArray()));
    expect(stored).not.toContain(secret);
    expect(stored).not.toContain("t0ken");
    const replay = await post();
    expect([replay.status, replay.body.code]).toEqual([404, "WEBHOOK_NOT_FOUND"]);
    expect(JSON.stringify(replay.body)).not.toContain(secret);
    expect((await callJson("/v3/webhooks", { key })).body.result).toEqual([]);
    // The same key with another body is still a mismatch, as any reused key.
    const other = await callJson("/v3/webhooks", {
      method: "POST",
      key,
      json: { url: "https://idemdel.example.com/other" },
      headers: { "Idempotency-Key": "replay-after-delete" },
    });
    expect([other.status, other.body.code]).toEqual([422, "IDEMPOTENCY_KEY_MISMATCH"]);
  });

  it("an idempotency record, which holds the created secret, is pruned by the hub's alarm after 24 h", async () => {
    const { schoolId, key } = await newSchool("idemprune");
    const created = await callJson("/v3/webhooks", {
      method: "POST",
      key,
      json: { url: "https://idem.example.com/in" },
      headers: { "Idempotency-Key": "prune-me" },
    });
    expect(created.status).toBe(201);
    const count = () => inHub(schoolId, (_h, state) => state.storage.sql.exec<{ n: number }>(`SELECT COUNT(*) AS n FROM idempotency_keys`).one().n);
    expect(await count()).toBe(1);
    await runDurableObjectAlarm(hubFor(env, schoolId));
    expect(await count()).toBe(1);
    await inHub(schoolId, (_h, state) => {
      state.storage.sql.exec(`UPDATE idempotency_keys SET created_at = ?`, Date.now() - 25 * 3_600_000);
    });
    await runDurableObjectAlarm(hubFor(env, schoolId));
    expect(await count()).toBe(0);
  });
});

describe("the URL policy when sending", () => {
  it("an attempt to a URL the policy in force refuses is not sent and is logged failed with the reason", async () => {
    const { schoolId, key } = await newSchool("sendtime");
    const hook = await register(key, "https://sendtime.example.com/in");
    // As if written while WEBHOOK_ALLOW_INSECURE_URLS was true: the courier holds a loopback URL.
    await courierFor(env, hook.id).configure(courierConfig(schoolId, hook.id, { url: "http://127.0.0.1:8080/in", secret: hook.secret }));
    const event = courseEvent(schoolId);
    await hubFor(env, schoolId).publish([event]);
    await drain(schoolId);
    expect(rx.log.filter((r) => r.url.includes("127.0.0.1"))).toEqual([]);
    const log = (await callJson(`/v3/webhooks/${hook.id}/deliveries`, { key })).body.result;
    expect(log).toHaveLength(1);
    expect(log[0]).toMatchObject({ eventId: event.id, status: "failed", responseStatus: null, durationMs: null, nextAttemptAt: null });
    expect(log[0].error).toMatch(/^refused by the URL policy: /);
  });
});
