/**
 * Each portal session on its own counter (docs/reference.md § Rate limit): a session's
 * requests count on its own counter (5 per 60 s here, vitest.config.ts; wrangler.toml 600)
 * and on its school's (10 here; wrangler.toml 2,400). One session over its own limit leaves
 * another session of the same school working. The limiter is on for these calls only, as in
 * test/http/rate-limit.test.ts.
 */
import { createExecutionContext, env, waitOnExecutionContext } from "cloudflare:test";
import { beforeEach, describe, expect, it } from "vitest";
import worker from "../../src/index";
import { BASE } from "../support/helpers";
import { newSchool, openPortalSession } from "../support/webhooks/harness";

const SESSION_LIMIT = 5;

/** miniflare's windows are aligned on the wall clock: start with at least 10 s left in one. */
beforeEach(async () => {
  const left = 60_000 - (Date.now() % 60_000);
  if (left < 10_000) await new Promise((resolve) => setTimeout(resolve, left + 50));
}, 15_000);

/** GET /v3/webhooks with `token`, the rate limiter on. */
async function list(token: string): Promise<number> {
  const exec = createExecutionContext();
  const request = new Request(`${BASE}/v3/webhooks`, { headers: { authorization: `Bearer ${token}`, "cf-connecting-ip": "198.51.100.38" } });
  const res = await worker.fetch(request as Request<unknown, IncomingRequestCfProperties>, { ...env, RATE_LIMIT_ENABLED: "true" }, exec);
  await waitOnExecutionContext(exec);
  return res.status;
}

describe("portal sessions of one school", () => {
  it("one session exhausting its own counter does not stop another session of the same school", async () => {
    const school = await newSchool("rl_sessions");
    // Opened with the limiter off (the test worker's default): only the calls below count.
    const first = (await openPortalSession(school.key)).token;
    const second = (await openPortalSession(school.key)).token;
    // The second session is verified (a first request) before the first one runs out: from
    // then on its requests are charged to its counters before they run.
    expect(await list(second)).toBe(200);
    const statuses: number[] = [];
    for (let i = 0; i <= SESSION_LIMIT; i++) statuses.push(await list(first));
    expect(statuses).toEqual([200, 200, 200, 200, 200, 429]);
    expect(await list(second)).toBe(200);
  });
});
