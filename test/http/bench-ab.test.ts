/**
 * The benchmark's sessions-and-rate-limit A/B: the variants the benchmark entry serves (src/bench/ab-variants.ts) — B's
 * session-less view of D1, the binding-level call counts, the in-isolate limiter — and the
 * report's verdict and place in bench/RESULTS.md (scripts/lib/bench-ab-report.ts).
 */
import { createExecutionContext, env, waitOnExecutionContext } from "cloudflare:test";
import { beforeAll, describe, expect, it } from "vitest";
import {
  AB_SECTION_END,
  AB_SECTION_START,
  type AbQueryResult,
  type AbTimings,
  abSection,
  abVerdict,
  quantile,
  replaceAbSection,
} from "../../scripts/lib/bench-ab-report";
import { countingEnv, isolateLimiter, sessionlessD1, variantEnv } from "../../src/bench/ab-variants";
import benchWorker from "../../src/bench/entry";
import { openSession } from "../../src/db/client";
import { fixture, KEY_A } from "../support/fixtures";
import { BASE, loadFixture } from "../support/helpers";
import { newSchool } from "../support/webhooks/harness";

beforeAll(async () => {
  await loadFixture(fixture);
});

/** A course read through the benchmark entry, with the rate limiter on over an in-isolate limiter (no shared counters with other files). */
async function read(variant: string, count = true, key = KEY_A) {
  const exec = createExecutionContext();
  const headers: Record<string, string> = { authorization: `Bearer ${key}`, "x-bench-variant": variant };
  if (count) headers["x-bench-count"] = "1";
  const served = { ...env, RATE_LIMIT_ENABLED: "true", RATE_LIMITER: isolateLimiter(1000, 60) };
  const res = await benchWorker.fetch(new Request(`${BASE}/v3/courses?limit=2`, { headers }) as Request<unknown, IncomingRequestCfProperties>, served, exec);
  await waitOnExecutionContext(exec);
  return res;
}

describe("the variants of the benchmark entry", () => {
  it("A: two D1 calls counted at the bindings in one round trip (the directory's check and the shard's page, sent together), one limit() call, the bookmark and the policy", async () => {
    // A key's first request in the isolate is charged to the client IP, then (once verified)
    // recorded against the key: two limit() calls (src/http/rate-limit.ts). The isolate is
    // shared by the files of a vitest worker, so the school and key are ones no other file has.
    const { key } = await newSchool("abfirst");
    expect((await read("a", true, key)).headers.get("x-bench-ratelimit-calls")).toBe("2");
    const res = await read("a", true, key);
    expect(res.status).toBe(200);
    expect(res.headers.get("x-bench-d1-calls")).toBe("2");
    expect(res.headers.get("x-bench-ratelimit-calls")).toBe("1");
    expect(res.headers.get("server-timing")).toContain("D1 round trips: 1");
    expect(res.headers.get("x-d1-bookmark")).toBeTruthy();
    expect(res.headers.get("ratelimit-policy")).toBe(`"default";q=${env.RATE_LIMIT_QUOTA};w=60`);
  });

  it("B: the same records, the same two D1 calls, no limit() call, no bookmark, no policy", async () => {
    const [a, b] = [await read("a"), await read("b")];
    expect(b.status).toBe(200);
    expect(b.headers.get("x-bench-d1-calls")).toBe("2");
    expect(b.headers.get("x-bench-ratelimit-calls")).toBe("0");
    expect(b.headers.get("x-d1-bookmark")).toBeNull();
    expect(b.headers.get("ratelimit-policy")).toBeNull();
    expect(((await b.json()) as any).result).toEqual(((await a.json()) as any).result);
  });

  it("S keeps the sessions without the limiter; M keeps both; without x-bench-count no counts are added", async () => {
    const s = await read("s");
    expect([s.headers.get("x-bench-ratelimit-calls"), s.headers.has("x-d1-bookmark"), s.headers.has("ratelimit-policy")]).toEqual(["0", true, false]);
    expect(variantEnv(env, "m").RATE_LIMIT_ENABLED).toBe(env.RATE_LIMIT_ENABLED);
    expect(variantEnv(env, "m").RATE_LIMITER).not.toBe(env.RATE_LIMITER);
    const plain = await read("a", false);
    expect(plain.headers.has("x-bench-d1-calls")).toBe(false);
  });

  it("variantEnv builds each variant once per env, and A is env itself", () => {
    expect(variantEnv(env, "b")).toBe(variantEnv(env, "b"));
    expect(variantEnv(env, null)).toBe(env);
    expect(variantEnv(env, "a")).toBe(env);
    expect(variantEnv(env, "b").RATE_LIMIT_ENABLED).toBe("false");
  });
});

describe("sessionlessD1", () => {
  it("hands back a session over the same database, with no bookmark", async () => {
    const view = sessionlessD1(env.DIRECTORY);
    expect(sessionlessD1(env.DIRECTORY)).toBe(view);
    const session = openSession(view, "read");
    const row = await session.d1.prepare("SELECT count(*) AS n FROM api_keys").first<{ n: number }>();
    const direct = await env.DIRECTORY.prepare("SELECT count(*) AS n FROM api_keys").first<{ n: number }>();
    expect(row).toEqual(direct);
    expect(session.bookmark()).toBeNull();
    // The real session reports one after a query.
    const real = openSession(env.DIRECTORY, "read");
    await real.d1.prepare("SELECT 1").first();
    expect(real.bookmark()).toBeTruthy();
  });
});

