/**
 * Delivery on the simulated Cloudflare platform (test/support/webhooks/platform-sim.ts): at most 6
 * requests waiting for response headers per I/O context, one I/O context per Durable Object,
 * receivers with latencies and hangs, on a virtual clock — every duration below is
 * simulated milliseconds, never the wall clock (docs/reference.md § "Event delivery": slow receivers,
 * timeouts counted from the sending, Retry-After).
 */
import { runDurableObjectAlarm } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { hubFor } from "../../src/events/hub-client";
import { courierFor } from "../../src/webhooks/rpc";
import { callJson } from "../support/helpers";
import { courseEvent, newSchool, register } from "../support/webhooks/harness";
import { IoContext, WAITING_LIMIT } from "../support/webhooks/io-context";
import { type Behaviour, SimulatedPlatform } from "../support/webhooks/platform-sim";
import { resetCourier } from "../support/webhooks/reset";

let sim: SimulatedPlatform | undefined;
afterEach(() => {
  const used = sim;
  sim = undefined;
  used?.restore(); // asserts: no I/O context ever had more than 6 waiting, none queued
});

/** A fresh simulated platform on a virtual clock, installed for the objects created next. */
function virtualPlatform(): SimulatedPlatform {
  sim = SimulatedPlatform.virtual().install();
  return sim;
}

const percentile = (xs: number[], p: number) => {
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
};

describe("the I/O context model", () => {
  const deferred = () => {
    let resolve!: (v: string) => void;
    const promise = new Promise<string>((r) => (resolve = r));
    return { promise, resolve };
  };

  it("six requests wait for headers at once; the seventh starts, in order, when one gets its headers", async () => {
    const io = new IoContext("t");
    const answers = Array.from({ length: 8 }, deferred);
    const started: number[] = [];
    const requests = answers.map((a, i) =>
      io.request(() => {
        started.push(i);
        return a.promise;
      }),
    );
    expect(started).toEqual([0, 1, 2, 3, 4, 5]);
    expect(io.waiting).toBe(WAITING_LIMIT);
    answers[3]!.resolve("headers");
    await requests[3];
    expect(started).toEqual([0, 1, 2, 3, 4, 5, 6]);
    answers[0]!.resolve("headers");
    await requests[0];
    expect(started).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    expect({ max: io.maxWaiting, queued: io.queuedEver }).toEqual({ max: 6, queued: 2 });
  });

  it("a queued request aborted before its turn leaves the queue unsent", async () => {
    const io = new IoContext("t");
    const answers = Array.from({ length: 6 }, deferred);
    answers.forEach((a) => void io.request(() => a.promise));
    const controller = new AbortController();
    let sent = false;
    const queued = io.request(() => {
      sent = true;
      return Promise.resolve("x");
    }, controller.signal);
    controller.abort("gone");
    await expect(queued).rejects.toBe("gone");
    answers[0]!.resolve("headers");
    await answers[0]!.promise;
    expect(sent).toBe(false);
    expect(io.waiting).toBe(5);
  });
});

/** Every entry of a registration's delivery log (all pages). */
async function fullLog(key: string, webhookId: string): Promise<{ error: string | null; attemptedAt: string | null; nextAttemptAt: string | null }[]> {
  const entries = [];
  for (let page = 1; ; page++) {
    const { body } = await callJson(`/v3/webhooks/${webhookId}/deliveries?page=${page}&limit=100`, { key });
    entries.push(...body.result);
    if (!body.pagination.hasMore) return entries;
  }
}

