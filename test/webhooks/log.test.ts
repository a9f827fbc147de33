/**
 * The delivery log's filters (docs/reference.md § "Delivery log"; their query plans:
 * deliveries-plan.test.ts), auto-disable
 * (§ "Auto-disable", the `webhook.disabled` event) and the event catalog (§ "GET /v3/event-types").
 */
import { env } from "cloudflare:workers";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { openApiDocument } from "../../src/api";
import { hubFor } from "../../src/events/hub-client";
import { parseDisableAfterMs } from "../../src/webhooks/delivery/schedule";
import { call, callJson } from "../support/helpers";
import { courseEvent, drain, eventually, inCourier, inHub, makeAllDue, newSchool, register } from "../support/webhooks/harness";
import { SimulatedPlatform } from "../support/webhooks/platform-sim";
import { resetCourier } from "../support/webhooks/reset";

const rx = new SimulatedPlatform();
beforeAll(() => {
  rx.install();
});
afterAll(() => rx.restore());
afterEach(() => rx.expectWithinLimit());

const log = async (key: string, id: string, query = "") => {
  const { status, body } = await callJson(`/v3/webhooks/${id}/deliveries${query}`, { key });
  expect(status, JSON.stringify(body)).toBe(200);
  return body as { result: any[]; pagination: { page: number; limit: number; hasMore: boolean } };
};

describe("delivery log filters", () => {
  it("status (skipped included), eventType, eventId, since, until, page and limit, combined with AND", async () => {
    const { schoolId, key } = await newSchool("flt");
    const host = "flt.example.com";
    const hook = await register(key, `https://${host}/in`);
    const hub = hubFor(env, schoolId);
    const created = courseEvent(schoolId, "course.created", 1);
    await hub.publish([created]);
    await drain(schoolId);
    const t1 = new Date().toISOString();
    rx.on(host, 410);
    const updated = [courseEvent(schoolId, "course.updated", 2), courseEvent(schoolId, "course.updated", 3)];
    await hub.publish(updated);
    await drain(schoolId);
    await callJson(`/v3/webhooks/${hook.id}`, { method: "PATCH", key, json: { enabled: false } });
    const archived = courseEvent(schoolId, "course.archived", 4);
    await hub.publish([archived]);

    expect((await log(key, hook.id)).result).toHaveLength(4);
    expect((await log(key, hook.id, "?status=succeeded")).result.map((e) => e.eventId)).toEqual([created.id]);
    expect((await log(key, hook.id, "?status=failed")).result.map((e) => e.eventId).sort()).toEqual(updated.map((e) => e.id).sort());
    expect((await log(key, hook.id, "?status=skipped")).result).toMatchObject([
      { eventId: archived.id, attemptedAt: null, responseStatus: null, error: "registration disabled" },
    ]);
    expect((await log(key, hook.id, "?status=pending")).result).toEqual([]);
    expect((await log(key, hook.id, "?eventType=course.updated&status=failed")).result).toHaveLength(2);
    expect((await log(key, hook.id, "?eventType=course.created&status=failed")).result).toEqual([]);
    expect((await log(key, hook.id, `?eventId=${updated[0]!.id}`)).result.map((e) => e.eventId)).toEqual([updated[0]!.id]);
    expect((await log(key, hook.id, `?until=${t1}`)).result.map((e) => e.eventId)).toEqual([created.id]);
    expect((await log(key, hook.id, `?since=${t1}`)).result).toHaveLength(3);
    // A `+` offset that arrived as a space is read as `+`.
    const plus = new Date(Date.parse(t1)).toISOString().replace("Z", " 00:00");
    expect((await log(key, hook.id, `?since=${encodeURIComponent(plus)}`)).result).toHaveLength(3);
    const page1 = await log(key, hook.id, "?limit=3");
    const page2 = await log(key, hook.id, "?limit=3&page=2");
    expect(page1.pagination).toEqual({ page: 1, limit: 3, hasMore: true });
    expect(page2.pagination).toEqual({ page: 2, limit: 3, hasMore: false });
    expect([...page1.result, ...page2.result]).toEqual((await log(key, hook.id)).result);
  });
});

