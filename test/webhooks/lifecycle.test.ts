/**
 * The webhook lifecycle (docs/reference.md § "Webhook registrations": record, PATCH, disable, secret
 * rotation, resend, recover): driven through the HTTP API and the hub, judged from the
 * simulated receivers' logs and the objects' storage. Time is driven (SQL due times), never slept.
 */
import { env } from "cloudflare:workers";
import { Webhook } from "standardwebhooks";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { hubFor } from "../../src/events/hub-client";
import { migrate as migrateCourier } from "../../src/webhooks/courier/storage";
import { migrate as migrateHub } from "../../src/webhooks/hub/storage";
import { callJson } from "../support/helpers";
import { courseEvent, drain, eventually, inCourier, inHub, makeAllDue, newSchool, ownStorage, register } from "../support/webhooks/harness";
import { SimulatedPlatform } from "../support/webhooks/platform-sim";

const rx = new SimulatedPlatform();
beforeAll(() => {
  rx.install();
});
afterAll(() => rx.restore());
afterEach(() => rx.expectWithinLimit());

const patch = (key: string, id: string, json: unknown) => callJson(`/v3/webhooks/${id}`, { method: "PATCH", key, json });
const log = async (key: string, id: string, query = "") => (await callJson(`/v3/webhooks/${id}/deliveries${query}`, { key })).body.result as any[];
/** The deliveries queued at a registration's courier, in queue order. */
const queued = (webhookId: string) =>
  inCourier(webhookId, (_c, state) =>
    state.storage.sql.exec<{ event_id: string; next_attempt_at: number }>(`SELECT event_id, next_attempt_at FROM queue ORDER BY id`).toArray(),
  );

describe("the registration record", () => {
  it("every answer shows enabled, disabledReason, disabledAt, updatedAt", async () => {
    const { key } = await newSchool("rec");
    const hook = await register(key, "https://rec.example.com/in");
    expect(hook).toMatchObject({ enabled: true, disabledReason: null, disabledAt: null, updatedAt: hook.createdAt });
    const listed = (await callJson("/v3/webhooks", { key })).body.result[0];
    expect(listed).toEqual({ ...hook, secret: undefined });
    const changed = await patch(key, hook.id, { description: null });
    expect(changed.status).toBe(200);
    expect(changed.body.result).toMatchObject({ id: hook.id, description: null, enabled: true });
    expect(changed.body.result.updatedAt >= hook.createdAt).toBe(true);
    expect(changed.body.result).not.toHaveProperty("secret");
  });

  it("a fresh hub and a fresh courier each reach their current schema version; migrating again changes nothing", async () => {
    const { schoolId } = await newSchool("mig");
    const tables = (sql: SqlStorage) =>
      sql
        .exec<{ name: string }>(`SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name`)
        .toArray()
        .map((r) => r.name)
        .filter((name) => !name.startsWith("_cf_") && !name.startsWith("sqlite_"));
    const version = (sql: SqlStorage) => sql.exec<{ value: string }>(`SELECT value FROM meta WHERE key = 'schema_version'`).one().value;
    // Each object's own storage (behind production's limits), as its constructor migrated it.
    await inHub(schoolId, (hub) => {
      const sql = ownStorage(hub).sql;
      expect(version(sql)).toBe("11");
      expect(tables(sql)).toEqual(["change_spans", "deleted_ids", "events", "idempotency_keys", "meta", "missed", "targets", "webhooks"]);
      migrateHub(sql);
      expect(version(sql)).toBe("11");
    });
    await inCourier("wh_migration_probe", (courier) => {
      const sql = ownStorage(courier).sql;
      expect(version(sql)).toBe("8");
      expect(tables(sql)).toEqual(["events", "latency", "log", "meta", "queue"]);
      migrateCourier(sql);
      expect(version(sql)).toBe("8");
    });
  });
});