describe("one hanging receiver among healthy ones, 50 events per second", () => {
  const EVENTS = 100; // 2 s of simulated publishing
  let run = 0;

  /**
   * Four receivers answering in 50 ms and a fifth (`fifth`), events published every 20 ms
   * for 2 s, then 500 ms more. Returns the four's lags (publish → request received, ms) and
   * what the fifth saw. The platform is checked (6 waiting, none queued) and uninstalled.
   */
  async function steady(fifth: Behaviour) {
    run += 1;
    const platform = SimulatedPlatform.virtual().install();
    try {
      const { schoolId, key } = await newSchool("lag");
      const healthy = [0, 1, 2, 3].map((i) => `h${i}-${run}.example.com`);
      const slow = `fifth-${run}.example.com`;
      for (const host of healthy) {
        platform.on(host, { status: 204, afterMs: 50 });
        // Course events only: the fifth's `webhook.failing`, when it hangs, is not what is measured.
        await register(key, `https://${host}/in`, { events: ["course.updated"] });
      }
      platform.on(slow, fifth);
      const slowHook = await register(key, `https://${slow}/in`);
      const hub = hubFor(env, schoolId);
      const publishedAt = new Map<string, number>();
      for (let k = 0; k < EVENTS; k++) {
        const event = courseEvent(schoolId, "course.updated", k);
        publishedAt.set(event.id, platform.clock.now());
        await hub.publish([event]);
        // The first publish finds the hub idle: its alarm starts the dispatch.
        if (k === 0) expect(await runDurableObjectAlarm(hub)).toBe(true);
        await platform.advance(20);
      }
      await platform.advance(500);
      const lags: number[] = [];
      for (const host of healthy) {
        const first = new Map<string, number>();
        for (const r of platform.to(host)) if (!first.has(r.event.id)) first.set(r.event.id, r.sentAt);
        expect(first.size, `${host} received every event`).toBe(EVENTS);
        for (const [id, at] of first) lags.push(at - publishedAt.get(id)!);
      }
      return { platform, lags, toSlow: platform.to(slow), key, slowHook };
    } finally {
      platform.restore();
    }
  }

  let calm: Awaited<ReturnType<typeof steady>>;
  let stuck: Awaited<ReturnType<typeof steady>>;
  beforeAll(async () => {
    calm = await steady({ status: 204, afterMs: 50 });
    stuck = await steady("hang");
  }, 120_000);

  it("the four receive every event with a p99 lag no worse than 1.2× their lag when nothing hangs", () => {
    const p99Calm = percentile(calm.lags, 99);
    const p99Stuck = percentile(stuck.lags, 99);
    expect(p99Stuck).toBeLessThanOrEqual(1.2 * p99Calm);
    expect(p99Stuck).toBeLessThan(250);
  });

  it("the hanging receiver holds only its own courier's slots", () => {
    // All of them from one I/O context, its courier's …
    expect(new Set(stuck.toSlow.map((r) => r.context)).size).toBe(1);
    // … and never more than its courier's 5 slots of them waiting at once (it holds all five;
    // docs/architecture.md § The I/O context budget).
    const edges = stuck.toSlow.flatMap((r) => [[r.sentAt, 1] as const, ...(r.abortedAt === undefined ? [] : [[r.abortedAt, -1] as const])]);
    let open = 0;
    let most = 0;
    for (const [, step] of edges.sort((a, b) => a[0] - b[0] || a[1] - b[1])) {
      open += step;
      most = Math.max(most, open);
    }
    expect(most).toBe(5);
    // Its context (five requests and the report call) and every other stayed within the limit.
    expect(stuck.platform.maxWaiting()).toBeLessThanOrEqual(WAITING_LIMIT);
  });

  it("the hanging receiver's attempts time out WEBHOOK_TIMEOUT_MS after they were sent", async () => {
    // WEBHOOK_TIMEOUT_MS as vitest.config.ts sets it for the suite.
    const timeoutMs = 1_000;
    const ended = stuck.toSlow.filter((r) => r.abortedAt !== undefined);
    // 2.5 s of hanging with 5 slots and a 1 s timeout: two rounds ended.
    expect(ended.length).toBe(2 * 5);
    for (const r of ended) expect(r.abortedAt! - r.sentAt).toBe(timeoutMs);
    // The log agrees: each timed-out attempt is retried 5 s (plus 0–10 % jitter) after its end (sent + timeout).
    const timedOut = (await fullLog(stuck.key, stuck.slowHook.id)).filter((d) => d.error === `timed out after ${timeoutMs} ms`);
    expect(timedOut.length).toBe(ended.length);
    for (const d of timedOut) {
      const wait = Date.parse(d.nextAttemptAt!) - Date.parse(d.attemptedAt!);
      expect(wait).toBeGreaterThanOrEqual(timeoutMs + 5_000);
      expect(wait).toBeLessThanOrEqual(timeoutMs + 5_500);
    }
  });
});

