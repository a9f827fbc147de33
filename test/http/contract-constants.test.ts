/**
 * The code's constants pinned to the contract's numbers, written here as literals: the other
 * tests write these numbers themselves and never import the constant they check, so a wrong
 * constant fails here (docs/reference.md § Conventions, § Event delivery, § Delivery log,
 * § Deployment settings (wrangler vars); docs/architecture.md § The I/O context budget).
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { IDEMPOTENCY_TTL_MS } from "../../src/db/idempotency";
import { RETENTION_MS } from "../../src/lib/limits";
import { DEFAULT_RETRY_SCHEDULE_S, judgeAttempt, MAX_RETRY_AFTER_MS, parseTimeoutMs } from "../../src/webhooks/delivery/schedule";
import { COURIER_SLOTS } from "../../src/webhooks/rpc";

describe("the code's constants are the contract's numbers", () => {
  it("an Idempotency-Key is honoured for 24 h", () => {
    expect(IDEMPOTENCY_TTL_MS).toBe(86_400_000);
  });

  it("events and delivery attempts are retained 7 days", () => {
    expect(RETENTION_MS).toBe(604_800_000);
  });

  it("a Retry-After is capped at 24 h", () => {
    expect(MAX_RETRY_AFTER_MS).toBe(86_400_000);
  });

  it("the default retry schedule is 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h, lengthened by at most 10 %", () => {
    expect(DEFAULT_RETRY_SCHEDULE_S).toEqual([5, 300, 1800, 7200, 18000, 36000, 36000]);
    // Half the largest jitter lengthens a 10 h wait by 5 %: 10.5 h.
    expect(judgeAttempt(500, 7, DEFAULT_RETRY_SCHEDULE_S, null, 0.5)).toEqual({ status: "pending", retryInMs: 37_800_000 });
  });

  it("the default attempt timeout is 15,000 ms; the suite runs with 1,000 ms", () => {
    expect(parseTimeoutMs(undefined)).toBe(15_000);
    // What the timing tests write as 1_000 (vitest.config.ts).
    expect(parseTimeoutMs(env.WEBHOOK_TIMEOUT_MS)).toBe(1_000);
  });

  it("a courier has 5 requests waiting for headers at most (the sixth slot of its I/O context is for the hub)", () => {
    expect(COURIER_SLOTS).toBe(5);
  });
});