describe("PATCH /v3/webhooks/{id}", () => {
  it("url: a pending retry goes to the new URL at its next attempt; id, secret and log are kept", async () => {
    const { schoolId, key } = await newSchool("url");
    rx.on("url-old.example.com", 500).on("url-new.example.com", 204);
    const hook = await register(key, "https://url-old.example.com/in");
    const event = courseEvent(schoolId);
    await hubFor(env, schoolId).publish([event]);
    await drain(schoolId);
    expect(rx.to("url-old.example.com")).toHaveLength(1);
    const changed = await patch(key, hook.id, { url: "https://url-new.example.com/in" });
    expect(changed.body.result).toMatchObject({ id: hook.id, url: "https://url-new.example.com/in" });
    await makeAllDue(schoolId);
    await drain(schoolId);
    const [got] = rx.to("url-new.example.com");
    expect(got!.event.id).toBe(event.id);
    new Webhook(hook.secret).verify(got!.body, got!.headers);
    expect((await log(key, hook.id)).map((e) => [e.attempt, e.status])).toEqual([
      [2, "succeeded"],
      [1, "failed"],
    ]);
  });

  it("url: an attempt already in flight to the old URL finishes and its outcome is logged", async () => {
    const { schoolId, key } = await newSchool("urlf");
    rx.on("urlf-old.example.com", { status: 500, afterMs: 150 }).on("urlf-new.example.com", 200);
    const hook = await register(key, "https://urlf-old.example.com/in");
    await hubFor(env, schoolId).publish([courseEvent(schoolId)]);
    await eventually(() => rx.to("urlf-old.example.com").length === 1, "the attempt to the old URL");
    expect((await patch(key, hook.id, { url: "https://urlf-new.example.com/in" })).status).toBe(200);
    // The courier says when the attempt under way has ended and its outcome is written.
    await inCourier(hook.id, (c) => c.whenIdle());
    expect((await log(key, hook.id)).map((e) => [e.attempt, e.status, e.responseStatus])).toEqual([[1, "failed", 500]]);
    await makeAllDue(schoolId);
    await drain(schoolId);
    expect(rx.to("urlf-new.example.com")).toHaveLength(1);
  });

  it("url: the URL policy applies (400 INVALID_WEBHOOK_URL), nothing changes", async () => {
    const { key } = await newSchool("urlp");
    const hook = await register(key, "https://urlp.example.com/in");
    const res = await patch(key, hook.id, { url: "https://10.0.0.1/in" });
    expect([res.status, res.body.code]).toEqual([400, "INVALID_WEBHOOK_URL"]);
    expect((await callJson("/v3/webhooks", { key })).body.result[0].url).toBe("https://urlp.example.com/in");
  });

  it("events: queued deliveries stay; later events follow the new subscription", async () => {
    const { schoolId, key } = await newSchool("ev");
    rx.on("ev.example.com", 500);
    const hook = await register(key, "https://ev.example.com/in", { events: ["course.updated"] });
    const first = courseEvent(schoolId, "course.updated");
    await hubFor(env, schoolId).publish([first]);
    await drain(schoolId);
    await patch(key, hook.id, { events: ["course.created"] });
    const later = [courseEvent(schoolId, "course.updated"), courseEvent(schoolId, "course.created")];
    await hubFor(env, schoolId).publish(later);
    // The hand-over to the courier follows the publish.
    await inHub(schoolId, (h) => h.whenIdle());
    expect((await queued(hook.id)).map((r) => r.event_id).sort()).toEqual([first.id, later[1]!.id].sort());
  });
});

