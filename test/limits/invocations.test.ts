/**
 * The seam's per-invocation limits (test/support/invocations.ts): D1 queries and subrequests are
 * counted per invocation — each Worker request, cron run, and Durable Object request, RPC call or
 * alarm its own — and refused past the plan's limits with production's errors. Each refusal is
 * the seam's own (the local runtime has no such limit: its message names the simulation).
 */
import { env, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { enterInvocation, invocationPeaks, recentInvocations, resetPeaks } from "../support/invocations";
import { hubStub, newSchool, register } from "../support/webhooks/harness";

// https://developers.cloudflare.com/d1/platform/limits/: queries per Worker invocation.
const D1_QUERIES_PAID = 1000;
const D1_QUERIES_FREE = 50;
// https://developers.cloudflare.com/workers/platform/limits/ § Subrequests.
const SUBREQUESTS_FREE = 50;

const TOO_MANY_QUERIES = /^Too many API requests by single Worker invocation\. \(simulated production limit: a fetch invocation past (1000|50) D1 queries/;
const TOO_MANY_SUBREQUESTS =
  /^Too many subrequests by single Worker invocation\. To configure this limit, refer to https:\/\/developers\.cloudflare\.com\/workers\/platform\/limits\/ \(simulated production limit/;

/** Runs `fn` as one Worker request of the plan. */
const asRequest = <R>(plan: "paid" | "free", fn: () => Promise<R>, owner: object = {}) => enterInvocation("fetch", owner, { WORKERS_PLAN: plan }, fn);

/** Requests sent with an aborted signal: each fails at once, after the seam counted it. */
const NOWHERE = "http://127.0.0.1:9/";

describe("D1 queries per invocation", () => {
  it("Workers Paid: 1,000 queries run, the 1,001st is refused, and every later one", async () => {
    await asRequest("paid", async () => {
      for (let i = 0; i < D1_QUERIES_PAID; i++) await env.SHARD_0.prepare("SELECT 1 AS v").first("v");
      await expect(env.SHARD_0.prepare("SELECT 1 AS v").first("v")).rejects.toThrow(TOO_MANY_QUERIES);
      await expect(env.DIRECTORY.batch([env.DIRECTORY.prepare("SELECT 1")])).rejects.toThrow(TOO_MANY_QUERIES);
    });
  });

  it("Workers Free: 50 queries; a batch and an exec count one each, whatever they hold", async () => {
    await asRequest("free", async () => {
      for (let i = 0; i < D1_QUERIES_FREE - 2; i++) await env.SHARD_0.prepare("SELECT 1").run();
      await env.SHARD_0.batch([env.SHARD_0.prepare("SELECT 1"), env.SHARD_0.prepare("SELECT 2"), env.SHARD_0.prepare("SELECT 3")]);
      await env.SHARD_1.exec("SELECT 1; SELECT 2");
      await expect(env.SHARD_1.withSession("first-primary").prepare("SELECT 1").all()).rejects.toThrow(TOO_MANY_QUERIES);
    });
  });

  it("each invocation counts from zero: a new request runs again; the peak is the most one made", async () => {
    resetPeaks();
    for (let round = 0; round < 2; round++) {
      await asRequest("free", async () => {
        for (let i = 0; i < D1_QUERIES_FREE; i++) await env.SHARD_0.prepare("SELECT 1").run();
      });
    }
    expect(
      recentInvocations()
        .slice(-2)
        .map((i) => i.d1Queries),
    ).toEqual([D1_QUERIES_FREE, D1_QUERIES_FREE]);
    expect(invocationPeaks()).toEqual({ d1Queries: D1_QUERIES_FREE, subrequests: D1_QUERIES_FREE });
  });
});

describe("subrequests per invocation", () => {
  it("Workers Free: 50 subrequests — fetches, Durable Object calls and D1 queries together — the 51st is refused", async () => {
    const { schoolId } = await newSchool("invsub");
    const request = {};
    await asRequest(
      "free",
      async () => {
        for (let i = 0; i < 20; i++) await fetch(NOWHERE, { signal: AbortSignal.abort() }).catch(() => undefined);
        const hub = env.SCHOOL_HUB.get(env.SCHOOL_HUB.idFromName(schoolId));
        for (let i = 0; i < 20; i++) await hub.listWebhooks();
        for (let i = 0; i < 10; i++) await env.SHARD_0.prepare("SELECT 1").run();
        expect(recentInvocations().find((i) => i.owner === request)).toMatchObject({ subrequests: SUBREQUESTS_FREE, d1Queries: 10 });
        await expect(fetch(NOWHERE, { signal: AbortSignal.abort() })).rejects.toThrow(TOO_MANY_SUBREQUESTS);
        await expect(hub.listWebhooks()).rejects.toThrow(TOO_MANY_SUBREQUESTS);
      },
      request,
    );
  });
});

describe("invocation boundaries", () => {
  it("a Worker request is one invocation: its D1 queries and its call to the hub count in it", async () => {
    const { key } = await newSchool("invreq");
    await register(key, "https://inv-bound.example.com/in");
    const request = recentInvocations()
      .filter((i) => i.kind === "fetch")
      .at(-1)!;
    expect(request.d1Queries).toBeGreaterThan(0);
    // The hub's createWebhook: a Durable Object call, a subrequest that is not a D1 query.
    expect(request.subrequests - request.d1Queries).toBeGreaterThanOrEqual(1);
  });

  it("a Durable Object RPC call and an alarm are invocations of their own; a method's calls of its object's methods stay in it", async () => {
    const { schoolId, key } = await newSchool("invobj");
    await register(key, "https://inv-obj.example.com/in");
    const stub = hubStub(schoolId);
    const hub = env.SCHOOL_HUB.get(env.SCHOOL_HUB.idFromName(schoolId));
    await hub.listWebhooks();
    await hub.listWebhooks();
    const rpc = recentInvocations().slice(-2);
    expect(rpc.map((i) => i.kind)).toEqual(["object", "object"]);
    expect(rpc[0]!.owner).toBe(rpc[1]!.owner);
    expect(rpc[0]).not.toBe(rpc[1]);
    await runInDurableObject(stub, async (instance) => {
      // The list keeps the last 100, and is full once the runtime served that many.
      const last = recentInvocations().at(-1);
      await (instance as unknown as { alarm(): Promise<void> }).alarm();
      // One invocation, whatever the alarm called on its own object.
      const all = recentInvocations();
      expect(all.length - 1 - all.indexOf(last!)).toBe(1);
      expect(recentInvocations().at(-1)!.owner).toBe(instance);
    });
    await runDurableObjectAlarm(stub);
  });
});
