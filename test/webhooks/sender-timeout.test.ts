/**
 * Each attempt's timeout (docs/reference.md § "Event delivery": an attempt that has no answer
 * within the timeout fails): the courier's sender times every attempt out exactly its timeout
 * after it started, whatever else is in flight, started or ended meanwhile, and an attempt
 * aborted because its registration was deleted reports nothing and leaves no timer behind.
 * On a hand-driven clock: every instant below is simulated milliseconds.
 */
import { describe, expect, it } from "vitest";
import type { DueRow, Outcome } from "../../src/webhooks/courier/queue";
import { Sender } from "../../src/webhooks/courier/sender";
import type { Platform } from "../../src/webhooks/platform/platform";

/** The attempt timeout under test (ms). */
const TIMEOUT_MS = 1_000;

/** A platform on a clock moved by `advance`; fetches wait until `answer(id)` or their abort. */
function handDriven() {
  let t = 0;
  const timers: { at: number; fn: () => void; cancelled: boolean }[] = [];
  const answers = new Map<string, (res: Response) => void>();
  const platform: Platform = {
    now: () => t,
    setTimer(fn, ms) {
      const timer = { at: t + ms, fn, cancelled: false };
      timers.push(timer);
      return {
        cancel: () => {
          timer.cancelled = true;
        },
      };
    },
    fetch(url, init) {
      return new Promise<Response>((resolve, reject) => {
        answers.set(url, resolve);
        init.signal?.addEventListener("abort", () => reject(init.signal?.reason));
      });
    },
    call: (send) => Promise.resolve(send()),
  };
  // Lets the sender's awaits run (its answers and aborts settle on the microtask queue).
  const settle = () => new Promise((r) => setTimeout(r, 0));
  return {
    platform,
    /** Moves the clock to `until`, running each timer due on the way at its instant. */
    async advance(until: number) {
      for (;;) {
        const due = timers.filter((x) => !x.cancelled && x.at <= until).sort((a, b) => a.at - b.at)[0];
        if (!due) break;
        t = due.at;
        due.cancelled = true;
        due.fn();
        await settle();
      }
      t = until;
      await settle();
    },
    async answer(url: string) {
      answers.get(url)?.(new Response(null, { status: 204 }));
      await settle();
    },
    pending: () => timers.filter((x) => !x.cancelled).length,
  };
}

const row = (id: number): DueRow => ({ id, event_id: `evt_${id}`, event_type: "course.updated", trigger: "event", attempts: 0, requested: 0, body: "{}" });

describe("the sender's attempt timeout", () => {
  it("times each attempt out its timeout after it started, however they overlap", async () => {
    const clock = handDriven();
    const outcomes: Outcome[] = [];
    const sender = new Sender(clock.platform, TIMEOUT_MS, (o) => outcomes.push(o));
    const ended = () => outcomes.map((o) => [o.row.id, o.finishedAt, o.error]);

    sender.start(row(1), "https://r.example/1", {});
    await clock.advance(300);
    sender.start(row(2), "https://r.example/2", {});
    await clock.advance(600);
    sender.start(row(3), "https://r.example/3", {});
    await clock.advance(700);
    await clock.answer("https://r.example/3");
    await clock.advance(1_400);
    expect(ended()).toEqual([
      [3, 700, null],
      [1, 1_000, "timed out after 1000 ms"],
      [2, 1_300, "timed out after 1000 ms"],
    ]);
    expect(sender.size).toBe(0);

    // Nothing in flight: no timer left; a later attempt gets its own full timeout.
    expect(clock.pending()).toBe(0);
    sender.start(row(4), "https://r.example/4", {});
    await clock.advance(2_399);
    expect(outcomes).toHaveLength(3);
    await clock.advance(2_400);
    expect(ended().at(-1)).toEqual([4, 2_400, "timed out after 1000 ms"]);
  });

  it("an attempt aborted by a delete reports nothing and leaves no timer", async () => {
    const clock = handDriven();
    const outcomes: Outcome[] = [];
    const sender = new Sender(clock.platform, TIMEOUT_MS, (o) => outcomes.push(o));
    sender.start(row(1), "https://r.example/1", {});
    await clock.advance(100);
    sender.start(row(2), "https://r.example/2", {});
    sender.abortAll();
    await clock.advance(5_000);
    expect(outcomes).toEqual([]);
    expect(clock.pending()).toBe(0);
  });
});