describe("disabled registrations", () => {
  it("disable ends pending retries as skipped, logs events accepted meanwhile as skipped, sends nothing; re-enable resumes new events only", async () => {
    const { schoolId, key } = await newSchool("dis");
    const host = "dis.example.com";
    rx.on(host, 500);
    const hook = await register(key, `https://${host}/in`);
    const hub = hubFor(env, schoolId);
    const e1 = courseEvent(schoolId, "course.updated", 1);
    await hub.publish([e1]);
    await drain(schoolId);
    const off = await patch(key, hook.id, { enabled: false });
    expect(off.body.result).toMatchObject({ enabled: false, disabledReason: "manual", disabledAt: expect.any(String) });
    const mark = rx.mark();
    const e2 = courseEvent(schoolId, "course.created", 2);
    await hub.publish([e2]);
    await makeAllDue(schoolId);
    await drain(schoolId);
    expect(rx.to(host).filter((r) => r.seq > mark)).toEqual([]);
    expect(await queued(hook.id)).toEqual([]);
    const skipped = await log(key, hook.id, "?status=skipped");
    expect(skipped.map((e) => e.eventId).sort()).toEqual([e1.id, e2.id].sort());
    for (const entry of skipped) expect(entry).toMatchObject({ attemptedAt: null, responseStatus: null, error: "registration disabled" });
    // test, resend and recover refuse; the log and the record stay.
    expect((await callJson(`/v3/webhooks/${hook.id}/test`, { method: "POST", key })).body.code).toBe("WEBHOOK_DISABLED");
    expect((await callJson(`/v3/webhooks/${hook.id}/deliveries/${e1.id}/resend`, { method: "POST", key })).status).toBe(409);
    const since = new Date(Date.now() - 60_000).toISOString();
    expect((await callJson(`/v3/webhooks/${hook.id}/recover`, { method: "POST", key, json: { since } })).status).toBe(409);

    rx.on(host, 200);
    const on = await patch(key, hook.id, { enabled: true });
    expect(on.body.result).toMatchObject({ enabled: true, disabledReason: null, disabledAt: null });
    const e3 = courseEvent(schoolId, "course.updated", 3);
    await hub.publish([e3]);
    await drain(schoolId);
    // The two skipped are reported to it once it is enabled again (docs/reference.md § "Missed events").
    const seen = () =>
      rx
        .to(host)
        .filter((r) => r.seq > mark)
        .map((r) => (r.event.type === "webhook.events_missed" ? `missed ${r.event.data.missed}` : r.event.id));
    expect(seen()).toEqual(["missed 2", e3.id]);
    // Skipped ones come back only when asked: recover, in acceptance order, once per call.
    const recovered = await callJson(`/v3/webhooks/${hook.id}/recover`, { method: "POST", key, json: { since } });
    expect([recovered.status, recovered.body.result]).toEqual([202, { queued: 2, exact: true }]);
    expect((await callJson(`/v3/webhooks/${hook.id}/recover`, { method: "POST", key, json: { since } })).body.result).toEqual({ queued: 0, exact: true });
    await drain(schoolId);
    expect(seen()).toEqual(["missed 2", e3.id, e1.id, e2.id]);
    expect((await callJson(`/v3/webhooks/${hook.id}/recover`, { method: "POST", key, json: { since } })).body.result).toEqual({ queued: 0, exact: true });
  });

  it("no attempt starts after the disable's 200: attempts queued at the courier are dropped", async () => {
    const { schoolId, key } = await newSchool("disq");
    const host = "disq.example.com";
    rx.on(host, "hang");
    const hook = await register(key, `https://${host}/in`);
    await hubFor(env, schoolId).publish(Array.from({ length: 10 }, (_, i) => courseEvent(schoolId, "course.updated", i)));
    await eventually(() => rx.to(host).length === 5, "the courier's slots to fill");
    expect((await patch(key, hook.id, { enabled: false })).status).toBe(200);
    const mark = rx.mark();
    // The five hanging requests time out (1 s in tests); the freed slots take nothing.
    await eventually(() => rx.to(host).every((r) => r.abortedAt !== undefined), "the timeouts", 10_000);
    await inCourier(hook.id, (c) => c.whenIdle());
    await makeAllDue(schoolId);
    await drain(schoolId);
    expect(rx.to(host).filter((r) => r.seq > mark)).toEqual([]);
    expect((await log(key, hook.id, "?status=skipped&limit=100")).length).toBe(10);
  });
});

describe("a change its courier cannot hear at once", () => {
  it("a disable whose push fails answers 500; the repeated PATCH pushes it before its 200, and nothing is sent after", async () => {
    const { schoolId, key } = await newSchool("pushfail");
    const host = "pushfail.example.com";
    const hook = await register(key, `https://${host}/in`);
    rx.on(host, 500);
    await hubFor(env, schoolId).publish([courseEvent(schoolId)]);
    await drain(schoolId);
    expect(rx.to(host)).toHaveLength(1);
    // The config push fails (an outage): the change is made, the 200 is not given.
    rx.failCalls = 1;
    const failed = await callJson(`/v3/webhooks/${hook.id}`, { method: "PATCH", key, json: { enabled: false } });
    expect([failed.status, failed.body.code]).toEqual([500, "INTERNAL_ERROR"]);
    expect(rx.failCalls).toBe(0);
    const repeated = await callJson(`/v3/webhooks/${hook.id}`, { method: "PATCH", key, json: { enabled: false } });
    expect([repeated.status, repeated.body.result.enabled, repeated.body.result.disabledReason]).toEqual([200, false, "manual"]);
    // The courier holds the disable: its pending retry ended skipped, and the clock reaching
    // the retry time sends nothing.
    const mark = rx.mark();
    await makeAllDue(schoolId);
    await drain(schoolId);
    expect(rx.to(host).filter((r) => r.seq > mark)).toEqual([]);
    const skipped = await callJson(`/v3/webhooks/${hook.id}/deliveries?status=skipped`, { key });
    expect(skipped.body.result).toHaveLength(1);
  });
});

