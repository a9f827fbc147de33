/**
 * The rate limit (API.md § "Conventions"): the Workers rate-limiting binding, here with the
 * small limit of vitest.config.ts (5 per 60 s; wrangler.toml has 600), turned on for this
 * file only by calling the Worker with `RATE_LIMIT_ENABLED: "true"`.
 *
 * The binding's counter is miniflare's local one (a Durable Object of its own, fixed windows of
 * `period`), the stand-in for Cloudflare's per-location counter (Workers docs, "Rate Limiting" binding).
 */
import { createExecutionContext, env, waitOnExecutionContext } from "cloudflare:test";
import { beforeAll, beforeEach, describe, expect, it } from "vitest";
import worker from "../src/index";
import { sha256Hex } from "../src/lib/crypto";
import { fixture, KEY_A, KEY_B } from "./fixtures";
import { BASE, loadFixture } from "./helpers";
import { checkResponse } from "./openapi-check";

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
  const request = new Request(`${BASE}${path}`, { headers });
  const exec = createExecutionContext();
  const res = await worker.fetch(request as Request<unknown, IncomingRequestCfProperties>, { ...env, RATE_LIMIT_ENABLED: enabled }, exec);
  await waitOnExecutionContext(exec);
  await checkResponse("GET", `${BASE}${path}`, res.clone());
  return res;
}

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
    await env.DB.prepare("INSERT INTO portal_sessions (token_hash, school_id, created_at, expires_at) VALUES (?, 'sch_b', ?, ?)")
      .bind(await sha256Hex(token), Date.now(), Date.now() + 3600_000)
      .run();
    const t = { authorization: `Bearer ${token}` };
    for (let i = 0; i < LIMIT; i++) expect((await send("/v3/webhooks", t)).status).toBe(200);
    const over = await send("/v3/webhooks", t);
    expect(over.status).toBe(429);
    expect(((await over.json()) as { message: string }).message).toContain("portal session");
    expect((await send("/v3/courses?limit=1", { authorization: `Bearer ${KEY_B}` })).status).toBe(200);
  });

  it("RATE_LIMIT_ENABLED=false turns it off: no 429, no RateLimit-Policy", async () => {
    const a = { authorization: `Bearer ${KEY_A}` };
    const res = await send("/v3/courses?limit=1", a, "false");
    expect(res.status).toBe(200);
    expect(res.headers.get("ratelimit-policy")).toBeNull();
  });
});
