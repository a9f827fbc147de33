/**
 * What a registration chooses beyond event types (docs/reference.md § "POST /v3/webhooks"): `filter`
 * on the school's dimensions (a course leaving the scope is reported once; an event that does
 * not pass is not addressed: no log entry, no resend), custom `headers` (each refusal named,
 * sent on every attempt, values never shown), and `maxPerSecond` (validation here; the
 * throttle itself in webhooks-throttle.test.ts).
 */
import { env } from "cloudflare:workers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { CourseKeys } from "../../src/courses/schemas";
import { hubFor } from "../../src/events/hub-client";
import type { SchoolEvent } from "../../src/events/types";
import { callJson } from "../support/helpers";
import { courseEvent, drain, makeAllDue, newSchool, register } from "../support/webhooks/harness";
import { SimulatedPlatform } from "../support/webhooks/platform-sim";

const rx = new SimulatedPlatform();
beforeAll(() => {
  rx.install();
});
afterAll(() => rx.restore());

/** A course event whose course has `keys` (and had `previous`, for a change). */
function scoped(schoolId: string, keys: CourseKeys, previous?: CourseKeys, n = 0): SchoolEvent {
  const event = courseEvent(schoolId, "course.updated", n);
  Object.assign(event.data.course!, keys);
  return previous ? { ...event, previous } : event;
}
const keys = (trainingId: string | null, groupIds: string[] = [], professorIds: string[] = []): CourseKeys => ({ trainingId, groupIds, professorIds });

describe("filter", () => {
  it("passes the courses in scope, reports a course leaving it once, and addresses nothing else", async () => {
    const { schoolId, key } = await newSchool("filter");
    const hook = await register(key, "https://filtered.example.com/in", { filter: { trainingId: ["trn_A"] } });
    expect(hook.filter).toEqual({ trainingId: ["trn_A"] });
    const inScope = scoped(schoolId, keys("trn_A"), undefined, 1);
    const outside = scoped(schoolId, keys("trn_B"), undefined, 2);
    const leaving = scoped(schoolId, keys("trn_B"), keys("trn_A"), 3);
    const gone = scoped(schoolId, keys("trn_B"), keys("trn_B"), 4);
    const hub = hubFor(env, schoolId);
    await hub.publish([inScope, outside, leaving, gone]);
    await drain(schoolId);
    expect(rx.to("filtered.example.com").map((r) => r.event.id)).toEqual([inScope.id, leaving.id]);
    // The delivered body carries no internal metadata.
    for (const r of rx.to("filtered.example.com")) expect(JSON.parse(r.body)).not.toHaveProperty("previous");
    const log = (await callJson(`/v3/webhooks/${hook.id}/deliveries`, { key })).body.result as { eventId: string }[];
    expect(log.map((d) => d.eventId).sort()).toEqual([inScope.id, leaving.id].sort());
    const resend = await callJson(`/v3/webhooks/${hook.id}/deliveries/${outside.id}/resend`, { method: "POST", key });
    expect([resend.status, resend.body.code]).toEqual([404, "EVENT_NOT_FOUND"]);
  });

  it("groupId and professorId match when one id is shared; every field given must match", async () => {
    const { schoolId, key } = await newSchool("filter2");
    await register(key, "https://both.example.com/in", { filter: { groupId: ["grp_1", "grp_2"], professorId: ["prf_9"] } });
    const both = scoped(schoolId, keys(null, ["grp_2", "grp_5"], ["prf_1", "prf_9"]), undefined, 1);
    const groupOnly = scoped(schoolId, keys(null, ["grp_1"], ["prf_1"]), undefined, 2);
    const profOnly = scoped(schoolId, keys(null, ["grp_7"], ["prf_9"]), undefined, 3);
    await hubFor(env, schoolId).publish([both, groupOnly, profOnly]);
    await drain(schoolId);
    expect(rx.to("both.example.com").map((r) => r.event.id)).toEqual([both.id]);
  });

  it("PATCH changes it for events accepted after the 200", async () => {
    const { schoolId, key } = await newSchool("filter4");
    const hook = await register(key, "https://changed.example.com/in", { filter: { trainingId: ["trn_A"] } });
    const beforeA = scoped(schoolId, keys("trn_A"), undefined, 1);
    const beforeC = scoped(schoolId, keys("trn_C"), undefined, 2);
    await hubFor(env, schoolId).publish([beforeA, beforeC]);
    const changed = await callJson(`/v3/webhooks/${hook.id}`, { method: "PATCH", key, json: { filter: { trainingId: ["trn_C"] } } });
    expect([changed.status, changed.body.result.filter]).toEqual([200, { trainingId: ["trn_C"] }]);
    const afterA = scoped(schoolId, keys("trn_A"), undefined, 3);
    const afterC = scoped(schoolId, keys("trn_C"), undefined, 4);
    await hubFor(env, schoolId).publish([afterA, afterC]);
    await drain(schoolId);
    // Each event judged by the filter in force when it was accepted.
    expect(rx.to("changed.example.com").map((r) => r.event.id)).toEqual([beforeA.id, afterC.id]);
  });

  it("PATCH clears it for events accepted after the 200", async () => {
    const { schoolId, key } = await newSchool("filter3");
    const hook = await register(key, "https://patched.example.com/in", { filter: { trainingId: ["trn_A"] } });
    const before = scoped(schoolId, keys("trn_B"), undefined, 1);
    await hubFor(env, schoolId).publish([before]);
    const cleared = await callJson(`/v3/webhooks/${hook.id}`, { method: "PATCH", key, json: { filter: null } });
    expect([cleared.status, cleared.body.result.filter]).toEqual([200, null]);
    const after = scoped(schoolId, keys("trn_B"), undefined, 2);
    await hubFor(env, schoolId).publish([after]);
    await drain(schoolId);
    expect(rx.to("patched.example.com").map((r) => r.event.id)).toEqual([after.id]);
  });

  it.each([
    ["an unknown field", { trainingId: ["trn_1"], classroom: ["B204"] }],
    ["no field", {}],
    ["an empty list", { groupId: [] }],
    ["more than 100 ids", { professorId: Array.from({ length: 101 }, (_, i) => `prf_${i}`) }],
    ["a malformed id", { trainingId: ["not an id"] }],
    ["not an object", ["trn_1"]],
  ])("refuses %s with 400 VALIDATION_ERROR", async (_what, filter) => {
    const { key } = await newSchool("filterbad");
    const res = await callJson("/v3/webhooks", { method: "POST", key, json: { url: "https://x.example.com/in", filter } });
    expect([res.status, res.body.code]).toEqual([400, "VALIDATION_ERROR"]);
    expect(res.body.details[0].path).toMatch(/^\$?\.?filter/);
  });
});

