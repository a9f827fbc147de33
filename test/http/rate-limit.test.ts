/**
 * The rate limit (docs/reference.md § "Conventions"): the Workers rate-limiting binding, here with the
 * small limit of vitest.config.ts (5 per 60 s; wrangler.toml has 600), turned on for this
 * file only by calling the Worker with `RATE_LIMIT_ENABLED: "true"`.
 *
 * The binding's counter is miniflare's local one (a Durable Object of its own, fixed windows of
 * `period`), the stand-in for Cloudflare's per-location counter (Workers docs, "Rate Limiting" binding).
 * D1 reads are counted at the binding (`countingEnv` of src/bench/ab-variants.ts), whatever the
 * code's own Server-Timing says.
 */
import { createExecutionContext, env, waitOnExecutionContext } from "cloudflare:test";
import { beforeAll, beforeEach, describe, expect, it } from "vitest";
import { countingEnv } from "../../src/bench/ab-variants";
import { RecentlyVerified } from "../../src/http/rate-limit";
import worker from "../../src/index";
import { sha256Hex } from "../../src/lib/crypto";
import { fixture, KEY_A, KEY_B } from "../support/fixtures";
import { BASE, loadFixture } from "../support/helpers";
import { checkResponse } from "../support/openapi-check";

const LIMIT = 5;

beforeAll(async () => {
  await loadFixture(fixture);
});

/**
 * miniflare's windows are aligned on the wall clock (epoch = floor(now / 60 s), its
 * ratelimit-object worker): a sequence of requests that straddles a boundary starts a new
 * count midway and sees no 429. Each test starts with at least 10 s left in its window, far
 * more than its few requests take, waiting for the next window when less is left.
 */
beforeEach(async () => {
  const left = 60_000 - (Date.now() % 60_000);
  if (left < 10_000) await new Promise((resolve) => setTimeout(resolve, left + 50));
}, 15_000);

async function send(path: string, headers: Record<string, string>, enabled = "true") {
  return (await sendCounted(path, headers, enabled)).res;
}

/** Calls the Worker (rate limit on) and counts the D1 calls the request made, at the binding. */
async function sendCounted(path: string, headers: Record<string, string>, enabled = "true") {
  const request = new Request(`${BASE}${path}`, { headers });
  const exec = createExecutionContext();
  const counting = countingEnv({ ...env, RATE_LIMIT_ENABLED: enabled });
  const res = await worker.fetch(request as Request<unknown, IncomingRequestCfProperties>, counting.env, exec);
  await waitOnExecutionContext(exec);
  await checkResponse("GET", `${BASE}${path}`, res.clone());
  return { res, d1: counting.counts.d1 };
}

/** A school of its own with one key, so that no other test has counted or verified it. */
async function freshKey(label: string): Promise<string> {
  const key = `sk_test_rl_${label}_${crypto.randomUUID().slice(0, 8)}`;
  await loadFixture({ schools: [{ id: `sch_rl_${label}_${crypto.randomUUID().slice(0, 8)}`, name: "Rate-limit school", apiKeys: [key] }] });
  return key;
}

const guess = () => `sk_live_${crypto.randomUUID().replaceAll("-", "")}`;

