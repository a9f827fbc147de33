/**
 * Writes answer the course's version as `ETag` (docs/reference.md § "POST /v3/courses — create
 * a course · PATCH /v3/courses/{id} — change one"): the next PATCH's `If-Match` needs no GET.
 * Every response here is also checked against the OpenAPI document, which declares the header.
 */
import { beforeAll, describe, expect, it } from "vitest";
import { fixture, KEY_A } from "../support/fixtures";
import { callJson, loadFixture } from "../support/helpers";

beforeAll(async () => {
  await loadFixture(fixture);
});

const base = { name: "Droit des contrats", startDateTime: "2026-10-01T10:00:00+02:00", endDateTime: "2026-10-01T12:00:00+02:00" };
const patch = (id: string, json: unknown, ifMatch: string) =>
  callJson(`/v3/courses/${id}`, { method: "PATCH", key: KEY_A, json, headers: { "if-match": ifMatch } });

describe("ETag of course writes", () => {
  it("POST's ETag is the If-Match of the next PATCH; that PATCH's ETag the next one's; a stale one is 412", async () => {
    const created = await callJson("/v3/courses", { method: "POST", key: KEY_A, json: base });
    expect(created.status).toBe(201);
    const first = created.res.headers.get("etag");
    expect(first).toBe('"1"');

    const changed = await patch(created.body.result.id, { name: "Droit civil" }, first!);
    expect([changed.status, changed.body.result.version]).toEqual([200, 2]);
    const second = changed.res.headers.get("etag");
    expect(second).toBe('"2"');

    const stale = await patch(created.body.result.id, { name: "Droit pénal" }, first!);
    expect([stale.status, stale.body.code]).toEqual([412, "PRECONDITION_FAILED"]);
    const next = await patch(created.body.result.id, { name: "Droit pénal" }, second!);
    expect([next.status, next.res.headers.get("etag")]).toEqual([200, '"3"']);
  });

  it("an idempotent POST and its replay carry the created version", async () => {
    const headers = { "idempotency-key": `etag-${crypto.randomUUID()}` };
    const first = await callJson("/v3/courses", { method: "POST", key: KEY_A, json: base, headers });
    const replay = await callJson("/v3/courses", { method: "POST", key: KEY_A, json: base, headers });
    expect([first.status, first.res.headers.get("etag")]).toEqual([201, '"1"']);
    expect([replay.status, replay.res.headers.get("idempotent-replayed"), replay.res.headers.get("etag")]).toEqual([201, "true", '"1"']);
  });
});
