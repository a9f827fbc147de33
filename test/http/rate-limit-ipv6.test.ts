/**
 * The IPv6 /48 counter (docs/reference.md § "Rate limit"): a request without a verified
 * credential from an IPv6 client counts against its /64 and its /48, and the stricter
 * decides, so rotating /64s inside one /48 (65,536 of them) does not multiply the limit.
 * The limits here are vitest.config.ts's: 5 per 60 s per /64, 10 per 60 s per /48
 * (wrangler.toml: 600 and 9,600). The limiter is turned on for this file only, as in
 * rate-limit.test.ts.
 */
import { createExecutionContext, env, waitOnExecutionContext } from "cloudflare:test";
import { beforeEach, describe, expect, it } from "vitest";
import worker from "../../src/index";
import { BASE } from "../support/helpers";

const PER_64 = 5;
const PER_48 = 10;

/** miniflare's windows are aligned on the wall clock: start each test with 10 s left at least. */
beforeEach(async () => {
  const left = 60_000 - (Date.now() % 60_000);
  if (left < 10_000) await new Promise((resolve) => setTimeout(resolve, left + 50));
}, 15_000);

/** `GET /openapi.json` (public: charged to the client) from `ip`, the limiter on. */
async function fromIp(ip: string): Promise<Response> {
  const exec = createExecutionContext();
  const res = await worker.fetch(
    new Request(`${BASE}/openapi.json`, { headers: { "cf-connecting-ip": ip } }) as Request<unknown, IncomingRequestCfProperties>,
    { ...env, RATE_LIMIT_ENABLED: "true" },
    exec,
  );
  await waitOnExecutionContext(exec);
  return res;
}

/** A /48 no other test uses: `2001:db8:<random 16 bits>` (documentation prefix). */
const fresh48 = () => `2001:db8:${(crypto.getRandomValues(new Uint16Array(1))[0]! | 1).toString(16)}`;

describe("IPv6 /48 counter", () => {
  it("requests from many /64s of one /48, each under its /64's limit, are limited by the /48's", async () => {
    const site = fresh48();
    const statuses: number[] = [];
    // One request from each of PER_48 + 1 /64s of the site.
    for (let i = 0; i <= PER_48; i++) statuses.push((await fromIp(`${site}:${(i + 1).toString(16)}::1`)).status);
    expect(statuses).toEqual([...Array(PER_48).fill(200), 429]);
    const over = await fromIp(`${site}:ffff::2`);
    expect(over.status).toBe(429);
    const body = (await over.json()) as { code: string; message: string };
    expect(body.code).toBe("RATE_LIMITED");
    expect(body.message).toContain("/48");
    expect(over.headers.get("retry-after")).toMatch(/^[1-9][0-9]*$/);
    // Another /48 (the neighbour of this one) is unaffected.
    const neighbour = `2001:db8:${(Number.parseInt(site.split(":")[2]!, 16) ^ 2).toString(16)}`;
    expect((await fromIp(`${neighbour}:1::1`)).status).toBe(200);
  });

  it("one /64 is still limited by its own counter first, and that counts against its /48", async () => {
    const site = fresh48();
    const statuses: number[] = [];
    for (let i = 0; i <= PER_64; i++) statuses.push((await fromIp(`${site}:1::${(i + 1).toString(16)}`)).status);
    expect(statuses).toEqual([...Array(PER_64).fill(200), 429]);
    // The /64's 6 requests counted against the /48 too: 4 more /64s pass, the 5th is over.
    const others: number[] = [];
    for (let i = 0; i < PER_48 - PER_64; i++) others.push((await fromIp(`${site}:${(i + 2).toString(16)}::1`)).status);
    expect(others).toEqual([200, 200, 200, 200, 429]);
  });
});