describe("secret rotation", () => {
  it("during the grace both signatures verify; a second rotation keeps only the newest previous; after the grace the old one fails", async () => {
    const { schoolId, key } = await newSchool("rot");
    const host = "rot.example.com";
    const hook = await register(key, `https://${host}/in`);
    // The grace counts from the rotation: its end lies 1 h after an instant between the call and its answer.
    const asked = Date.now();
    const rotated = await callJson(`/v3/webhooks/${hook.id}/secret/rotate`, { method: "POST", key, json: { graceSeconds: 3600 } });
    const answered = Date.now();
    expect(rotated.status).toBe(200);
    expect(rotated.body.result).toEqual({ id: hook.id, secret: expect.stringMatching(/^whsec_/), previousSecretExpiresAt: expect.any(String) });
    expect(Date.parse(rotated.body.result.previousSecretExpiresAt)).toBeGreaterThanOrEqual(asked + 3_600_000);
    expect(Date.parse(rotated.body.result.previousSecretExpiresAt)).toBeLessThanOrEqual(answered + 3_600_000);
    const fresh = rotated.body.result.secret as string;
    await hubFor(env, schoolId).publish([courseEvent(schoolId)]);
    await drain(schoolId);
    let req = rx.to(host).at(-1)!;
    expect(req.headers["webhook-signature"]).toMatch(/^v1,\S+ v1,\S+$/);
    new Webhook(fresh).verify(req.body, req.headers);
    new Webhook(hook.secret).verify(req.body, req.headers);

    // Without graceSeconds, the grace is 24 h.
    const askedAgain = Date.now();
    const again = (await callJson(`/v3/webhooks/${hook.id}/secret/rotate`, { method: "POST", key })).body.result;
    const answeredAgain = Date.now();
    expect(Date.parse(again.previousSecretExpiresAt)).toBeGreaterThanOrEqual(askedAgain + 86_400_000);
    expect(Date.parse(again.previousSecretExpiresAt)).toBeLessThanOrEqual(answeredAgain + 86_400_000);
    await hubFor(env, schoolId).publish([courseEvent(schoolId)]);
    await drain(schoolId);
    req = rx.to(host).at(-1)!;
    new Webhook(again.secret).verify(req.body, req.headers);
    new Webhook(fresh).verify(req.body, req.headers);
    expect(() => new Webhook(hook.secret).verify(req.body, req.headers)).toThrow();

    // The grace ends (driven: its expiry moved to the past, as a new version of the
    // registration that the next hand-over gives the courier).
    await inHub(schoolId, (_h, state) => state.storage.sql.exec(`UPDATE webhooks SET previous_expires_at = ?, version = version + 1`, Date.now() - 1));
    await hubFor(env, schoolId).publish([courseEvent(schoolId)]);
    await drain(schoolId);
    req = rx.to(host).at(-1)!;
    expect(req.headers["webhook-signature"]).toMatch(/^v1,\S+$/);
    new Webhook(again.secret).verify(req.body, req.headers);
    expect(() => new Webhook(fresh).verify(req.body, req.headers)).toThrow();
  });

  it("graceSeconds 0 drops the previous secret at once; out of range is a 400", async () => {
    const { schoolId, key } = await newSchool("rot0");
    const hook = await register(key, "https://rot0.example.com/in");
    const rotated = (await callJson(`/v3/webhooks/${hook.id}/secret/rotate`, { method: "POST", key, json: { graceSeconds: 0 } })).body.result;
    expect(rotated.previousSecretExpiresAt).toBeNull();
    await hubFor(env, schoolId).publish([courseEvent(schoolId)]);
    await drain(schoolId);
    const req = rx.to("rot0.example.com").at(-1)!;
    new Webhook(rotated.secret).verify(req.body, req.headers);
    expect(() => new Webhook(hook.secret).verify(req.body, req.headers)).toThrow();
    for (const graceSeconds of [-1, 604_801, 1.5, "60"]) {
      const res = await callJson(`/v3/webhooks/${hook.id}/secret/rotate`, { method: "POST", key, json: { graceSeconds } });
      expect([res.status, res.body.code]).toEqual([400, "VALIDATION_ERROR"]);
    }
  });
});

