/**
 * Portal sessions (docs/reference.md § "Portal sessions", § "Conventions"): POST and DELETE
 * /v3/portal-sessions, and the scope of a `ps_` token on every operation of the router — the
 * list is read from src/api.ts, so an operation added later is covered by these tests.
 */
import { env } from "cloudflare:test";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { operations } from "../../src/api";
import { sha256Hex } from "../../src/lib/crypto";
import { prunePortalSessions } from "../../src/portal/sessions";
import { BASE, callJson } from "../support/helpers";
import { mintPortalSession, newSchool, openPortalSession, register } from "../support/webhooks/harness";
import { Receivers } from "../support/webhooks/receivers";

const rx = new Receivers();
let school: { schoolId: string; key: string };
let other: { schoolId: string; key: string };
let hookId: string;

beforeAll(async () => {
  rx.install();
  school = await newSchool("ps");
  other = await newSchool("ps_other");
  hookId = (await register(school.key, "https://hooks.example.com/portal")).id;
});
afterAll(() => rx.restore());

/** POST /v3/portal-sessions with the school's key; the 201's result (a link). */
const mintLink = (body?: unknown, key = school.key) => mintPortalSession(key, body);
/** A session of the school (a link minted and redeemed, as the portal does); its token works on the API. */
const mint = (body?: unknown, key = school.key) => openPortalSession(key, body);

/** GET /v3/webhooks with `token`. */
const listWith = (token: string) => callJson("/v3/webhooks", { key: token });