describe("saturation", () => {
  it("four healthy receivers at 50 ms get the design's bound (4 × 5 slots ÷ 50 ms) in simulated time while a fifth hangs", async () => {
    const EVENTS = 100;
    const platform = virtualPlatform();
    const { schoolId, key } = await newSchool("sat");
    const healthy = [0, 1, 2, 3].map((i) => `sat${i}.example.com`);
    for (const host of healthy) {
      platform.on(host, { status: 204, afterMs: 50 });
      // Course events only: the hanging one's `webhook.failing` is not what is measured.
      await register(key, `https://${host}/in`, { events: ["course.updated"] });
    }
    platform.on("sat-hang.example.com", "hang");
    await register(key, "https://sat-hang.example.com/in");
    const hub = hubFor(env, schoolId);
    await hub.publish(Array.from({ length: EVENTS }, (_, i) => courseEvent(schoolId, "course.updated", i)));
    expect(await runDurableObjectAlarm(hub)).toBe(true);
    await platform.advance(1_200);
    const received = healthy.flatMap((host) => platform.to(host));
    expect(received).toHaveLength(4 * EVENTS);
    const times = received.map((r) => r.sentAt);
    const rate = (received.length - 1) / ((Math.max(...times) - Math.min(...times)) / 1000);
    const bound = (4 * 5) / 0.05;
    expect(rate).toBeGreaterThanOrEqual(0.9 * bound);
  }, 60_000);
});

describe("a courier that cannot report", () => {
  it("a report the hub could not take (a 410: gone) is owed, and sent again at the courier's alarm", async () => {
    const platform = virtualPlatform();
    const { schoolId, key } = await newSchool("lost");
    platform.on("lost.example.com", { status: 410, afterMs: 0 });
    const hook = await register(key, "https://lost.example.com/in");
    await hubFor(env, schoolId).publish([courseEvent(schoolId)]);
    // The hand-over is under way; the next call between objects is the courier's report: it fails.
    platform.failCalls = 1;
    await platform.advance(10);
    expect(platform.to("lost.example.com")).toHaveLength(1);
    expect(platform.failCalls).toBe(0);
    const [entry] = (await callJson(`/v3/webhooks/${hook.id}/deliveries`, { key })).body.result;
    expect(entry).toMatchObject({ attempt: 1, status: "failed", responseStatus: 410, nextAttemptAt: null });
    // The hub has not heard: the registration is still enabled, the report is owed.
    expect((await callJson(`/v3/webhooks/${hook.id}`, { key })).body.result.enabled).toBe(true);
    // The courier's alarm (armed for the report's retry) sends it again.
    await platform.advance(10_000);
    expect(await runDurableObjectAlarm(courierFor(env, hook.id))).toBe(true);
    await platform.advance(10);
    expect((await callJson(`/v3/webhooks/${hook.id}`, { key })).body.result).toMatchObject({ enabled: false, disabledReason: "gone" });
  });

  it("an attempt whose outcome is lost to a courier restart is sent again at its next alarm, never logged failed", async () => {
    const platform = virtualPlatform();
    const { schoolId, key } = await newSchool("lost");
    platform.on("restart.example.com", "hang");
    const hook = await register(key, "https://restart.example.com/in");
    const event = courseEvent(schoolId);
    await hubFor(env, schoolId).publish([event]);
    await platform.advance(10);
    expect(platform.to("restart.example.com")).toHaveLength(1);
    // The runtime resets the courier mid-attempt: the outcome is lost with its memory.
    await resetCourier(hook.id);
    platform.on("restart.example.com", { status: 204, afterMs: 0 });
    // The new instance finds the delivery due and arms its alarm at once.
    expect(await runDurableObjectAlarm(courierFor(env, hook.id))).toBe(true);
    await platform.advance(10);
    expect(platform.to("restart.example.com").map((r) => r.event.id)).toEqual([event.id, event.id]);
    const log = (await callJson(`/v3/webhooks/${hook.id}/deliveries`, { key })).body.result;
    expect(log).toMatchObject([{ eventId: event.id, attempt: 1, status: "succeeded", responseStatus: 204, trigger: "event" }]);
  });
});

