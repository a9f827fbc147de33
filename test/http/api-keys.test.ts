/**
 * API keys as operators manage them (docs/operations.md § "Operating the service"; src/db/api-keys.ts,
 * the statements of `npm run keys`, here run bound on the test D1): a new key is stored only
 * as its hash and authenticates; a listing never shows it; a revoked key is 401 from then
 * on. `npm run test:keys` drives the CLI itself through wrangler.
 */
import { env } from "cloudflare:test";
import { beforeAll, describe, expect, it } from "vitest";
import { insertKey, type KeyListRow, keyListing, labelProblem, listKeys, newApiKey, parseExpiresIn, revokeKey } from "../../src/db/api-keys";
import { type ImportStep, renderBound } from "../../src/db/import-sql";
import { sha256Hex } from "../../src/lib/crypto";
import { callJson, loadFixture } from "../support/helpers";

const SCHOOL = "sch_keys";

/** Runs one statement on the test D1 and returns its rows. */
async function run<T>(step: ImportStep): Promise<T[]> {
  const [s] = renderBound([step]);
  return (
    await env.DIRECTORY.prepare(s!.sql)
      .bind(...s!.params)
      .all<T>()
  ).results;
}

beforeAll(async () => {
  await loadFixture({ schools: [{ id: SCHOOL, name: "Keys school", apiKeys: ["sk_test_keys_imported"] }] });
});

describe("npm run keys: the statements", () => {
  it("create: a sk_live_ key with its id, stored only as its hash, that authenticates at once", async () => {
    const k = await newApiKey(SCHOOL, "ERP sync", Date.parse("2026-11-01T00:00:00Z"));
    expect(k.key).toMatch(/^sk_live_[A-Za-z0-9_-]{43}$/);
    expect(k.id).toMatch(/^key_[0-9A-Z]{26}$/);
    expect(k.last4).toBe(k.key.slice(-4));
    expect(await run(insertKey(k))).toEqual([{ id: k.id }]);
    const { results } = await env.DIRECTORY.prepare("SELECT * FROM api_keys WHERE school_id = ?").bind(SCHOOL).all();
    expect(JSON.stringify(results)).not.toContain(k.key.slice("sk_live_".length, -4));
    expect(results).toContainEqual({
      key_hash: await sha256Hex(k.key),
      school_id: SCHOOL,
      created_at: k.createdAt,
      revoked_at: null,
      id: k.id,
      label: "ERP sync",
      last4: k.last4,
      // No --scope, no --expires-in: every scope, no expiry.
      scopes: "courses:read courses:write students:read webhooks:read webhooks:write events:read portal",
      expires_at: null,
    });
    expect((await callJson("/v3/webhooks", { key: k.key })).status).toBe(200);
  });

  it("create with scopes and an expiry: the row holds them (stored in canonical order), the listing shows them", async () => {
    const at = Date.parse("2026-10-31T00:00:00Z");
    const k = await newApiKey(SCHOOL, "timetable", at, { scopes: ["events:read", "courses:read"], expiresAt: at + 90 * 86_400_000 });
    await run(insertKey(k));
    const row = await env.DIRECTORY.prepare("SELECT scopes, expires_at FROM api_keys WHERE id = ?").bind(k.id).first();
    expect(row).toEqual({ scopes: "courses:read events:read", expires_at: Date.parse("2027-01-29T00:00:00Z") });
    const listed = keyListing(await run<KeyListRow>(listKeys(SCHOOL)))!.find((l) => l.id === k.id);
    expect(listed).toMatchObject({ scopes: ["courses:read", "events:read"], expiresAt: Date.parse("2027-01-29T00:00:00Z") });
  });

  it("--expires-in: a whole number of days, hours or minutes, from 1 minute to 3,650 days", () => {
    expect(parseExpiresIn("90d")).toBe(7_776_000_000);
    expect(parseExpiresIn("12h")).toBe(43_200_000);
    expect(parseExpiresIn("30m")).toBe(1_800_000);
    expect(parseExpiresIn("3650d")).toBe(315_360_000_000);
    for (const bad of ["3651d", "0m", "1.5h", "90", "d", "10s", "-1d", " 1d", "01d"])
      expect(parseExpiresIn(bad), bad).toEqual({ problem: expect.stringContaining("is not a duration") });
  });

  it("create for an unknown school writes nothing", async () => {
    const k = await newApiKey("sch_nowhere", null);
    expect(await run(insertKey(k))).toEqual([]);
    expect(await env.DIRECTORY.prepare("SELECT count(*) AS n FROM api_keys WHERE school_id = 'sch_nowhere'").first()).toEqual({ n: 0 });
  });

  it("list: every key of the school, oldest first — id, label, last 4, createdAt, revokedAt, never the key; null for an unknown school", async () => {
    const later = await newApiKey(SCHOOL, null, Date.parse("2026-11-02T00:00:00Z"));
    await run(insertKey(later));
    const listing = keyListing(await run<KeyListRow>(listKeys(SCHOOL)))!;
    expect(listing.map((k) => Object.keys(k).sort())).toEqual(listing.map(() => ["createdAt", "expiresAt", "id", "label", "last4", "revokedAt", "scopes"]));
    const every = ["courses:read", "courses:write", "students:read", "webhooks:read", "webhooks:write", "events:read", "portal"];
    expect(listing.at(-1)).toEqual({
      id: later.id,
      label: null,
      last4: later.last4,
      createdAt: later.createdAt,
      revokedAt: null,
      scopes: every,
      expiresAt: null,
    });
    // The imported key has an id and its last 4 characters too, and every scope (the import carries none).
    expect(listing[0]).toMatchObject({ id: expect.stringMatching(/^key_/), last4: "rted", revokedAt: null, scopes: every, expiresAt: null });
    expect(JSON.stringify(listing)).not.toContain(later.key);
    expect(keyListing(await run<KeyListRow>(listKeys("sch_nowhere")))).toBeNull();
    await loadFixture({ schools: [{ id: "sch_keyless", name: "No keys" }] });
    expect(keyListing(await run<KeyListRow>(listKeys("sch_keyless")))).toEqual([]);
  });

  it("revoke: 401 from then on; a second revoke keeps the first instant; an unknown id changes nothing", async () => {
    const k = await newApiKey(SCHOOL, "to revoke");
    await run(insertKey(k));
    expect((await callJson("/v3/webhooks", { key: k.key })).status).toBe(200);
    const at = Date.now();
    expect(await run(revokeKey(k.id, at))).toEqual([{ id: k.id, school_id: SCHOOL, revoked_at: at }]);
    const refused = await callJson("/v3/webhooks", { key: k.key });
    expect([refused.status, refused.body.code]).toEqual([401, "UNAUTHORIZED"]);
    expect(await run(revokeKey(k.id, at + 5000))).toEqual([{ id: k.id, school_id: SCHOOL, revoked_at: at }]);
    expect(await run(revokeKey("key_unknown"))).toEqual([]);
    // Course reads resolve the key inside their statement: refused there too.
    expect((await callJson("/v3/courses", { key: k.key })).status).toBe(401);
  });

  it("labels: 1–200 characters, no control characters", () => {
    expect(labelProblem("ERP sync (prod)")).toBeNull();
    expect(labelProblem("x".repeat(200))).toBeNull();
    expect(labelProblem("")).toMatch(/1 to 200/);
    expect(labelProblem("x".repeat(201))).toMatch(/1 to 200/);
    expect(labelProblem("a\nb")).toMatch(/control/);
  });
});