describe("resend", () => {
  it("sends a delivered event again with the same webhook-id; a queued one becomes due now, no second copy", async () => {
    const { schoolId, key } = await newSchool("rs");
    const host = "rs.example.com";
    const hook = await register(key, `https://${host}/in`);
    const event = courseEvent(schoolId);
    await hubFor(env, schoolId).publish([event]);
    await drain(schoolId);
    const res = await callJson(`/v3/webhooks/${hook.id}/deliveries/${event.id}/resend`, { method: "POST", key });
    expect([res.status, res.body.result]).toEqual([202, { eventId: event.id }]);
    await drain(schoolId);
    expect(rx.to(host).map((r) => r.headers["webhook-id"])).toEqual([event.id, event.id]);

    rx.on(host, 503);
    const e2 = courseEvent(schoolId);
    const published = Date.now();
    await hubFor(env, schoolId).publish([e2]);
    await drain(schoolId);
    // A retry at least the schedule's 5 s after the failed attempt, which came after the publish …
    const [row] = await queued(hook.id);
    expect(row!.next_attempt_at).toBeGreaterThanOrEqual(published + 5_000);
    await callJson(`/v3/webhooks/${hook.id}/deliveries/${e2.id}/resend`, { method: "POST", key });
    const resent = Date.now();
    // … made due by the resend: no later than its answer.
    const rows = await queued(hook.id);
    expect(rows).toHaveLength(1);
    expect(rows[0]!.next_attempt_at).toBeLessThanOrEqual(resent);
    rx.on(host, 200);
  });

  it("EVENT_NOT_FOUND for an unknown event or one never addressed to this registration", async () => {
    const { schoolId, key } = await newSchool("rsn");
    const a = await register(key, "https://rsn-a.example.com/in", { events: ["course.created"] });
    await register(key, "https://rsn-b.example.com/in");
    const event = courseEvent(schoolId, "course.updated");
    await hubFor(env, schoolId).publish([event]);
    await drain(schoolId);
    for (const id of [event.id, "evt_unknown", "bad%20id"]) {
      const res = await callJson(`/v3/webhooks/${a.id}/deliveries/${id}/resend`, { method: "POST", key });
      expect([res.status, res.body.code]).toEqual([404, "EVENT_NOT_FOUND"]);
    }
  });
});

describe("recover", () => {
  it("queues, in acceptance order, what failed in [since, until), not what succeeded", async () => {
    const { schoolId, key } = await newSchool("rcv");
    const host = "rcv.example.com";
    const hook = await register(key, `https://${host}/in`);
    const hub = hubFor(env, schoolId);
    const ok = courseEvent(schoolId, "course.updated", 0);
    await hub.publish([ok]);
    await drain(schoolId);
    rx.on(host, 410); // fails at once: no retries; and disables the registration (gone)
    const since = new Date().toISOString();
    const failed = [];
    for (let i = 1; i <= 4; i++) {
      const e = courseEvent(schoolId, "course.updated", i);
      failed.push(e);
      await hub.publish([e]);
    }
    await drain(schoolId);
    // Each ended failed (410) or skipped (accepted once the 410 had disabled it).
    const record = async () => (await callJson(`/v3/webhooks/${hook.id}`, { key })).body.result;
    await eventually(async () => (await record()).disabledReason === "gone", "the 410 to disable the registration");
    const until = new Date().toISOString();
    const late = courseEvent(schoolId, "course.updated", 9);
    await hub.publish([late]);
    await drain(schoolId);
    rx.on(host, 200);
    expect((await patch(key, hook.id, { enabled: true })).status).toBe(200);
    const mark = rx.mark();
    const res = await callJson(`/v3/webhooks/${hook.id}/recover`, { method: "POST", key, json: { since, until } });
    expect(res.body.result).toEqual({ queued: 4, exact: true });
    await drain(schoolId);
    expect(
      rx
        .to(host)
        .filter((r) => r.seq > mark)
        .map((r) => r.event.id),
    ).toEqual(failed.map((e) => e.id));
  });

  it("400 INVALID_PARAMETER: since older than 7 days, or after until", async () => {
    const { key } = await newSchool("rcv4");
    const hook = await register(key, "https://rcv4.example.com/in");
    const old = new Date(Date.now() - 8 * 86_400_000).toISOString();
    const now = new Date().toISOString();
    for (const json of [{ since: old }, { since: now, until: new Date(Date.now() - 1000).toISOString() }]) {
      const res = await callJson(`/v3/webhooks/${hook.id}/recover`, { method: "POST", key, json });
      expect([res.status, res.body.code]).toEqual([400, "INVALID_PARAMETER"]);
    }
  });
});