describe("POST /v3/portal-sessions", () => {
  it("answers 201 with the token, the portal link, its end and its mode; defaults 3600 s, not read-only; never cached", async () => {
    const before = Date.now();
    const { status, body, res } = await callJson("/v3/portal-sessions", { method: "POST", key: school.key, json: {} });
    expect(status).toBe(201);
    const session = body.result;
    expect(session).toEqual({
      token: expect.stringMatching(/^ps_[A-Za-z0-9_-]{43}$/),
      url: `${BASE}/portal#token=${session.token}`,
      expiresAt: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/),
      readOnly: false,
      scopes: ["courses:read", "webhooks:read", "webhooks:write", "events:read"],
    });
    const ends = Date.parse(session.expiresAt);
    expect(ends).toBeGreaterThanOrEqual(before + 3600_000);
    expect(ends).toBeLessThanOrEqual(Date.now() + 3600_000);
    expect(res.headers.get("cache-control")).toBe("no-store");
    // Answers to an API key carry no portal session headers.
    expect(res.headers.get("x-portal-session-expires-at")).toBeNull();
  });

  it("takes the length and the mode from the body, and no body at all", async () => {
    const before = Date.now();
    const s = await mintLink({ expiresInSeconds: 60, readOnly: true });
    expect(s.readOnly).toBe(true);
    expect(Date.parse(s.expiresAt) - before).toBeGreaterThanOrEqual(60_000);
    expect(Date.parse(s.expiresAt) - Date.now()).toBeLessThanOrEqual(60_000);
    const week = await mintLink({ expiresInSeconds: 604_800 });
    expect(Date.parse(week.expiresAt) - Date.now()).toBeGreaterThan(604_700_000);
    const bare = await mintLink();
    expect(bare.readOnly).toBe(false);
  });

  it("stores the token only as its SHA-256 hash, with its school, end and mode", async () => {
    const s = await mintLink({ expiresInSeconds: 120, readOnly: true });
    const { results } = await env.DIRECTORY.prepare("SELECT * FROM portal_sessions").all<Record<string, unknown>>();
    expect(JSON.stringify(results)).not.toContain(s.token);
    expect(JSON.stringify(results)).not.toContain(s.token.slice(3));
    const mine = await env.DIRECTORY.prepare("SELECT * FROM portal_sessions WHERE token_hash = ?")
      .bind(await sha256Hex(s.token))
      .first();
    expect(mine).toMatchObject({ school_id: school.schoolId, expires_at: Date.parse(s.expiresAt), read_only: 1, revoked_at: null, link: 1 });
  });

  it.each([
    [{ expiresInSeconds: 59 }, "expiresInSeconds"],
    [{ expiresInSeconds: 604_801 }, "expiresInSeconds"],
    [{ expiresInSeconds: 90.5 }, "expiresInSeconds"],
    [{ expiresInSeconds: "3600" }, "expiresInSeconds"],
    [{ expiresInSeconds: null }, "expiresInSeconds"],
    [{ readOnly: "true" }, "readOnly"],
    [{ readOnly: 1 }, "readOnly"],
  ])("%j is a 400 VALIDATION_ERROR naming %s", async (json, path) => {
    const { status, body } = await callJson("/v3/portal-sessions", { method: "POST", key: school.key, json });
    expect([status, body.code]).toEqual([400, "VALIDATION_ERROR"]);
    expect(body.details.map((d: { path: string }) => d.path)).toEqual([path]);
  });

  it("refuses unknown fields, a body that is not an object or not JSON, a query string and another media type", async () => {
    const unknown = await callJson("/v3/portal-sessions", { method: "POST", key: school.key, json: { expiresInSecond: 60 } });
    expect([unknown.status, unknown.body.code]).toEqual([400, "UNKNOWN_PARAMETER"]);
    expect(unknown.body.message).toContain('did you mean "expiresInSeconds"');
    const proto = await callJson("/v3/portal-sessions", {
      method: "POST",
      key: school.key,
      body: '{"__proto__":{}}',
      headers: { "content-type": "application/json" },
    });
    expect([proto.status, proto.body.code]).toEqual([400, "UNKNOWN_PARAMETER"]);
    const list = await callJson("/v3/portal-sessions", { method: "POST", key: school.key, json: [] });
    expect([list.status, list.body.code]).toEqual([400, "VALIDATION_ERROR"]);
    const broken = await callJson("/v3/portal-sessions", { method: "POST", key: school.key, body: "{", headers: { "content-type": "application/json" } });
    expect([broken.status, broken.body.code]).toEqual([400, "INVALID_JSON"]);
    const query = await callJson("/v3/portal-sessions?readOnly=true", { method: "POST", key: school.key, json: {} });
    expect([query.status, query.body.code]).toEqual([400, "UNKNOWN_PARAMETER"]);
    const text = await callJson("/v3/portal-sessions", { method: "POST", key: school.key, body: "{}", headers: { "content-type": "text/plain" } });
    expect([text.status, text.body.code]).toEqual([415, "UNSUPPORTED_MEDIA_TYPE"]);
  });

  it("a portal token cannot mint sessions nor revoke them (403 FORBIDDEN); no credential is 401", async () => {
    const { token } = await mint();
    const post = await callJson("/v3/portal-sessions", { method: "POST", key: token, json: {} });
    expect([post.status, post.body.code]).toEqual([403, "FORBIDDEN"]);
    const del = await callJson("/v3/portal-sessions", { method: "DELETE", key: token });
    expect([del.status, del.body.code]).toEqual([403, "FORBIDDEN"]);
    const anon = await callJson("/v3/portal-sessions", { method: "POST", json: {} });
    expect([anon.status, anon.body.code]).toEqual([401, "UNAUTHORIZED"]);
    // 401 and 403 come before any 400.
    const bad = await callJson("/v3/portal-sessions?x=1", { method: "POST", key: token, json: { nope: 1 } });
    expect([bad.status, bad.body.code]).toEqual([403, "FORBIDDEN"]);
  });
});