describe("Retry-After", () => {
  /** One delivery answered by `answer`; returns its log entry (wait = nextAttemptAt − attemptedAt, ms). */
  async function firstAttempt(answer: Behaviour) {
    sim?.restore();
    const platform = virtualPlatform();
    const { schoolId, key } = await newSchool("ra");
    const host = `ra-${Math.random().toString(36).slice(2, 8)}.example.com`;
    platform.on(host, answer);
    const hook = await register(key, `https://${host}/in`);
    const hub = hubFor(env, schoolId);
    await hub.publish([courseEvent(schoolId)]);
    expect(await runDurableObjectAlarm(hub)).toBe(true);
    await platform.advance(50);
    const [entry] = (await callJson(`/v3/webhooks/${hook.id}/deliveries`, { key })).body.result;
    return { entry, wait: Date.parse(entry.nextAttemptAt) - Date.parse(entry.attemptedAt), platform };
  }

  it("a 429 with Retry-After in seconds puts the next attempt no earlier than that", async () => {
    const { entry, wait } = await firstAttempt({ status: 429, headers: { "retry-after": "120" }, afterMs: 0 });
    expect(entry).toMatchObject({ status: "failed", responseStatus: 429, error: "HTTP 429 (Retry-After: 120 s)" });
    expect(wait).toBe(120_000);
  });

  it("a 503 with Retry-After as an HTTP date waits until that date", async () => {
    let at = "";
    // Three hours after the attempt, on the simulated clock.
    const { entry } = await firstAttempt((req) => {
      at = new Date(req.sentAt + 3 * 3_600_000).toUTCString();
      return { status: 503, headers: { "retry-after": at }, afterMs: 0 };
    });
    expect(entry).toMatchObject({ status: "failed", responseStatus: 503 });
    expect(entry.nextAttemptAt).toBe(new Date(Date.parse(at)).toISOString());
  });

  it("is capped at 24 h", async () => {
    const { wait } = await firstAttempt({ status: 429, headers: { "retry-after": "9999999" }, afterMs: 0 });
    expect(wait).toBe(86_400_000);
  });

  it("never shortens the schedule, and is ignored on other statuses", async () => {
    // The schedule's 5 s, lengthened by its 0–10 % jitter.
    for (const answer of [
      { status: 503, headers: { "retry-after": "1" }, afterMs: 0 },
      { status: 500, headers: { "retry-after": "600" }, afterMs: 0 },
      { status: 429, headers: { "retry-after": "soon" }, afterMs: 0 },
    ]) {
      const { wait } = await firstAttempt(answer);
      expect(wait).toBeGreaterThanOrEqual(5_000);
      expect(wait).toBeLessThanOrEqual(5_500);
    }
  });

  it("counts from the end of the attempt (after the receiver's latency)", async () => {
    const { entry, wait } = await firstAttempt({ status: 429, headers: { "retry-after": "60" }, afterMs: 30 });
    expect(entry.responseStatus).toBe(429);
    expect(wait).toBe(60_030);
  });
});
