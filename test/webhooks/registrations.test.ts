/**
 * The webhook endpoints (docs/reference.md § "Webhook registrations"): bodies, envelopes and errors.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { EVENT_TYPES } from "../../src/events/types";
import { call, callJson } from "../support/helpers";
import { drain, newSchool, register } from "../support/webhooks/harness";
import { SimulatedPlatform } from "../support/webhooks/platform-sim";

const rx = new SimulatedPlatform();
beforeAll(() => {
  rx.install();
});
afterAll(() => rx.restore());
// Every dispatch stayed within the platform's limit (6 waiting per I/O context, none queued).
afterEach(() => rx.expectWithinLimit());

describe("POST /v3/webhooks", () => {
  let key: string;
  beforeAll(async () => {
    ({ key } = await newSchool("api"));
  });

  it("creates a registration: 201, location, secret shown once", async () => {
    const { status, body, res } = await callJson("/v3/webhooks", {
      method: "POST",
      key,
      json: { url: "https://hooks.example.com/in", events: ["course.created", "course.archived"], description: "ERP sync" },
    });
    expect(status).toBe(201);
    const hook = body.result;
    expect(hook).toEqual({
      id: expect.stringMatching(/^wh_[0-9A-Z]{26}$/),
      url: "https://hooks.example.com/in",
      events: ["course.created", "course.archived"],
      description: "ERP sync",
      filter: null,
      headerNames: [],
      maxPerSecond: null,
      ordering: "course",
      signatureScheme: "v1",
      publicKey: null,
      payload: "full",
      scopes: ["courses:read", "courses:write", "students:read", "webhooks:read", "webhooks:write", "events:read", "portal"],
      enabled: true,
      disabledReason: null,
      disabledAt: null,
      failingSince: null,
      createdBy: expect.stringMatching(/^key_/),
      updatedBy: hook.createdBy,
      createdAt: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/),
      updatedAt: hook.createdAt,
      secret: expect.stringMatching(/^whsec_[A-Za-z0-9+/]{43}=$/),
    });
    expect(atob(hook.secret.slice("whsec_".length))).toHaveLength(32);
    expect(res.headers.get("location")).toBe(`/v3/webhooks/${hook.id}`);
  });

  it.each([
    [{}, ["*"]],
    [{ events: ["*"] }, ["*"]],
    [{ events: ["course.updated", "course.updated"] }, ["course.updated"]],
    [{ events: [...EVENT_TYPES] }, [...EVENT_TYPES]],
  ])("events %j are stored as %j; description defaults to null", async (extra, events) => {
    const { status, body } = await callJson("/v3/webhooks", { method: "POST", key, json: { url: "https://e.example.com/", ...extra } });
    expect(status).toBe(201);
    expect(body.result.events).toEqual(events);
    expect(body.result.description).toBeNull();
  });

  it.each([
    [{ url: "https://e.example.com", events: ["course.deleted"] }, "events[0]"],
    [{ url: "https://e.example.com", events: ["webhook.test"] }, "events[0]"],
    [{ url: "https://e.example.com", events: [] }, "events"],
    [{ url: "https://e.example.com", events: ["*", "course.created"] }, "events"],
    [{ url: "https://e.example.com", events: "course.created" }, "events"],
    [{ url: 42 }, "url"],
    [{ events: ["*"] }, "url"],
    [{ url: "https://e.example.com", description: "x".repeat(501) }, "description"],
    [{ url: "https://e.example.com", description: 3 }, "description"],
  ])("400 VALIDATION_ERROR for %j at %s", async (json, path) => {
    const { status, body } = await callJson("/v3/webhooks", { method: "POST", key, json });
    expect(status).toBe(400);
    expect(body.code).toBe("VALIDATION_ERROR");
    expect(body.details).toContainEqual({ path, message: expect.any(String) });
  });

  it("reports every problem at once", async () => {
    const { body } = await callJson("/v3/webhooks", { method: "POST", key, json: { url: 1, events: ["nope"] } });
    expect(body.details.map((d: { path: string }) => d.path).sort()).toEqual(["events[0]", "url"]);
  });

  it("400 UNKNOWN_PARAMETER for an unknown body field, with a close match", async () => {
    const { status, body } = await callJson("/v3/webhooks", { method: "POST", key, json: { url: "https://e.example.com", event: ["*"] } });
    expect(status).toBe(400);
    expect(body.code).toBe("UNKNOWN_PARAMETER");
    expect(body.message).toContain(`did you mean "events"`);
    expect(body.message).toContain("url, events, description");
  });

  for (const proto of ["__proto__", "constructor", "prototype"]) {
    it(`400 UNKNOWN_PARAMETER for a ${proto} key, and no registration is created`, async () => {
      const before = (await callJson("/v3/webhooks", { key })).body.result.length;
      const { status, body } = await callJson("/v3/webhooks", {
        method: "POST",
        key,
        body: `{"url":"https://hooks.example.com/proto","${proto}":{"events":["*"]}}`,
        headers: { "content-type": "application/json" },
      });
      expect([status, body.code, body.details]).toEqual([400, "UNKNOWN_PARAMETER", [{ path: proto, message: "unknown" }]]);
      expect((await callJson("/v3/webhooks", { key })).body.result).toHaveLength(before);
    });
  }

  it("400 UNKNOWN_PARAMETER for a query parameter", async () => {
    const { status, body } = await callJson("/v3/webhooks?dryRun=true", { method: "POST", key, json: { url: "https://e.example.com" } });
    expect(status).toBe(400);
    expect(body.code).toBe("UNKNOWN_PARAMETER");
  });

  it("400 for a body that is not an object, 400 INVALID_JSON, 415", async () => {
    expect((await callJson("/v3/webhooks", { method: "POST", key, json: ["https://e.example.com"] })).body.code).toBe("VALIDATION_ERROR");
    const bad = await callJson("/v3/webhooks", { method: "POST", key, body: "{", headers: { "content-type": "application/json" } });
    expect([bad.status, bad.body.code]).toEqual([400, "INVALID_JSON"]);
    const text = await callJson("/v3/webhooks", { method: "POST", key, body: "url=x", headers: { "content-type": "text/plain" } });
    expect([text.status, text.body.code]).toEqual([415, "UNSUPPORTED_MEDIA_TYPE"]);
  });

  it("401 without a valid key, before looking at the body", async () => {
    const { status, body } = await callJson("/v3/webhooks", { method: "POST", key: "sk_test_nobody", json: { nope: 1 } });
    expect([status, body.code]).toEqual([401, "UNAUTHORIZED"]);
  });

  it("409 WEBHOOK_LIMIT_REACHED at 50; a delete frees a slot", async () => {
    const school = await newSchool("limit");
    const created = [];
    for (let i = 0; i < 50; i++) created.push(await register(school.key, `https://e${i}.example.com/`));
    const { status, body } = await callJson("/v3/webhooks", { method: "POST", key: school.key, json: { url: "https://e50.example.com/" } });
    expect([status, body.code]).toEqual([409, "WEBHOOK_LIMIT_REACHED"]);
    expect((await call(`/v3/webhooks/${created[7]!.id}`, { method: "DELETE", key: school.key })).status).toBe(200);
    await register(school.key, "https://e50.example.com/");
    const list = await callJson("/v3/webhooks", { key: school.key });
    expect(list.body.result).toHaveLength(50);
  });
});

describe("GET /v3/webhooks", () => {
  it("lists the school's registrations oldest first, without secrets", async () => {
    const { key } = await newSchool("list");
    expect((await callJson("/v3/webhooks", { key })).body).toEqual({
      status: "success",
      result: [],
      pagination: { page: 1, limit: 50, hasMore: false },
    });
    const a = await register(key, "https://a.example.com/", { description: "first" });
    const b = await register(key, "https://b.example.com/", { events: ["course.created"] });
    const c = await register(key, "https://c.example.com/");
    const { status, body } = await callJson("/v3/webhooks", { key });
    expect(status).toBe(200);
    const strip = ({ secret: _secret, ...rest }: typeof a) => rest;
    expect(body.result).toEqual([strip(a), strip(b), strip(c)]);
    expect(JSON.stringify(body)).not.toContain("whsec_");
    expect(body.pagination).toEqual({ page: 1, limit: 50, hasMore: false });
  });

  it("400 UNKNOWN_PARAMETER for any query parameter; 401 without key", async () => {
    const { key } = await newSchool("list");
    const { status, body } = await callJson("/v3/webhooks?page=2", { key });
    expect([status, body.code]).toEqual([400, "UNKNOWN_PARAMETER"]);
    expect((await callJson("/v3/webhooks")).status).toBe(401);
  });
});

describe("PATCH of url on a registration with custom headers (header values are bound to their URL)", () => {
  it("400 VALIDATION_ERROR naming headers without headers; with the same values, new ones or null, the url changes", async () => {
    const { key } = await newSchool("hdr");
    const hook = await register(key, "https://erp.example.com/in", { headers: { "x-api-key": "secret-value-1" } });
    const moved = await callJson(`/v3/webhooks/${hook.id}`, { method: "PATCH", key, json: { url: "https://attacker.example.net/in" } });
    expect([moved.status, moved.body.code, moved.body.details.map((d: { path: string }) => d.path)]).toEqual([400, "VALIDATION_ERROR", ["headers"]]);
    // Nothing changed.
    expect((await callJson(`/v3/webhooks/${hook.id}`, { key })).body.result).toMatchObject({ url: "https://erp.example.com/in", headerNames: ["x-api-key"] });

    for (const [i, headers, names] of [
      [1, { "x-api-key": "secret-value-1" }, ["x-api-key"]],
      [2, { authorization: "Bearer new" }, ["authorization"]],
      [3, null, []],
    ] as const) {
      const url = `https://erp${i}.example.com/in`;
      const ok = await callJson(`/v3/webhooks/${hook.id}`, { method: "PATCH", key, json: { url, headers } });
      expect([ok.status, ok.body.result.url, ok.body.result.headerNames]).toEqual([200, url, names]);
    }
    // Without custom headers, a url alone is fine.
    const bare = await callJson(`/v3/webhooks/${hook.id}`, { method: "PATCH", key, json: { url: "https://erp.example.com/again" } });
    expect(bare.status).toBe(200);
  });
});

describe("DELETE /v3/webhooks/{id}", () => {
  it("answers { id, deleted: true }, then 404 for a second delete; the id stays unknown everywhere", async () => {
    const { key } = await newSchool("del");
    const a = await register(key, "https://a.example.com/");
    const b = await register(key, "https://b.example.com/");
    const first = await callJson(`/v3/webhooks/${a.id}`, { method: "DELETE", key });
    expect(first.status).toBe(200);
    expect(first.body.result).toEqual({ id: a.id, deleted: true });
    const second = await callJson(`/v3/webhooks/${a.id}`, { method: "DELETE", key });
    expect([second.status, second.body.code]).toEqual([404, "WEBHOOK_NOT_FOUND"]);
    expect(second.body.message).toContain(a.id);
    expect((await callJson(`/v3/webhooks/${a.id}/deliveries`, { key })).body.code).toBe("WEBHOOK_NOT_FOUND");
    expect((await callJson(`/v3/webhooks/${a.id}/test`, { method: "POST", key })).body.code).toBe("WEBHOOK_NOT_FOUND");
    expect((await callJson("/v3/webhooks", { key })).body.result.map((h: { id: string }) => h.id)).toEqual([b.id]);
  });

  it.each(["wh_unknown", "not%20an%20id", "x".repeat(65), "%E0%A4%A"])("404 WEBHOOK_NOT_FOUND for %s", async (id) => {
    const { key } = await newSchool("del");
    const { status, body } = await callJson(`/v3/webhooks/${id}`, { method: "DELETE", key });
    expect([status, body.code]).toEqual([404, "WEBHOOK_NOT_FOUND"]);
  });

  it("405 for another method on the path", async () => {
    const { key } = await newSchool("del");
    const res = await call("/v3/webhooks/wh_x", { method: "PUT", key, json: {} });
    expect(res.status).toBe(405);
    expect(res.headers.get("allow")).toContain("DELETE");
    expect(res.headers.get("allow")).toContain("PATCH");
  });
});

describe("schools are isolated", () => {
  it("another school's registration is a 404 everywhere and absent from lists", async () => {
    const x = await newSchool("iso");
    const y = await newSchool("iso");
    const hook = await register(x.key, "https://x.example.com/");
    expect((await callJson("/v3/webhooks", { key: y.key })).body.result).toEqual([]);
    for (const [path, method] of [
      [`/v3/webhooks/${hook.id}`, "DELETE"],
      [`/v3/webhooks/${hook.id}/deliveries`, "GET"],
      [`/v3/webhooks/${hook.id}/test`, "POST"],
    ] as const) {
      const { status, body } = await callJson(path, { method, key: y.key });
      expect([status, body.code]).toEqual([404, "WEBHOOK_NOT_FOUND"]);
    }
    // Still alive in its own school.
    expect((await callJson("/v3/webhooks", { key: x.key })).body.result.map((h: { id: string }) => h.id)).toEqual([hook.id]);
  });
});

describe("POST /v3/webhooks/{id}/test and GET /v3/webhooks/{id}/deliveries", () => {
  it("queues a webhook.test event for this registration only, then lists the attempt", async () => {
    const { schoolId, key } = await newSchool("test");
    const a = await register(key, "https://test-a.example.com/in");
    await register(key, "https://test-b.example.com/in");
    const sent = await callJson(`/v3/webhooks/${a.id}/test`, { method: "POST", key });
    expect(sent.status).toBe(202);
    expect(sent.body.result).toEqual({ eventId: expect.stringMatching(/^evt_/), webhookId: a.id, type: "webhook.test" });
    await drain(schoolId);
    const got = rx.to("test-a.example.com");
    expect(got).toHaveLength(1);
    expect(got[0]!.event).toEqual({
      id: sent.body.result.eventId,
      type: "webhook.test",
      createdAt: expect.any(String),
      schoolId,
      data: { webhookId: a.id },
    });
    expect(rx.to("test-b.example.com")).toHaveLength(0);

    const { status, body } = await callJson(`/v3/webhooks/${a.id}/deliveries`, { key });
    expect(status).toBe(200);
    expect(body.result).toEqual([
      {
        eventId: sent.body.result.eventId,
        eventType: "webhook.test",
        attempt: 1,
        status: "succeeded",
        trigger: "test",
        url: "https://test-a.example.com/in",
        responseStatus: 204,
        error: null,
        durationMs: expect.any(Number),
        responseBody: "",
        attemptedAt: expect.stringMatching(/Z$/),
        nextAttemptAt: null,
      },
    ]);
    expect(body.pagination).toEqual({ page: 1, limit: 100, hasMore: false });
  });

  it("accepts an empty JSON object as body, rejects fields and non-JSON", async () => {
    const { key } = await newSchool("test");
    const a = await register(key, "https://test-c.example.com/in");
    expect((await callJson(`/v3/webhooks/${a.id}/test`, { method: "POST", key, json: {} })).status).toBe(202);
    const empty = { "content-type": "application/json", "content-length": "0" };
    expect((await callJson(`/v3/webhooks/${a.id}/test`, { method: "POST", key, headers: empty })).status).toBe(202);
    const extra = await callJson(`/v3/webhooks/${a.id}/test`, { method: "POST", key, json: { payload: 1 } });
    expect([extra.status, extra.body.code]).toEqual([400, "UNKNOWN_PARAMETER"]);
    const text = await callJson(`/v3/webhooks/${a.id}/test`, { method: "POST", key, body: "hi", headers: { "content-type": "text/plain" } });
    expect(text.status).toBe(415);
  });

  it("rejects a __proto__, constructor or prototype key in the test body (400 UNKNOWN_PARAMETER), sending nothing", async () => {
    const { key } = await newSchool("test");
    const a = await register(key, "https://test-proto.example.com/in");
    for (const proto of ["__proto__", "constructor", "prototype"]) {
      const { status, body } = await callJson(`/v3/webhooks/${a.id}/test`, {
        method: "POST",
        key,
        body: `{"${proto}":{"type":"course.created"}}`,
        headers: { "content-type": "application/json" },
      });
      expect([status, body.code, body.details]).toEqual([400, "UNKNOWN_PARAMETER", [{ path: proto, message: "unknown" }]]);
    }
    expect((await callJson(`/v3/webhooks/${a.id}/deliveries`, { key })).body.result).toEqual([]);
  });

  it("deliveries: newest first, a not-yet-attempted delivery shows as pending, page and limit", async () => {
    const { schoolId, key } = await newSchool("dl");
    const a = await register(key, "https://dl.example.com/in");
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      ids.push((await callJson(`/v3/webhooks/${a.id}/test`, { method: "POST", key })).body.result.eventId);
      await drain(schoolId);
    }
    const all = await callJson(`/v3/webhooks/${a.id}/deliveries`, { key });
    expect(all.body.result.map((d: { eventId: string }) => d.eventId)).toEqual([...ids].reverse());
    const page = await callJson(`/v3/webhooks/${a.id}/deliveries?limit=2&page=2`, { key });
    expect(page.body.result.map((d: { eventId: string }) => d.eventId)).toEqual([ids[0]]);
    expect(page.body.pagination).toEqual({ page: 2, limit: 2, hasMore: false });
    const first = await callJson(`/v3/webhooks/${a.id}/deliveries?limit=2`, { key });
    expect(first.body.pagination).toEqual({ page: 1, limit: 2, hasMore: true });
  });

  it.each([
    ["?limit=0", "INVALID_PARAMETER"],
    ["?limit=101", "INVALID_PARAMETER"],
    ["?page=abc", "INVALID_PARAMETER"],
    ["?since=2026-01-01T00:00:00", "INVALID_PARAMETER"],
    ["?status=lost", "INVALID_PARAMETER"],
    ["?eventType=course.nope", "INVALID_PARAMETER"],
    ["?sort=status", "UNKNOWN_PARAMETER"],
  ])("deliveries%s → 400 %s", async (query, code) => {
    const { key } = await newSchool("dl");
    const a = await register(key, "https://dl2.example.com/in");
    const { status, body } = await callJson(`/v3/webhooks/${a.id}/deliveries${query}`, { key });
    expect([status, body.code]).toEqual([400, code]);
  });
});

describe("POST /__bench/publish", () => {
  it("is not served by the production Worker (only by the benchmark entry, src/bench/entry.ts)", async () => {
    const { key } = await newSchool("bench");
    const { status, body } = await callJson("/__bench/publish", { method: "POST", key, json: { count: 1 } });
    expect([status, body.code]).toEqual([404, "NOT_FOUND"]);
  });
});
