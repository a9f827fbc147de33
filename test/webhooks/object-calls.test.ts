/**
 * Calls between Durable Objects (src/webhooks/platform/object-calls.ts): each times out, a stub
 * whose call failed is replaced by a new one, and an `overloaded` error is told apart so that
 * the caller backs off. Driven on a virtual clock: no wall-clock wait.
 */
import { describe, expect, it } from "vitest";
import { isOverloaded, ObjectCalls } from "../../src/webhooks/platform/object-calls";
import type { Platform } from "../../src/webhooks/platform/platform";
import { VirtualClock } from "../support/webhooks/clock";

/** A platform whose timers fire only when the test moves the clock. */
function virtual(): { platform: Platform; advance: (ms: number) => void } {
  const clock = new VirtualClock(0);
  const owner = { kind: "hub" as const, objectId: "t" };
  const platform: Platform = {
    now: () => clock.now(),
    setTimer: (fn, ms) => clock.setTimer(fn, ms, owner),
    fetch: () => Promise.reject(new Error("no fetch here")),
    call: (send) => Promise.resolve(send()),
  };
  const advance = (ms: number) => {
    const until = clock.now() + ms;
    for (let due = clock.takeDue(until); due; due = clock.takeDue(until)) for (const t of due) if (!t.cancelled) t.fn();
    clock.jump(until);
  };
  return { platform, advance };
}

describe("ObjectCalls", () => {
  it("a call that does not answer within its timeout rejects, and the next call gets a new stub", async () => {
    const { platform, advance } = virtual();
    let made = 0;
    const calls = new ObjectCalls(platform, (name) => ({ name, n: ++made }), 3_000);
    const hanging = calls.call("a", () => new Promise<never>(() => {}));
    advance(2_999);
    let settled = false;
    hanging.catch(() => (settled = true));
    await Promise.resolve();
    expect(settled).toBe(false);
    advance(1);
    await expect(hanging).rejects.toThrow("no answer within 3000 ms");
    const stub = await calls.call("a", (s) => Promise.resolve(s));
    expect(stub.n).toBe(2);
  });

  it("a stub is kept while its calls succeed and replaced after any error", async () => {
    const { platform } = virtual();
    let made = 0;
    const calls = new ObjectCalls(platform, () => ({ n: ++made }));
    expect((await calls.call("a", (s) => Promise.resolve(s))).n).toBe(1);
    expect((await calls.call("a", (s) => Promise.resolve(s))).n).toBe(1);
    await expect(calls.call("a", () => Promise.reject(new Error("broken")))).rejects.toThrow("broken");
    expect((await calls.call("a", (s) => Promise.resolve(s))).n).toBe(2);
    // Another object's stub is its own.
    expect((await calls.call("b", (s) => Promise.resolve(s))).n).toBe(3);
  });

  it("tells an overloaded callee apart (the caller backs off instead of retrying at once)", () => {
    expect(isOverloaded(Object.assign(new Error("Durable Object is overloaded. Too many requests queued."), { overloaded: true }))).toBe(true);
    expect(isOverloaded(new Error("Durable Object is overloaded. Requests queued for too long."))).toBe(true);
    expect(isOverloaded(new Error("Network connection lost."))).toBe(false);
    expect(isOverloaded("overloaded? a string is not an error")).toBe(false);
  });
});