describe("a portal token's scope, on every operation of the router", () => {
  let full: string;
  let readOnly: string;
  beforeAll(async () => {
    full = (await mint()).token;
    readOnly = (await mint({ readOnly: true })).token;
  });

  /** A path of `op` with its segments filled: the school's registration, an unknown event, an unknown course. */
  const pathOf = (path: string) => path.replace("{id}", path.startsWith("/v3/webhooks") ? hookId : "crs_portal").replace("{eventId}", "evt_portal");
  const secured = operations.filter((op) => !op.public);
  const keyOnly = secured.filter((op) => !op.portalTokens);
  // The redeem ends the token it is called with: test/http/portal-links.test.ts covers it.
  const portal = secured.filter((op) => op.portalTokens && !op.readOnlyTokens);

  it("the router has operations of each kind (else these tests prove nothing)", () => {
    expect(keyOnly.map((op) => `${op.method} ${op.path}`)).toEqual(
      expect.arrayContaining(["GET /v3/courses", "POST /v3/courses", "POST /v3/portal-sessions", "DELETE /v3/portal-sessions"]),
    );
    expect(portal.map((op) => `${op.method} ${op.path}`)).toEqual(
      expect.arrayContaining(["GET /v3/webhooks", "POST /v3/webhooks", "DELETE /v3/webhooks/{id}"]),
    );
    expect(portal.every((op) => op.path.startsWith("/v3/webhooks") || op.path.startsWith("/v3/event") || op.path === "/v3/school")).toBe(true);
  });

  it("every operation that takes API keys only answers 403 FORBIDDEN to a valid token, read-only or not, whatever the body", async () => {
    for (const op of keyOnly) {
      for (const token of [full, readOnly]) {
        const init = op.method === "GET" ? { key: token } : { method: op.method, key: token, json: { unknownField: true } };
        const { status, body, res } = await callJson(pathOf(op.path), init);
        expect([`${op.method} ${op.path}`, status, body.code]).toEqual([`${op.method} ${op.path}`, 403, "FORBIDDEN"]);
        expect(body.message).toContain("use an API key");
        // Out of its scope, the answer says nothing of the session.
        expect(res.headers.get("x-portal-session-expires-at")).toBeNull();
      }
    }
  });

  it("every webhook operation takes a valid token and answers as it would to an API key, with the session's headers", async () => {
    // Disabled, the registration refuses tests and resends (409): nothing is sent. Each body is
    // `{}`: what each operation answers to it (docs/reference.md, each operation's section).
    const expected: Record<string, [number, string | null]> = {
      "POST /v3/webhooks": [400, "VALIDATION_ERROR"], // no url
      "GET /v3/webhooks": [200, null],
      "GET /v3/webhooks/{id}": [200, null],
      "PATCH /v3/webhooks/{id}": [200, null],
      "POST /v3/webhooks/{id}/secret/rotate": [200, null],
      "DELETE /v3/webhooks/{id}": [404, "WEBHOOK_NOT_FOUND"], // an unknown id: see below
      "GET /v3/webhooks/{id}/deliveries": [200, null],
      "GET /v3/webhooks/{id}/stats": [200, null],
      "POST /v3/webhooks/{id}/test": [409, "WEBHOOK_DISABLED"],
      "POST /v3/webhooks/{id}/deliveries/{eventId}/resend": [409, "WEBHOOK_DISABLED"],
      "POST /v3/webhooks/{id}/recover": [400, "VALIDATION_ERROR"], // no since
      "GET /v3/events": [200, null],
      "GET /v3/school": [200, null],
    };
    expect(portal.map((op) => `${op.method} ${op.path}`).sort()).toEqual(Object.keys(expected).sort());
    expect((await callJson(`/v3/webhooks/${hookId}`, { method: "PATCH", key: school.key, json: { enabled: false } })).status).toBe(200);
    const session = await mint();
    for (const op of portal) {
      const init = op.method === "GET" ? { key: session.token } : { method: op.method, key: session.token, json: {} };
      // DELETE last would remove the registration the others use: a path of its own.
      const path = op.method === "DELETE" ? `/v3/webhooks/wh_portal_unknown` : pathOf(op.path);
      const { status, body, res } = await callJson(path, init);
      const name = `${op.method} ${op.path}`;
      expect([name, status, body.code ?? null]).toEqual([name, ...expected[name]!]);
      expect(res.headers.get("x-portal-session-read-only")).toBe("false");
      expect(res.headers.get("x-portal-session-expires-at")).toBe(session.expiresAt);
    }
  });

  it("a read-only token: its GETs answer, every other webhook operation is 403 FORBIDDEN and changes nothing", async () => {
    for (const op of portal) {
      if (op.method === "GET") {
        const { status, res } = await callJson(pathOf(op.path), { key: readOnly });
        expect([`${op.method} ${op.path}`, status]).toEqual([`${op.method} ${op.path}`, 200]);
        expect(res.headers.get("x-portal-session-read-only")).toBe("true");
        continue;
      }
      const { status, body, res } = await callJson(pathOf(op.path), { method: op.method, key: readOnly, json: { url: "https://changed.example.com/" } });
      expect([`${op.method} ${op.path}`, status, body.code]).toEqual([`${op.method} ${op.path}`, 403, "FORBIDDEN"]);
      expect(body.message).toContain("read-only");
      expect(res.headers.get("x-portal-session-read-only")).toBe("true");
    }
    const list = await listWith(school.key);
    expect(list.body.result.map((w: { id: string; url: string }) => [w.id, w.url])).toEqual([[hookId, "https://hooks.example.com/portal"]]);
  });

  it("a token sees its own school only", async () => {
    const token = (await mint(undefined, other.key)).token;
    const { status, body } = await listWith(token);
    expect([status, body.result]).toEqual([200, []]);
    const hook = await callJson(`/v3/webhooks/${hookId}/deliveries`, { key: token });
    expect([hook.status, hook.body.code]).toEqual([404, "WEBHOOK_NOT_FOUND"]);
  });
});

