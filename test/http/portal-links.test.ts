/**
 * Links that open once (docs/reference.md § Portal sessions): POST /v3/portal-sessions/redeem
 * trades a link's token for a new one of the same scope and expiry and revokes it in the same
 * step; GET /v3/school names the credential's school; a school has at most 100 live sessions.
 */
import { env } from "cloudflare:test";
import { beforeAll, describe, expect, it } from "vitest";
import { sha256Hex } from "../../src/lib/crypto";
import { callJson } from "../support/helpers";
import { mintPortalSession, newSchool, openPortalSession } from "../support/webhooks/harness";

let school: { schoolId: string; key: string };

beforeAll(async () => {
  school = await newSchool("links");
});

const mint = (json: unknown = {}, key = school.key) => mintPortalSession(key, json);
const redeem = (token: string) => callJson("/v3/portal-sessions/redeem", { method: "POST", key: token });

describe("POST /v3/portal-sessions/redeem", () => {
  it("201: a new token with the same scope and expiry and the school; the link's token is 401 from then on", async () => {
    for (const readOnly of [false, true]) {
      const link = await mint({ expiresInSeconds: 600, readOnly });
      const { status, body, res } = await redeem(link.token);
      expect(status).toBe(201);
      expect(body.result).toEqual({
        token: expect.stringMatching(/^ps_[A-Za-z0-9_-]{43}$/),
        expiresAt: link.expiresAt,
        readOnly,
        // The link's scopes: its key's among the portal's, the :read ones when read-only (docs/reference.md § Scopes).
        scopes: readOnly ? ["courses:read", "webhooks:read", "events:read"] : ["courses:read", "webhooks:read", "webhooks:write", "events:read"],
        school: { id: school.schoolId, name: `School ${school.schoolId}` },
      });
      expect(body.result.token).not.toBe(link.token);
      expect(res.headers.get("cache-control")).toBe("no-store");
      // The link opened again: refused, saying why.
      const again = await redeem(link.token);
      expect([again.status, again.body.code]).toEqual([401, "UNAUTHORIZED"]);
      expect(again.body.message).toMatch(/used already/);
      expect((await callJson("/v3/webhooks", { key: link.token })).status).toBe(401);
      // The new token works, in the same scope.
      const list = await callJson("/v3/webhooks", { key: body.result.token });
      expect([list.status, list.res.headers.get("x-portal-session-read-only")]).toEqual([200, String(readOnly)]);
    }
  });

  it("two redeems of one token at once: one 201, one 401", async () => {
    const link = await mint();
    const statuses = (await Promise.all([redeem(link.token), redeem(link.token)])).map((r) => r.status).sort();
    expect(statuses).toEqual([201, 401]);
  });

  it("an API key cannot redeem (403); no credential is 401; an expired token is 401", async () => {
    const key = await redeem(school.key);
    expect([key.status, key.body.code]).toEqual([403, "FORBIDDEN"]);
    const anon = await callJson("/v3/portal-sessions/redeem", { method: "POST" });
    expect([anon.status, anon.body.code]).toEqual([401, "UNAUTHORIZED"]);
    const ended = await mint();
    await env.DIRECTORY.prepare("UPDATE portal_sessions SET expires_at = ? WHERE token_hash = ?")
      .bind(Date.now() - 1, await sha256Hex(ended.token))
      .run();
    expect((await redeem(ended.token)).status).toBe(401);
  });
});

describe("GET /v3/school", () => {
  it("names the school of an API key and of a portal token, read-only included", async () => {
    const expected = { id: school.schoolId, name: `School ${school.schoolId}` };
    for (const credential of [school.key, (await openPortalSession(school.key)).token, (await openPortalSession(school.key, { readOnly: true })).token]) {
      const { status, body } = await callJson("/v3/school", { key: credential });
      expect([status, body.result.id, body.result.name]).toEqual([200, expected.id, expected.name]);
    }
    expect((await callJson("/v3/school")).status).toBe(401);
  });
});

describe("at most 100 live portal sessions per school", () => {
  it("the 101st mint is 409 PORTAL_SESSION_LIMIT_REACHED; a redeem does not count twice; DELETE frees them", async () => {
    const own = await newSchool("cap");
    const tokens: string[] = [];
    for (let i = 0; i < 100; i++) tokens.push((await mint({}, own.key)).token);
    const over = await callJson("/v3/portal-sessions", { method: "POST", key: own.key, json: {} });
    expect([over.status, over.body.code]).toEqual([409, "PORTAL_SESSION_LIMIT_REACHED"]);
    expect(over.body.message).toContain("DELETE /v3/portal-sessions");
    // A redeem replaces one live session with one.
    expect((await redeem(tokens[0]!)).status).toBe(201);
    // Another school is not limited by this one.
    expect((await callJson("/v3/portal-sessions", { method: "POST", key: school.key, json: {} })).status).toBe(201);
    const revoked = await callJson("/v3/portal-sessions", { method: "DELETE", key: own.key });
    expect(revoked.body.result.revoked).toBe(100);
    expect((await callJson("/v3/portal-sessions", { method: "POST", key: own.key, json: {} })).status).toBe(201);
  });
});
