/**
 * What a credential carries (docs/reference.md § Scopes): an API key's expiry (from then on
 * 401, as a revoked key), GET /v3/school showing the calling credential's scopes and end,
 * and portal sessions that only narrow their key's scopes — kept by the redeem, and a
 * read-only session holding only the `:read` ones.
 */
import { beforeAll, describe, expect, it } from "vitest";
import { callJson } from "../support/helpers";
import { keyWithScopes } from "../support/scopes";
import { mintPortalSession, newSchool, openPortalSession } from "../support/webhooks/harness";

const missing = (scope: string) =>
  `This credential lacks the scope ${scope}, which this operation needs; ask the school's administrator for a credential with it.`;

let school: { schoolId: string; key: string };

beforeAll(async () => {
  school = await newSchool("credscopes");
});

describe("API key expiry", () => {
  it("an expired key answers 401 like a revoked one, on every kind of operation; a key not yet expired works and shows its end", async () => {
    const expired = await keyWithScopes(school.schoolId, "courses:read webhooks:read portal", Date.now() - 1);
    for (const [path, method] of [
      ["/v3/school", "GET"],
      ["/v3/courses", "GET"],
      ["/v3/webhooks", "GET"],
      ["/v3/portal-sessions", "POST"],
    ] as const) {
      const { status, body } = await callJson(path, { method, key: expired });
      expect([path, status, body.code, body.message]).toEqual([
        path,
        401,
        "UNAUTHORIZED",
        "A valid API key or portal session token is required: send `Authorization: Bearer sk_…` (or `Bearer ps_…` from a portal link).",
      ]);
    }
    const ends = Date.parse("2031-01-02T03:04:05.000Z");
    const live = await keyWithScopes(school.schoolId, "courses:read", ends);
    const { status, body } = await callJson("/v3/school", { key: live });
    expect([status, body.result]).toEqual([
      200,
      { id: school.schoolId, name: `School ${school.schoolId}`, scopes: ["courses:read"], expiresAt: "2031-01-02T03:04:05.000Z" },
    ]);
  });
});

describe("GET /v3/school", () => {
  it("shows a key's scopes (every one for a key stored without a list) and a session's, with its end", async () => {
    const full = await callJson("/v3/school", { key: school.key });
    expect(full.body.result).toEqual({
      id: school.schoolId,
      name: `School ${school.schoolId}`,
      scopes: ["courses:read", "courses:write", "students:read", "webhooks:read", "webhooks:write", "events:read", "portal"],
      expiresAt: null,
    });
    const narrow = await keyWithScopes(school.schoolId, "events:read students:read");
    expect((await callJson("/v3/school", { key: narrow })).body.result.scopes).toEqual(["students:read", "events:read"]);
    const session = await openPortalSession(school.key, { scopes: ["webhooks:read", "events:read"] });
    const seen = await callJson("/v3/school", { key: session.token });
    expect(seen.body.result).toEqual({
      id: school.schoolId,
      name: `School ${school.schoolId}`,
      scopes: ["webhooks:read", "events:read"],
      expiresAt: session.expiresAt,
    });
  });
});

describe("portal sessions narrow their key's scopes", () => {
  it("by default a session holds its key's scopes among the portal's; read-only, only the :read ones", async () => {
    expect((await mintPortalSession(school.key)).scopes).toEqual(["courses:read", "webhooks:read", "webhooks:write", "events:read"]);
    const ro = await mintPortalSession(school.key, { readOnly: true });
    expect([ro.readOnly, ro.scopes]).toEqual([true, ["courses:read", "webhooks:read", "events:read"]]);
    const hooksOnly = await keyWithScopes(school.schoolId, "webhooks:read webhooks:write portal");
    expect((await mintPortalSession(hooksOnly)).scopes).toEqual(["webhooks:read", "webhooks:write"]);
  });

  it("the redeem keeps the scopes; the session is refused what they leave out, naming the scope", async () => {
    const link = await mintPortalSession(school.key, { scopes: ["webhooks:read", "webhooks:write"] });
    expect([link.readOnly, link.scopes]).toEqual([false, ["webhooks:read", "webhooks:write"]]);
    const redeemed = await callJson("/v3/portal-sessions/redeem", { method: "POST", key: link.token });
    expect([redeemed.status, redeemed.body.result.scopes, redeemed.body.result.readOnly]).toEqual([201, ["webhooks:read", "webhooks:write"], false]);
    const token = redeemed.body.result.token;
    expect((await callJson("/v3/webhooks", { key: token })).status).toBe(200);
    const feed = await callJson("/v3/events", { key: token });
    expect([feed.status, feed.body.code, feed.body.message]).toEqual([403, "FORBIDDEN", missing("events:read")]);
  });

  it("a session without webhooks:write is read-only; asking for more than the key has is 403 naming it; a write scope with readOnly is 400", async () => {
    const reader = await mintPortalSession(school.key, { scopes: ["events:read"] });
    expect([reader.readOnly, reader.scopes]).toEqual([true, ["events:read"]]);
    const hooksOnly = await keyWithScopes(school.schoolId, "webhooks:read portal");
    const more = await callJson("/v3/portal-sessions", { method: "POST", key: hooksOnly, json: { scopes: ["webhooks:read", "webhooks:write"] } });
    expect([more.status, more.body.code, more.body.message]).toEqual([403, "FORBIDDEN", missing("webhooks:write")]);
    const mixed = await callJson("/v3/portal-sessions", { method: "POST", key: school.key, json: { readOnly: true, scopes: ["webhooks:write"] } });
    expect([mixed.status, mixed.body.code, mixed.body.details]).toEqual([
      400,
      "VALIDATION_ERROR",
      [{ path: "scopes", message: "webhooks:write is no read scope, and the session is read-only (readOnly: true)" }],
    ]);
    // Scopes a portal token can never use are no session scopes.
    const portal = await callJson("/v3/portal-sessions", { method: "POST", key: school.key, json: { scopes: ["portal"] } });
    expect([portal.status, portal.body.code]).toEqual([400, "VALIDATION_ERROR"]);
  });
});
