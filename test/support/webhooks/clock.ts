/**
 * Clocks of the simulated platform: the real one (tests that race real interleavings) and a
 * virtual one, which moves only when the test drives it, so that latencies, timeouts and
 * lags are measured in simulated milliseconds, never on the wall.
 */
import type { Timer } from "../../../src/webhooks/platform/platform";

/** The object instance a timer belongs to (its callback must run in that object). */
export interface TimerOwner {
  kind: "hub" | "courier";
  /** `ctx.id.toString()` of the object. */
  objectId: string;
}

/** What the simulated platform needs from a clock. */
export interface SimClock {
  now(): number;
  setTimer(fn: () => void, ms: number, owner: TimerOwner): Timer;
}

/** Wall-clock time and real timers (set from the object's own context, they fire there). */
export class RealClock implements SimClock {
  now(): number {
    return Date.now();
  }
  setTimer(fn: () => void, ms: number): Timer {
    const handle = setTimeout(fn, ms);
    return { cancel: () => clearTimeout(handle) };
  }
}

/** A timer of the virtual clock. */
export interface VirtualTimer {
  at: number;
  seq: number;
  fn: () => void;
  owner: TimerOwner;
  cancelled: boolean;
}

/**
 * Simulated time: timers fire only when the test drives the clock (`SimulatedPlatform.advance`
 * takes the due ones with `takeDue` and runs each inside its own object with
 * `runInDurableObject`, so Durable Object code never runs in the test's context).
 */
export class VirtualClock implements SimClock {
  private t: number;
  private seq = 0;
  /** Pending timers, by due time then creation order (a few hundred at most). */
  private readonly timers: VirtualTimer[] = [];
  /** The timers `takeDue` last returned: one not run yet dies with its instance too (`dropTimersOf`). */
  private taken: VirtualTimer[] = [];

  constructor(start = Date.now()) {
    this.t = start;
  }

  now(): number {
    return this.t;
  }

  setTimer(fn: () => void, ms: number, owner: TimerOwner): Timer {
    const entry: VirtualTimer = { at: this.t + Math.max(0, ms), seq: ++this.seq, fn, owner, cancelled: false };
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

  /**
   * Moves to the earliest due time if it is ≤ `until` and takes the timers due then, in
   * creation order. @returns them, or `null` when none is due by `until` (time stays).
   */
  takeDue(until: number): VirtualTimer[] | null {
    const first = this.timers[0];
    if (!first || first.at > until) return null;
    this.t = Math.max(this.t, first.at);
    const due: VirtualTimer[] = [];
    while (this.timers[0] && this.timers[0].at <= this.t) due.push(this.timers.shift()!);
    this.taken = due;
    return due;
  }

  /** Cancels the timers of object `objectId`: its instance was reset, they died with it. */
  dropTimersOf(objectId: string): void {
    for (const t of this.taken) if (t.owner.objectId === objectId) t.cancelled = true;
    for (const t of this.timers.filter((t) => t.owner.objectId === objectId)) {
      t.cancelled = true;
      this.timers.splice(this.timers.indexOf(t), 1);
    }
  }

  /** Due times (ms) of the timers pending in objects of `kind`, earliest first. */
  pending(kind: TimerOwner["kind"]): number[] {
    return this.timers.filter((t) => t.owner.kind === kind).map((t) => t.at);
  }

  /** Moves time forward to `t` (no timer may be due before it). */
  jump(t: number): void {
    if ((this.timers[0]?.at ?? Infinity) < t) throw new Error("VirtualClock.jump: timers are due before that");
    this.t = Math.max(this.t, t);
  }
}