describe("ended tokens: expired, revoked, unknown, malformed", () => {
  it("an expired token is 401, saying when it ended; one still within its time works", async () => {
    const live = await mint({ expiresInSeconds: 60 });
    const ended = await mint({ expiresInSeconds: 60 });
    expect((await listWith(live.token)).status).toBe(200);
    // The session's end moved into the past: the clock of the test cannot run 60 s ahead.
    const endedAt = Date.now() - 1;
    await env.DIRECTORY.prepare("UPDATE portal_sessions SET expires_at = ? WHERE token_hash = ?")
      .bind(endedAt, await sha256Hex(ended.token))
      .run();
    const { status, body } = await listWith(ended.token);
    expect([status, body.code]).toEqual([401, "UNAUTHORIZED"]);
    expect(body.message).toContain(`ended at ${new Date(endedAt).toISOString()}`);
    expect((await listWith(live.token)).status).toBe(200);
  });

  it("DELETE /v3/portal-sessions revokes every token of the school, and only of that school: 401 from then on", async () => {
    const mine = [await mint(), await mint({ readOnly: true })];
    const theirs = await mint(undefined, other.key);
    // Count what is still valid before (earlier tests minted some).
    const valid = await env.DIRECTORY.prepare("SELECT count(*) AS n FROM portal_sessions WHERE school_id = ? AND revoked_at IS NULL AND expires_at > ?")
      .bind(school.schoolId, Date.now())
      .first<{ n: number }>();
    const { status, body } = await callJson("/v3/portal-sessions", { method: "DELETE", key: school.key });
    expect([status, body.result]).toEqual([200, { revoked: valid!.n }]);
    expect(valid!.n).toBeGreaterThanOrEqual(2);
    for (const s of mine) {
      const res = await listWith(s.token);
      expect([res.status, res.body.code]).toEqual([401, "UNAUTHORIZED"]);
      expect(res.body.message).toContain("revoked");
    }
    expect((await listWith(theirs.token)).status).toBe(200);
    // Nothing left to revoke; a new token works again.
    expect((await callJson("/v3/portal-sessions", { method: "DELETE", key: school.key })).body.result).toEqual({ revoked: 0 });
    expect((await listWith((await mint()).token)).status).toBe(200);
  });

  it("DELETE takes no query parameter", async () => {
    const { status, body } = await callJson("/v3/portal-sessions?all=1", { method: "DELETE", key: school.key });
    expect([status, body.code]).toEqual([400, "UNKNOWN_PARAMETER"]);
  });

  it.each([
    ["an unknown token", "ps_unknownunknownunknownunknownunknownunknown1"],
    ["a malformed token", "ps_bad@token"],
    ["a bare prefix", "ps_"],
  ])("%s is 401 UNAUTHORIZED", async (_label, token) => {
    const { status, body } = await listWith(token);
    expect([status, body.code]).toEqual([401, "UNAUTHORIZED"]);
  });
});

describe("pruning (the cron)", () => {
  it("deletes the sessions expired more than a day ago, and only those", async () => {
    const now = Date.now();
    const rows = [
      ["prune_old", now - 25 * 3600_000],
      ["prune_recent", now - 3600_000],
      ["prune_live", now + 3600_000],
    ] as const;
    for (const [hash, expires] of rows) {
      await env.DIRECTORY.prepare("INSERT INTO portal_sessions (token_hash, school_id, created_at, expires_at) VALUES (?, 'sch_prune', ?, ?)")
        .bind(hash, now - 30 * 3600_000, expires)
        .run();
    }
    expect(await prunePortalSessions(env.DIRECTORY, now)).toBe(1);
    const { results } = await env.DIRECTORY.prepare("SELECT token_hash FROM portal_sessions WHERE school_id = 'sch_prune' ORDER BY token_hash").all();
    expect(results).toEqual([{ token_hash: "prune_live" }, { token_hash: "prune_recent" }]);
  });
});