describe("auto-disable", () => {
  it("WEBHOOK_DISABLE_AFTER_HOURS is decimal hours", () => {
    expect(parseDisableAfterMs("0.01")).toBe(36_000);
    expect(parseDisableAfterMs("120")).toBe(432_000_000);
    expect(parseDisableAfterMs(undefined)).toBe(432_000_000);
    expect(parseDisableAfterMs("soon")).toBe(432_000_000);
  });

  it("after the span of nothing but failures it is disabled (failing) and webhook.disabled reaches the other subscribers only", async () => {
    const { schoolId, key } = await newSchool("auto");
    rx.on("auto-a.example.com", 500).on("auto-b.example.com", 200).on("auto-c.example.com", 200);
    const a = await register(key, "https://auto-a.example.com/in");
    const _b = await register(key, "https://auto-b.example.com/in", { events: ["webhook.disabled"] });
    const c = await register(key, "https://auto-c.example.com/in", { events: ["course.updated"] });
    await hubFor(env, schoolId).publish([courseEvent(schoolId)]);
    await drain(schoolId);
    // The failure streak is the courier's (its KV `failingSince`).
    const since = await inCourier(a.id, (_c, state) => state.storage.kv.get("failingSince") as number | undefined);
    expect(since).toBeGreaterThan(0);
    // Time passes (driven): the streak began 121 hours ago; the next failure crosses the line.
    // The courier reads its streak from storage when it starts again.
    const failingSince = Date.now() - 121 * 3_600_000;
    await inCourier(a.id, (_c, state) => state.storage.kv.put("failingSince", failingSince));
    await resetCourier(a.id);
    await makeAllDue(schoolId);
    await drain(schoolId);
    // The courier reports the streak; the hub disables the registration and publishes webhook.disabled.
    await eventually(async () => (await callJson(`/v3/webhooks/${a.id}`, { key })).body.result.enabled === false, "the auto-disable");
    await drain(schoolId);
    const list = (await callJson("/v3/webhooks", { key })).body.result as any[];
    expect(list.find((h) => h.id === a.id)).toMatchObject({ enabled: false, disabledReason: "failing", disabledAt: expect.any(String) });
    const got = rx.to("auto-b.example.com");
    expect(got.map((r) => r.event.type)).toEqual(["webhook.disabled"]);
    expect(got[0]!.event).toMatchObject({ schoolId, data: { webhookId: a.id, reason: "failing", failingSince: new Date(failingSince).toISOString() } });
    expect(rx.to("auto-c.example.com").map((r) => r.event.type)).toEqual(["course.updated"]);
    // As if by PATCH enabled: false: its pending retry ends skipped (once the courier holds
    // the disabled config: the hub's first call after the courier's restart may fail, and is retried).
    await eventually(async () => (await log(key, a.id, "?status=skipped")).result.length === 1, "the pending retry to end skipped");
    // Disabled, not deleted: its log stays and it can be recovered once enabled.
    expect((await log(key, a.id)).result.length).toBeGreaterThan(0);
    rx.on("auto-a.example.com", 200);
    await callJson(`/v3/webhooks/${a.id}`, { method: "PATCH", key, json: { enabled: true } });
    const since1h = new Date(Date.now() - 3_600_000).toISOString();
    expect((await callJson(`/v3/webhooks/${a.id}/recover`, { method: "POST", key, json: { since: since1h } })).body.result).toEqual({ queued: 1, exact: true });
    void c;
  });

  it("a success clears the failure streak", async () => {
    const { schoolId, key } = await newSchool("streak");
    const host = "streak.example.com";
    rx.on(host, 500);
    const a = await register(key, `https://${host}/in`);
    await hubFor(env, schoolId).publish([courseEvent(schoolId)]);
    await drain(schoolId);
    rx.on(host, 200);
    await makeAllDue(schoolId);
    await drain(schoolId);
    expect(await inCourier(a.id, (_c, state) => state.storage.kv.get("failingSince") ?? null)).toBeNull();
    const enabled = await inHub(schoolId, (_h, state) => state.storage.sql.exec(`SELECT enabled FROM webhooks WHERE id = ?`, a.id).one().enabled);
    expect(enabled).toBe(1);
  });
});

describe("GET /v3/event-types", () => {
  it("lists every event type with its description and JSON Schema, without authentication, as the OpenAPI webhooks", async () => {
    const res = await call("/v3/event-types");
    expect(res.status).toBe(200);
    const body = (await res.json()) as { result: { type: string; description: string; schema: any }[] };
    const doc = openApiDocument() as any;
    expect(body.result.map((t) => t.type).sort()).toEqual(Object.keys(doc.webhooks).sort());
    // A self-contained JSON Schema: the root is a $ref into its own $defs.
    const root = (schema: any) => schema.$defs[String(schema.$ref).split("/").pop()!];
    for (const entry of body.result) {
      expect(entry.description.length).toBeGreaterThan(10);
      const own = root(entry.schema);
      expect(own.properties.type).toMatchObject({ const: entry.type });
      // The same body as the OpenAPI document's `webhooks` entry.
      const ref = doc.webhooks[entry.type].post.requestBody.content["application/json"].schema.$ref as string;
      const documented = doc.components.schemas[ref.split("/").pop()!];
      expect(own.required.sort()).toEqual([...documented.required].sort());
      expect(Object.keys(own.properties.data.properties).sort()).toEqual(Object.keys(documented.properties.data.properties).sort());
    }
    const disabled = root(body.result.find((t) => t.type === "webhook.disabled")!.schema);
    expect(disabled.properties.data.required.sort()).toEqual(["failingSince", "reason", "webhookId"]);
    // docs/reference.md § "Auto-disable": reason "failing" (failingSince an instant), "gone" (a 410) or "receiver" (webhook-delivery: disable), failingSince null.
    const values = (schema: any): unknown[] =>
      schema.const !== undefined ? [schema.const] : (schema.enum ?? [...(schema.anyOf ?? []), ...(schema.oneOf ?? [])].flatMap(values));
    const types = (schema: any): unknown[] => [schema.type ?? [], ...[...(schema.anyOf ?? []), ...(schema.oneOf ?? [])].map(types)].flat();
    expect(values(disabled.properties.data.properties.reason).sort()).toEqual(["failing", "gone", "receiver"]);
    expect(types(disabled.properties.data.properties.failingSince)).toContain("null");
  });
});
