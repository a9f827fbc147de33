/**
 * The fuzz oracle itself, on answers made up here: a 429 RATE_LIMITED is on contract only
 * from a service whose rate limit is on (its answers carry RateLimit-Policy); the fuzzed
 * services run with it off, so there a 429 is a failure like any other unexpected answer.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { fuzz } from "./oracle";
import type { FuzzRequest } from "./requests";

const valid: FuzzRequest = {
  route: "GET /v3/courses",
  method: "GET",
  path: "/v3/courses",
  headers: {},
  faults: [],
  expect: { success: [200], codes: [] },
  writes: false,
};

/** A 429 RATE_LIMITED in the envelope, with `headers` added. */
const tooMany = (headers: Record<string, string>) =>
  new Response(JSON.stringify({ status: "error", code: "RATE_LIMITED", message: "Too many requests; retry after 60 seconds.", requestId: "req_1" }), {
    status: 429,
    headers: {
      "content-type": "application/json; charset=utf-8",
      "x-request-id": "req_1",
      "server-timing": "db;dur=0, total;dur=1",
      "cache-control": "no-store",
      "retry-after": "60",
      ...headers,
    },
  });

const judged = (res: () => Response) => fuzz({ send: async () => res(), arbitrary: fc.constant(valid), runs: 1, seed: 1, stopOnFailure: false });

describe("the fuzz oracle and 429", () => {
  it("a 429 from a service whose rate limit is off is off contract", async () => {
    const tally = await judged(() => tooMany({}));
    expect([tally.requests, tally.offContract]).toEqual([1, 1]);
  });

  it("a 429 RATE_LIMITED from a service whose rate limit is on (RateLimit-Policy) is on contract", async () => {
    const tally = await judged(() => tooMany({ "ratelimit-policy": '"default";q=5;w=60' }));
    expect(tally.examples).toEqual([]);
    expect([tally.requests, tally.offContract]).toEqual([1, 0]);
  });
});
