/**
 * Revocation that holds (docs/reference.md § Portal sessions, docs/operations.md § Keys,
 * logs): a portal session records the key that minted it (a redeemed one inherits it);
 * revoking the key — `npm run keys -- revoke`'s statements, run here bound in one D1 batch as
 * the CLI runs them in one command — revokes its sessions with it; registrations record
 * `createdBy`; each request's log line carries `keyId`, never the credential.
 */
import { env } from "cloudflare:test";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from "vitest";
import { insertKey, newApiKey, revokeKey, revokeSessionsOfKey } from "../../src/db/api-keys";
import { sha256Hex } from "../../src/lib/crypto";
import { migrate as migrateHub } from "../../src/webhooks/hub/storage";
import { callJson, loadFixture } from "../support/helpers";
import { runSteps } from "../support/shards";
import { inHub, mintPortalSession, newSchool, openPortalSession, ownStorage, schemaAsOf } from "../support/webhooks/harness";
import { Receivers } from "../support/webhooks/receivers";

const SCHOOL = "sch_revoke";
const rx = new Receivers();

/** A new key of the school, stored: its plaintext and id. */
async function newKey(label: string) {
  const k = await newApiKey(SCHOOL, label);
  await runSteps(env.DIRECTORY, [insertKey(k)]);
  return k;
}

/** What `npm run keys -- revoke ID` sends: the key and its sessions in one batch. @returns how many sessions it revoked. */
async function revoke(id: string): Promise<number> {
  const now = Date.now();
  const [, sessions] = await runSteps(env.DIRECTORY, [revokeKey(id, now), revokeSessionsOfKey(id, now)]);
  return sessions!.length;
}

const mint = async (key: string, json: unknown = {}) => (await mintPortalSession(key, json)).token;
/** A session token of `key`'s school: a link minted and redeemed. */
const open = async (key: string, json: unknown = {}) => (await openPortalSession(key, json)).token;
const redeem = async (token: string) => {
  const { status, body } = await callJson("/v3/portal-sessions/redeem", { method: "POST", key: token });
  expect(status).toBe(201);
  return body.result.token as string;
};
const listStatus = async (credential: string) => (await callJson("/v3/webhooks", { key: credential })).status;

beforeAll(async () => {
  rx.install();
  await loadFixture({ schools: [{ id: SCHOOL, name: "Revocation school", apiKeys: [] }] });
});
afterAll(() => rx.restore());

describe("revoking a key revokes its portal sessions, in the same batch", () => {
  it("the key, its sessions and the sessions redeemed from them answer 401; another key's session still works", async () => {
    const leaked = await newKey("leaked");
    const kept = await newKey("kept");
    const direct = await open(leaked.key);
    const readOnly = await open(leaked.key, { readOnly: true });
    const redeemed = await redeem(await mint(leaked.key));
    const other = await open(kept.key);
    const stored = await env.DIRECTORY.prepare("SELECT key_id FROM portal_sessions WHERE school_id = ? AND revoked_at IS NULL ORDER BY created_at")
      .bind(SCHOOL)
      .all();
    expect(new Set(stored.results.map((r) => r.key_id))).toEqual(new Set([leaked.id, kept.id]));
    for (const credential of [leaked.key, direct, readOnly, redeemed, other]) expect(await listStatus(credential)).toBe(200);

    expect(await revoke(leaked.id)).toBe(3);
    for (const credential of [leaked.key, direct, readOnly, redeemed]) expect(await listStatus(credential)).toBe(401);
    expect(await listStatus(other)).toBe(200);
    expect(await listStatus(kept.key)).toBe(200);
    // Revoking again revokes nothing more.
    expect(await revoke(leaked.id)).toBe(0);
  });
});

describe("rows stored before the key was recorded stay valid", () => {
  it("a portal session without key_id still works and ends by DELETE; revoking a key leaves it", async () => {
    const k = await newKey("old-rows");
    const token = `ps_stored_before_key_ids_${crypto.randomUUID().replaceAll("-", "")}`;
    // A redeemed session's row (link 0): a link's token would work on the redeem only.
    await env.DIRECTORY.prepare("INSERT INTO portal_sessions (token_hash, school_id, created_at, expires_at, link) VALUES (?, ?, ?, ?, 0)")
      .bind(await sha256Hex(token), SCHOOL, Date.now(), Date.now() + 3600_000)
      .run();
    expect(await listStatus(token)).toBe(200);
    await revoke(k.id);
    expect(await listStatus(token)).toBe(200);
    expect((await callJson("/v3/portal-sessions", { method: "DELETE", key: (await newKey("other")).key })).status).toBe(200);
    expect(await listStatus(token)).toBe(401);
  });

  it("a registration stored before the hub's created_by column reads createdBy: null once migrated", async () => {
    const { schoolId, key } = await newSchool("oldhub");
    await inHub(schoolId, (hub) => {
      const sql = ownStorage(hub).sql;
      // Back to schema version 2 (before created_by), with a registration written then.
      schemaAsOf(sql, 2, migrateHub);
      sql.exec(
        "INSERT INTO webhooks (id, url, events, headers, secret, created_at, updated_at) VALUES ('wh_before', 'https://old.example.com/in', '[\"*\"]', '{}', 'whsec_x', 1, 1)",
      );
      migrateHub(sql);
    });
    const { status, body } = await callJson("/v3/webhooks/wh_before", { key });
    expect([status, body.result.createdBy, body.result.url]).toEqual([200, null, "https://old.example.com/in"]);
  });
});

describe("registrations record createdBy", () => {
  it("the id of the key that created them, directly or through one of its portal sessions", async () => {
    const a = await newKey("a");
    const b = await newKey("b");
    const direct = await callJson("/v3/webhooks", { method: "POST", key: a.key, json: { url: "https://created-by.example.com/a" } });
    const viaToken = await callJson("/v3/webhooks", {
      method: "POST",
      key: await redeem(await mint(b.key)),
      json: { url: "https://created-by.example.com/b" },
    });
    expect([direct.body.result.createdBy, viaToken.body.result.createdBy]).toEqual([a.id, b.id]);
    const list = await callJson("/v3/webhooks", { key: a.key });
    expect(list.body.result.map((w: { url: string; createdBy: string }) => [w.url, w.createdBy])).toEqual([
      ["https://created-by.example.com/a", a.id],
      ["https://created-by.example.com/b", b.id],
    ]);
  });
});

describe("each request's log line carries keyId, never the credential", () => {
  let lines: string[] = [];
  beforeEach(() => {
    lines = [];
    vi.spyOn(console, "log").mockImplementation((line: unknown) => {
      lines.push(String(line));
    });
  });
  afterEach(() => {
    vi.restoreAllMocks();
  });

  it("the key's id for the key, and for a portal session it minted", async () => {
    const k = await newKey("logged");
    const token = await open(k.key);
    lines = [];
    await callJson("/v3/webhooks", { key: k.key, headers: { "x-request-id": "req_keyid_key" } });
    await callJson("/v3/webhooks", { key: token, headers: { "x-request-id": "req_keyid_token" } });
    const byId = new Map(lines.filter((l) => l.startsWith('{"kind":"request"')).map((l) => [JSON.parse(l).requestId, JSON.parse(l)]));
    expect(byId.get("req_keyid_key")).toMatchObject({ keyId: k.id, schoolId: SCHOOL });
    expect(byId.get("req_keyid_token")).toMatchObject({ keyId: k.id, schoolId: SCHOOL });
    expect(lines.join("\n")).not.toContain(k.key);
    expect(lines.join("\n")).not.toContain(token);
  });
});