describe("countingEnv", () => {
  it("counts each batch, statement run and limit() call, sessions included; statements bound in a batch still run", async () => {
    const { env: counted, counts } = countingEnv(env);
    const session = openSession(counted.DIRECTORY, "read");
    const [one, two] = await session.d1.batch<{ v: number }>([session.d1.prepare("SELECT ? AS v").bind(1), session.d1.prepare("SELECT 2 AS v")]);
    expect([one!.results[0]!.v, two!.results[0]!.v]).toEqual([1, 2]);
    expect(counts).toEqual({ d1: 1, rateLimit: 0 });
    await counted.DIRECTORY.prepare("SELECT 1").first();
    await counted.DIRECTORY.prepare("SELECT 1").raw();
    await session.db.run("SELECT 1");
    expect(counts.d1).toBe(4);
    expect(session.bookmark()).toBeTruthy();
  });

  it("counts limit() calls and passes their outcome", async () => {
    const { env: counted, counts } = countingEnv({ ...env, RATE_LIMITER: isolateLimiter(1, 60) });
    expect(await counted.RATE_LIMITER.limit({ key: "k" })).toEqual({ success: true });
    expect(await counted.RATE_LIMITER.limit({ key: "k" })).toEqual({ success: false });
    expect(counts.rateLimit).toBe(2);
  });
});

describe("isolateLimiter", () => {
  it("allows `limit` calls per key per window, then refuses until the next window", async () => {
    let now = 60_000;
    const limiter = isolateLimiter(2, 60, () => now);
    const outcomes = [];
    for (let i = 0; i < 3; i++) outcomes.push((await limiter.limit({ key: "a" })).success);
    expect(outcomes).toEqual([true, true, false]);
    expect((await limiter.limit({ key: "b" })).success).toBe(true);
    now += 60_000;
    expect((await limiter.limit({ key: "a" })).success).toBe(true);
  });
});

const timings = (latencies: number[], trips = 1): AbTimings => ({
  latencies,
  serverTotals: latencies,
  counts: { d1Calls: [2], roundTrips: [trips], rateLimitCalls: [1], bookmark: true, policy: true },
});

function result(name: string, a: number[], b: number[], listing = true, trips = 1): AbQueryResult {
  return {
    name,
    request: "GET /v3/courses",
    listing,
    a: timings(a, trips),
    m: timings(b),
    s: timings(b),
    b: timings(b),
    pairedDeltas: a.map((x, i) => x - b[i]!),
  };
}

describe("the A/B report", () => {
  it("quantile takes the nearest rank", () => {
    expect(quantile([5, 1, 3, 2, 4], 0.5)).toBe(3);
    expect(quantile([1, 2, 3, 4], 0.5)).toBe(2);
    expect(quantile([1, 2, 3, 4], 0.9)).toBe(4);
    expect(quantile([], 0.5)).toBeNaN();
  });

  it("the target: p50 A − B ≤ 1 ms over the reads (the floor aside) and one D1 round trip per request in A", () => {
    const floor = result("floor", [9, 9, 9], [1, 1, 1], false);
    expect(abVerdict([floor, result("q", [10, 11, 12], [10, 10, 11])])).toMatchObject({ latencyMet: true, tripsMet: true, met: true, worst: 1 });
    expect(abVerdict([result("q", [10, 12, 13], [10, 10, 11])])).toMatchObject({ latencyMet: false, met: false, worst: 2 });
    expect(abVerdict([result("q", [10, 10, 10], [10, 10, 10], true, 2)])).toMatchObject({ latencyMet: true, tripsMet: false, met: false });
  });

  it("the section replaces its predecessor between the markers, or goes before the hub sections, the rest kept", () => {
    const info = {
      date: "2026-11-22T00:00:00Z",
      cpus: 2,
      load: [1, 2] as [number, number],
      courses: 30000,
      rounds: 3,
      server: "Miniflare",
      command: "npm run bench",
    };
    const section = abSection([result("no filter", [10, 11, 12], [10, 10, 11])], info);
    expect(section[0]).toBe(AB_SECTION_START);
    expect(section.at(-1)).toBe(AB_SECTION_END);
    expect(section.join("\n")).toContain("| no filter | 11.00 | 10.00 | +1.00 | 1.100 |");
    expect(section.join("\n")).toContain("**met**");
    expect(section.join("\n")).toContain("Run with `npm run bench` on 2026-11-22");
    const before = "# Benchmark results\n\n## Listing\n\ntable\n\n## Hub: x\n\nhub\n";
    const inserted = replaceAbSection(before, section);
    expect(inserted).toBe(`# Benchmark results\n\n## Listing\n\ntable\n\n${section.join("\n")}\n\n## Hub: x\n\nhub\n`);
    const again = replaceAbSection(inserted, ["<!-- bench:ab -->", "new", "<!-- /bench:ab -->"]);
    expect(again).toBe("# Benchmark results\n\n## Listing\n\ntable\n\n<!-- bench:ab -->\nnew\n<!-- /bench:ab -->\n\n## Hub: x\n\nhub\n");
    expect(replaceAbSection("# Only a title\n", ["x"])).toBe("# Only a title\n\nx\n");
  });
});
