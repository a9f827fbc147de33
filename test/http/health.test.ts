/**
 * GET /healthz (docs/reference.md § "GET /healthz"): no credential, outside the rate limit,
 * never cached; 200 with the version and each database's probe, 503 SERVICE_UNAVAILABLE
 * naming each database that did not answer.
 */
import { createExecutionContext, env, waitOnExecutionContext } from "cloudflare:test";
import { beforeEach, describe, expect, it } from "vitest";
import { forgetHealthProbe } from "../../src/db/health";
import worker from "../../src/index";
import { BASE } from "../support/helpers";
import { checkResponse } from "../support/openapi-check";

/** Calls the Worker with `overrides` on its env (the rate limit on, 5 a minute per client in vitest.config.ts). */
async function health(overrides: Partial<Env> = {}, headers: Record<string, string> = {}) {
  const exec = createExecutionContext();
  const res = await worker.fetch(
    new Request(`${BASE}/healthz`, { headers }) as Request<unknown, IncomingRequestCfProperties>,
    { ...env, RATE_LIMIT_ENABLED: "true", ...overrides },
    exec,
  );
  await waitOnExecutionContext(exec);
  await checkResponse("GET", `${BASE}/healthz`, res.clone());
  return { res, body: (await res.json()) as { status: string; code?: string; result?: any; details?: { path: string; message: string }[] } };
}

beforeEach(() => forgetHealthProbe());

describe("GET /healthz", () => {
  it("answers 200 without a credential: the API's version, the build, and every database's probe", async () => {
    const { res, body } = await health();
    expect(res.status).toBe(200);
    expect(res.headers.get("cache-control")).toBe("no-store");
    expect(body.result.version).toBe("3.0.0");
    expect(Object.keys(body.result.build).sort()).toEqual(["id", "tag", "timestamp"]);
    expect(body.result.databases.map((d: { binding: string; ok: boolean }) => [d.binding, d.ok])).toEqual([
      ["DIRECTORY", true],
      ["SHARD_0", true],
      ["SHARD_1", true],
    ]);
  });

  it("is not counted by the rate limit: 12 checks from one client within a minute all answer 200", async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 12; i++) statuses.push((await health({}, { "cf-connecting-ip": "203.0.113.77" })).res.status);
    expect(statuses).toEqual(Array(12).fill(200));
  });

  it("answers 503 SERVICE_UNAVAILABLE naming the shard that does not answer", async () => {
    const broken = { prepare: () => ({ first: () => Promise.reject(new Error("D1_ERROR: database unavailable")) }) } as unknown as D1Database;
    const { res, body } = await health({ SHARD_1: broken } as Partial<Env>);
    expect(res.status).toBe(503);
    expect(res.headers.get("retry-after")).toBe("2");
    expect(body.code).toBe("SERVICE_UNAVAILABLE");
    expect(body.details).toEqual([{ path: "databases.SHARD_1", message: "did not answer within 2000 ms" }]);
  });

  it("reuses an isolate's probe for 2 s: a flood of checks costs the databases one query each", async () => {
    let queries = 0;
    const first = () => {
      queries += 1;
      return Promise.resolve({ 1: 1 });
    };
    const counted = { prepare: () => ({ first }) } as unknown as D1Database;
    for (let i = 0; i < 20; i++) expect((await health({ DIRECTORY: counted } as Partial<Env>)).res.status).toBe(200);
    expect(queries).toBe(1);
  });
});
