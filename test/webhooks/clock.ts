/**
 * Clocks of the simulated platform: the real one (tests that race real interleavings) and a
 * virtual one, which moves only when the test drives it (`VirtualClock.step`), so that
 * latencies, timeouts and lags are measured in simulated milliseconds, never on the wall.
 */
import type { Timer } from "../../src/webhooks/platform";

/** What the simulated platform needs from a clock. */
export interface SimClock {
  now(): number;
  setTimer(fn: () => void, ms: number): Timer;
  /** Timer callbacks fired but not yet run in their object (virtual clock only). */
  readonly inTransit: number;
}

/** Wall-clock time and real timers. */
export class RealClock implements SimClock {
  readonly inTransit = 0;
  now(): number {
    return Date.now();
  }
  setTimer(fn: () => void, ms: number): Timer {
    const handle = setTimeout(fn, ms);
    return { cancel: () => clearTimeout(handle) };
  }
}

interface Entry {
  at: number;
  seq: number;
  fire: () => void;
  cancelled: boolean;
}

/**
 * Simulated time. A timer is a promise created by the object that set it; `step` resolves
 * it from the test, and workerd runs the callback back in that object's own I/O context
 * (compatibility flag `handle_cross_request_promise_resolution`, default since 2024-10-14),
 * so Durable Object code never runs in the test's context. `inTransit` counts callbacks
 * resolved but not yet run, so the driver knows when the objects are quiet.
 */
export class VirtualClock implements SimClock {
  private t: number;
  private seq = 0;
  /** Pending timers, by due time then creation order. */
  private readonly timers: Entry[] = [];
  inTransit = 0;

  constructor(start = Date.now()) {
    this.t = start;
  }

  now(): number {
    return this.t;
  }

  setTimer(fn: () => void, ms: number): Timer {
    const entry: Entry = { at: this.t + Math.max(0, ms), seq: ++this.seq, fire: () => {}, cancelled: false };
    void new Promise<void>((resolve) => (entry.fire = resolve)).then(() => {
      this.inTransit -= 1;
      if (!entry.cancelled) fn();
    });
    // Insert in order (the list stays short: a few hundred timers at most).
    let i = this.timers.length;
    while (i > 0 && this.timers[i - 1]!.at > entry.at) i -= 1;
    this.timers.splice(i, 0, entry);
    return {
      cancel: () => {
        if (entry.cancelled) return;
        entry.cancelled = true;
        const at = this.timers.indexOf(entry);
        if (at >= 0) this.timers.splice(at, 1);
      },
    };
  }

  /** When the next timer is due, if any. */
  nextAt(): number | undefined {
    return this.timers[0]?.at;
  }

  /**
   * Moves to the earliest due time if it is ≤ `until` and fires every timer due then.
   * @returns false when no timer is due by `until` (time does not move).
   */
  step(until: number): boolean {
    const first = this.timers[0];
    if (!first || first.at > until) return false;
    this.t = Math.max(this.t, first.at);
    while (this.timers[0] && this.timers[0].at <= this.t) {
      const entry = this.timers.shift()!;
      this.inTransit += 1;
      entry.fire();
    }
    return true;
  }

  /** Moves time forward to `t` (no timer may be due before it). */
  jump(t: number): void {
    if ((this.nextAt() ?? Infinity) < t) throw new Error("VirtualClock.jump: timers are due before that");
    this.t = Math.max(this.t, t);
  }
}