describe("custom headers", () => {
  it("are sent on every attempt — first, retry, test, resend, recover — and their values never shown", async () => {
    const { schoolId, key } = await newSchool("headers");
    const created = await callJson("/v3/webhooks", {
      method: "POST",
      key,
      json: { url: "https://hdr.example.com/in", headers: { "X-Api-Key": "s3cr3t-value", "X-Tenant": "lycee-pasteur" } },
    });
    expect(created.status).toBe(201);
    const hook = created.body.result;
    expect(hook.headerNames).toEqual(["x-api-key", "x-tenant"]);
    expect(JSON.stringify(created.body)).not.toContain("s3cr3t-value");
    for (const path of ["/v3/webhooks", `/v3/webhooks/${hook.id}`]) expect(JSON.stringify((await callJson(path, { key })).body)).not.toContain("s3cr3t-value");

    let fail = true;
    rx.on("hdr.example.com", () => (fail ? 500 : 204));
    const since = new Date(Date.now() - 1000).toISOString();
    const event = courseEvent(schoolId);
    await hubFor(env, schoolId).publish([event]);
    await drain(schoolId);
    await makeAllDue(schoolId);
    await drain(schoolId);
    fail = false;
    expect((await callJson(`/v3/webhooks/${hook.id}/test`, { method: "POST", key })).status).toBe(202);
    expect((await callJson(`/v3/webhooks/${hook.id}/deliveries/${event.id}/resend`, { method: "POST", key })).status).toBe(202);
    await drain(schoolId);
    // Disable then enable: the event sent while disabled is skipped, then recovered.
    await callJson(`/v3/webhooks/${hook.id}`, { method: "PATCH", key, json: { enabled: false } });
    await hubFor(env, schoolId).publish([courseEvent(schoolId, "course.created", 2)]);
    await drain(schoolId);
    await callJson(`/v3/webhooks/${hook.id}`, { method: "PATCH", key, json: { enabled: true } });
    expect((await callJson(`/v3/webhooks/${hook.id}/recover`, { method: "POST", key, json: { since } })).body.result.queued).toBeGreaterThanOrEqual(1);
    await drain(schoolId);
    const log = (await callJson(`/v3/webhooks/${hook.id}/deliveries`, { key })).body.result as { trigger: string }[];
    expect(new Set(log.map((d) => d.trigger))).toEqual(new Set(["event", "retry", "test", "resend", "recover", "event"]));
    const got = rx.to("hdr.example.com");
    expect(got.length).toBeGreaterThanOrEqual(5);
    for (const r of got) expect([r.headers["x-api-key"], r.headers["x-tenant"]]).toEqual(["s3cr3t-value", "lycee-pasteur"]);
  });

  it("PATCH replaces the whole set; null clears it", async () => {
    const { key } = await newSchool("headers2");
    const hook = await register(key, "https://hdr2.example.com/in", { headers: { "x-a": "1", "x-b": "2" } });
    const replaced = await callJson(`/v3/webhooks/${hook.id}`, { method: "PATCH", key, json: { headers: { "x-c": "3" } } });
    expect(replaced.body.result.headerNames).toEqual(["x-c"]);
    const cleared = await callJson(`/v3/webhooks/${hook.id}`, { method: "PATCH", key, json: { headers: null } });
    expect(cleared.body.result.headerNames).toEqual([]);
  });

  it.each([
    ["a webhook-* name", { "webhook-id": "x" }],
    ["a webhook-* name in another case", { "Webhook-Signature": "x" }],
    ["content-type", { "Content-Type": "text/plain" }],
    ["content-length", { "content-length": "1" }],
    ["host", { host: "evil.example" }],
    ["connection", { connection: "close" }],
    ["transfer-encoding", { "transfer-encoding": "chunked" }],
    ["user-agent", { "user-agent": "x" }],
    ["a cf-* name", { "cf-connecting-ip": "1.2.3.4" }],
    ["an x-forwarded-* name", { "X-Forwarded-For": "1.2.3.4" }],
    ["forwarded", { forwarded: "for=1.2.3.4" }],
    ["a name that is not an HTTP token", { "x bad": "1" }],
    ["an empty name", { "": "1" }],
    ["the same name twice in two cases", { "x-key": "1", "X-Key": "2" }],
    ["more than 10 headers", Object.fromEntries(Array.from({ length: 11 }, (_, i) => [`x-h${i}`, "v"]))],
    ["an empty value", { "x-key": "" }],
    ["a value with CR LF", { "x-key": "a\r\nx-injected: 1" }],
    ["a value with a NUL", { "x-key": "a\u0000b" }],
    ["a value with a non-ASCII character", { "x-key": "clé" }],
    ["a value over 1,000 characters", { "x-key": "v".repeat(1001) }],
    ["a value that is not a string", { "x-key": 42 }],
  ])("refuses %s with 400 VALIDATION_ERROR", async (_what, headers) => {
    const { key } = await newSchool("hdrbad");
    const res = await callJson("/v3/webhooks", { method: "POST", key, json: { url: "https://x.example.com/in", headers } });
    expect([res.status, res.body.code]).toEqual([400, "VALIDATION_ERROR"]);
  });
});

describe("maxPerSecond", () => {
  it.each([[0], [1001], [1.5], ["10"]])("refuses %s with 400 VALIDATION_ERROR", async (maxPerSecond) => {
    const { key } = await newSchool("mpsbad");
    const res = await callJson("/v3/webhooks", { method: "POST", key, json: { url: "https://x.example.com/in", maxPerSecond } });
    expect([res.status, res.body.code]).toEqual([400, "VALIDATION_ERROR"]);
  });

  it("is shown on the record, changed by PATCH, cleared by null", async () => {
    const { key } = await newSchool("mps");
    const hook = await register(key, "https://mps.example.com/in", { maxPerSecond: 5 });
    expect(hook.maxPerSecond).toBe(5);
    const patched = await callJson(`/v3/webhooks/${hook.id}`, { method: "PATCH", key, json: { maxPerSecond: 1000 } });
    expect(patched.body.result.maxPerSecond).toBe(1000);
    const cleared = await callJson(`/v3/webhooks/${hook.id}`, { method: "PATCH", key, json: { maxPerSecond: null } });
    expect(cleared.body.result.maxPerSecond).toBeNull();
  });
});
