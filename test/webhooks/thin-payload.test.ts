/**
 * `payload: "thin"` (docs/reference.md § "Event delivery"): a thin registration's course events
 * carry `{ id, changeCursor, type, createdAt, schoolId, data: { course: { id, version } } }` (and
 * `professorId` for `course.professor_signed`), signed like any other body; `webhook.*` events
 * are sent whole; the feed keeps the full events; PATCH switches the form for the next event.
 */
import { env } from "cloudflare:workers";
import { Webhook } from "standardwebhooks";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { hubFor } from "../../src/events/hub-client";
import { callJson } from "../support/helpers";
import { checkEvent } from "../support/openapi-check";
import { courseEvent, drain, eventually, newSchool, register, thinBody } from "../support/webhooks/harness";
import { SimulatedPlatform } from "../support/webhooks/platform-sim";

const rx = new SimulatedPlatform();
beforeAll(() => {
  rx.install();
});
afterAll(() => rx.restore());

describe("payload: thin", () => {
  it("course events carry only the course's id and version (professorId kept), signed; webhook.* events whole; the feed stays full", async () => {
    const { schoolId, key } = await newSchool("thin");
    const thin = await register(key, "https://thin.example.com/in", { payload: "thin" });
    expect(thin.payload).toBe("thin");
    const full = await register(key, "https://thin-full.example.com/in");
    expect(full.payload).toBe("full");
    const gone = await register(key, "https://thin-gone.example.com/in", { events: ["course.created"] });
    rx.on("thin-gone.example.com", 410);

    const signed = courseEvent(schoolId, "course.professor_signed", 3);
    signed.data.professorId = "prf_7";
    signed.data.course!.version = 4;
    const events = [courseEvent(schoolId, "course.created", 1), courseEvent(schoolId, "course.updated", 2), signed];
    await hubFor(env, schoolId).publish(events);
    await drain(schoolId);
    // The 410 disabled `gone`: its webhook.disabled reaches the two others.
    await eventually(async () => (await callJson(`/v3/webhooks/${gone.id}`, { key })).body.result.enabled === false, "the 410 to disable");
    await drain(schoolId);
    expect((await callJson(`/v3/webhooks/${thin.id}/test`, { method: "POST", key })).status).toBe(202);
    await drain(schoolId);

    const got = rx.to("thin.example.com");
    expect(got.map((r) => r.event.type)).toEqual(["course.created", "course.updated", "course.professor_signed", "webhook.disabled", "webhook.test"]);
    const wh = new Webhook(thin.secret);
    for (const [i, e] of events.entries()) {
      const req = got[i]!;
      expect(req.body).toBe(thinBody(e));
      // Signed over the thin body, as any other.
      expect(wh.verify(req.body, req.headers)).toEqual(JSON.parse(thinBody(e)));
      checkEvent(JSON.parse(req.body));
    }
    expect(JSON.parse(got[2]!.body).data).toEqual({ course: { id: "crs_3", version: 4 }, professorId: "prf_7" });
    // webhook.* events: the same body as a full registration's.
    const disabled = rx.to("thin-full.example.com").find((r) => r.event.type === "webhook.disabled")!;
    expect(got[3]!.body).toBe(disabled.body);
    expect(got[3]!.event.data).toEqual({ webhookId: gone.id, reason: "gone", failingSince: null });
    expect(got[4]!.event.data).toEqual({ webhookId: thin.id });
    for (const req of got.slice(3)) wh.verify(req.body, req.headers);

    // The full registration got the full events; the feed keeps them full.
    expect(
      rx
        .to("thin-full.example.com")
        .slice(0, 3)
        .map((r) => JSON.parse(r.body)),
    ).toEqual(events);
    const feed = await callJson("/v3/events?eventType=course.created,course.updated,course.professor_signed", { key });
    expect(feed.body.result).toEqual(events);
  });

  it("PATCH payload takes effect for the next event, both ways; a value outside full, thin is 400", async () => {
    const { schoolId, key } = await newSchool("thinpatch");
    const host = "thin-patch.example.com";
    const hook = await register(key, `https://${host}/in`);
    const first = courseEvent(schoolId, "course.updated", 1);
    await hubFor(env, schoolId).publish([first]);
    await drain(schoolId);
    expect(rx.to(host).at(-1)!.body).toBe(JSON.stringify(first));

    const patched = await callJson(`/v3/webhooks/${hook.id}`, { method: "PATCH", key, json: { payload: "thin" } });
    expect([patched.status, patched.body.result.payload]).toEqual([200, "thin"]);
    expect((await callJson(`/v3/webhooks/${hook.id}`, { key })).body.result.payload).toBe("thin");
    const second = courseEvent(schoolId, "course.updated", 2);
    await hubFor(env, schoolId).publish([second]);
    await drain(schoolId);
    expect(rx.to(host).at(-1)!.body).toBe(thinBody(second));

    expect((await callJson(`/v3/webhooks/${hook.id}`, { method: "PATCH", key, json: { payload: "full" } })).body.result.payload).toBe("full");
    const third = courseEvent(schoolId, "course.updated", 3);
    await hubFor(env, schoolId).publish([third]);
    await drain(schoolId);
    expect(rx.to(host).at(-1)!.body).toBe(JSON.stringify(third));
    expect(rx.to(host)).toHaveLength(3);

    for (const payload of ["partial", "THIN", null, 1]) {
      const patch = await callJson(`/v3/webhooks/${hook.id}`, { method: "PATCH", key, json: { payload } });
      const post = await callJson("/v3/webhooks", { method: "POST", key, json: { url: `https://${host}/again`, payload } });
      for (const res of [patch, post]) {
        expect([res.status, res.body.code]).toEqual([400, "VALIDATION_ERROR"]);
        expect(res.body.details.map((d: { path: string }) => d.path)).toEqual(["payload"]);
      }
    }
  });
});