describe("rate limit", () => {
  it("limit + 1 requests of one key: the last is 429 RATE_LIMITED with Retry-After; another key is unaffected", async () => {
    const a = { authorization: `Bearer ${KEY_A}` };
    for (let i = 0; i < LIMIT; i++) {
      const ok = await send("/v3/courses?limit=1", a);
      expect(ok.status).toBe(200);
      expect(ok.headers.get("ratelimit-policy")).toBe(`"default";q=${LIMIT};w=60`);
    }
    const over = await send("/v3/courses?limit=1", a);
    expect(over.status).toBe(429);
    expect(over.headers.get("retry-after")).toMatch(/^[1-9][0-9]*$/);
    expect(over.headers.get("ratelimit-policy")).toBe(`"default";q=${LIMIT};w=60`);
    expect(over.headers.get("x-request-id")).toBeTruthy();
    const body = (await over.json()) as { status: string; code: string; requestId: string };
    expect([body.status, body.code, body.requestId]).toEqual(["error", "RATE_LIMITED", over.headers.get("x-request-id")]);

    const b = await send("/v3/courses?limit=1", { authorization: `Bearer ${KEY_B}` });
    expect(b.status).toBe(200);
  });

  it("requests without a valid key are counted per client IP, unknown keys included", async () => {
    const ip = { "cf-connecting-ip": "203.0.113.7" };
    const statuses: number[] = [];
    for (let i = 0; i <= LIMIT; i++) statuses.push((await send("/v3/courses", { ...ip, authorization: `Bearer sk_test_guess_${i}` })).status);
    expect(statuses).toEqual([...Array(LIMIT).fill(401), 429]);
    // Another IP is unaffected; the exhausted IP is limited on every route.
    expect((await send("/v3/courses", { "cf-connecting-ip": "203.0.113.8" })).status).toBe(401);
    expect((await send("/openapi.json", ip)).status).toBe(429);
  });

  it("a portal session token is a credential of its own: counted apart from its school's key", async () => {
    const token = "ps_rate_limit_test_token_0123456789abcdefghijklmnop";
    await env.DIRECTORY.prepare("INSERT INTO portal_sessions (token_hash, school_id, created_at, expires_at, link) VALUES (?, 'sch_b', ?, ?, 0)")
      .bind(await sha256Hex(token), Date.now(), Date.now() + 3600_000)
      .run();
    const t = { authorization: `Bearer ${token}` };
    for (let i = 0; i < LIMIT; i++) expect((await send("/v3/webhooks", t)).status).toBe(200);
    const over = await send("/v3/webhooks", t);
    expect(over.status).toBe(429);
    expect(((await over.json()) as { message: string }).message).toContain("credential");
    expect((await send("/v3/courses?limit=1", { authorization: `Bearer ${KEY_B}` })).status).toBe(200);
  });

  it("the portal tokens of one school share the school's counter (2 × LIMIT here): minting tokens does not multiply the limit", async () => {
    const schoolId = `sch_rl_portal_${crypto.randomUUID().slice(0, 8)}`;
    const key = `sk_test_rl_portal_${crypto.randomUUID().slice(0, 8)}`;
    await loadFixture({ schools: [{ id: schoolId, name: "Portal counter school", apiKeys: [key] }] });
    const tokens: string[] = [];
    for (let i = 0; i <= 2 * LIMIT; i++) {
      const token = `ps_rl_shared_${i}_${crypto.randomUUID().replaceAll("-", "")}`;
      await env.DIRECTORY.prepare("INSERT INTO portal_sessions (token_hash, school_id, created_at, expires_at, link) VALUES (?, ?, ?, ?, 0)")
        .bind(await sha256Hex(token), schoolId, Date.now(), Date.now() + 3600_000)
        .run();
      tokens.push(token);
    }
    // 2 × LIMIT + 1 tokens, one request each (from distinct IPs: their first request is also charged to the IP).
    for (const [i, token] of tokens.entries()) {
      expect((await send("/v3/webhooks", { authorization: `Bearer ${token}`, "cf-connecting-ip": `192.0.2.${100 + i}` })).status).toBe(200);
    }
    // The school's tokens have made 2 × LIMIT + 1 requests: the next one of any of them is 429.
    const over = await send("/v3/webhooks", { authorization: `Bearer ${tokens[0]}`, "cf-connecting-ip": "192.0.2.99" });
    expect(over.status).toBe(429);
    // The school's API key has its own counter.
    expect((await send("/v3/webhooks", { authorization: `Bearer ${key}` })).status).toBe(200);
  });

  it("an IPv6 client is counted by its /64: rotating addresses within it does not reset the count", async () => {
    const statuses: number[] = [];
    for (let i = 1; i <= LIMIT + 1; i++) statuses.push((await send("/v3/courses", { "cf-connecting-ip": `2001:db8:5:6:${i}::${i}` })).status);
    expect(statuses).toEqual([...Array(LIMIT).fill(401), 429]);
    // Another /64 is another client; an IPv4-mapped address is its IPv4 client.
    expect((await send("/v3/courses", { "cf-connecting-ip": "2001:db8:5:7::1" })).status).toBe(401);
    expect((await send("/v3/courses", { "cf-connecting-ip": "::ffff:198.51.100.77" })).status).toBe(401);
  });

  it("an IP over its limit answers 429 before any D1 read to new guesses, no credential, public routes and unknown paths", async () => {
    const ip = { "cf-connecting-ip": "198.51.100.20" };
    // Each guess is charged to the IP before its lookup: LIMIT lookups, then none.
    for (let i = 0; i < LIMIT; i++) {
      const { res, d1 } = await sendCounted("/v3/courses", { ...ip, authorization: `Bearer ${guess()}` });
      expect([res.status, d1]).toEqual([401, 1]);
    }
    for (const [path, headers] of [
      ["/v3/courses", { ...ip, authorization: `Bearer ${guess()}` }],
      ["/v3/courses?limit=1", { ...ip, authorization: `Bearer ${guess()}` }],
      ["/v3/webhooks", { ...ip, authorization: `Bearer ${guess()}` }],
      ["/v3/courses", ip],
      ["/openapi.json", ip],
      ["/v3/event-types", ip],
      ["/nowhere", { ...ip, authorization: `Bearer ${guess()}` }],
    ] as const) {
      const { res, d1 } = await sendCounted(path, headers);
      expect([path, res.status, d1]).toEqual([path, 429, 0]);
      expect(res.headers.get("server-timing")).toMatch(/^db;dur=0\.0;desc="D1 round trips: 0"/);
      expect(((await res.json()) as { code: string }).code).toBe("RATE_LIMITED");
    }
  });

  it("a credential verified recently keeps working from an exhausted IP, with its own counter and its one usual D1 read", async () => {
    const ip = { "cf-connecting-ip": "198.51.100.21" };
    const [verifiedKey, unseenKey] = [await freshKey("v"), await freshKey("u")];
    // Verified once from this IP (charged to the IP, and recorded against the key).
    expect((await sendCounted("/v3/courses?limit=1", { ...ip, authorization: `Bearer ${verifiedKey}` })).res.status).toBe(200);
    // Someone behind the same IP guesses keys until the IP is over its limit.
    for (let i = 1; i <= LIMIT; i++) await send("/v3/courses", { ...ip, authorization: `Bearer ${guess()}` });
    const over = await sendCounted("/v3/courses", { ...ip, authorization: `Bearer ${guess()}` });
    expect([over.res.status, over.d1]).toEqual([429, 0]);

    // The verified key: its own counter (1 used by its first request), its usual read each:
    // the directory's check and the shard's page, sent together.
    for (let i = 1; i < LIMIT; i++) {
      const { res, d1 } = await sendCounted("/v3/courses?limit=1", { ...ip, authorization: `Bearer ${verifiedKey}` });
      expect([res.status, d1]).toEqual([200, 2]);
    }
    const spent = await sendCounted("/v3/courses?limit=1", { ...ip, authorization: `Bearer ${verifiedKey}` });
    expect([spent.res.status, spent.d1]).toEqual([429, 0]);
    expect(((await spent.res.json()) as { message: string }).message).toMatch(/this credential/);

    // A valid key this isolate has not verified yet is, from this IP, one more guess.
    const unseen = await sendCounted("/v3/courses?limit=1", { ...ip, authorization: `Bearer ${unseenKey}` });
    expect([unseen.res.status, unseen.d1]).toEqual([429, 0]);
    // From another IP it is verified, and from then on it works from the exhausted IP too.
    expect((await send("/v3/courses?limit=1", { "cf-connecting-ip": "198.51.100.22", authorization: `Bearer ${unseenKey}` })).status).toBe(200);
    expect((await sendCounted("/v3/courses?limit=1", { ...ip, authorization: `Bearer ${unseenKey}` })).res.status).toBe(200);
  });

  it("a revoked key is forgotten: 401, then charged to the IP like any guess", async () => {
    const ip = { "cf-connecting-ip": "198.51.100.23" };
    const key = await freshKey("r");
    expect((await send("/v3/courses?limit=1", { ...ip, authorization: `Bearer ${key}` })).status).toBe(200);
    await env.DIRECTORY.prepare("UPDATE api_keys SET revoked_at = ? WHERE key_hash = ?")
      .bind(Date.now(), await sha256Hex(key))
      .run();
    const statuses: number[] = [];
    for (let i = 0; i < LIMIT; i++) statuses.push((await send("/v3/courses?limit=1", { ...ip, authorization: `Bearer ${key}` })).status);
    // The IP paid 1 for the first request and 1 for each 401: the last one is over.
    expect(statuses).toEqual([...Array(LIMIT - 1).fill(401), 429]);
  });

  it("RATE_LIMIT_ENABLED=false turns it off: no 429, no RateLimit-Policy", async () => {
    const a = { authorization: `Bearer ${KEY_A}` };
    const res = await send("/v3/courses?limit=1", a, "false");
    expect(res.status).toBe(200);
    expect(res.headers.get("ratelimit-policy")).toBeNull();
  });
});

describe("RecentlyVerified (the isolate's set of verified credential hashes)", () => {
  it("forgets a hash once it is older than its age bound, and on demand", () => {
    let now = 0;
    const set = new RecentlyVerified(10, 1000, () => now);
    set.remember("a");
    now = 999;
    expect(set.has("a")).toBe(true);
    set.remember("a"); // verified again: its age starts over
    now = 1998;
    expect(set.has("a")).toBe(true);
    now = 1999;
    expect(set.has("a")).toBe(false);
    expect(set.size).toBe(0);
    set.remember("b");
    set.forget("b");
    expect(set.has("b")).toBe(false);
  });

  it("keeps at most its size bound, dropping the least recently verified", () => {
    const set = new RecentlyVerified(3, 60_000, () => 0);
    for (const h of ["a", "b", "c"]) set.remember(h);
    set.remember("a"); // a is now the most recent
    set.remember("d");
    expect(set.size).toBe(3);
    expect(["a", "b", "c", "d"].filter((h) => set.has(h))).toEqual(["a", "c", "d"]);
  });
});
