/**
 * The simulated platform the webhook tests run on, installed through the objects' own seam
 * (`usePlatform`, src/webhooks/platform/platform.ts) — no global monkey-patch. It gives every Durable
 * Object instance its own I/O context that enforces Cloudflare's limit of 6 requests waiting
 * for response headers (io-context.ts, with the documentation it follows), and plays the
 * webhook receivers: each request is logged (URL, headers, body, a sequence number, the
 * instant it was sent) and answered by the behaviour set for its host — a status after a
 * latency, a hang, a 429/503 with Retry-After, a connection error, or a function.
 * Time is the real clock, or a `VirtualClock` that the test drives with `advance(ms)`:
 * then latencies, timeouts and lags are simulated milliseconds. Each request is a subrequest of
 * its invocation (../invocations.ts), and a timer's callback runs in the invocation that set it.
 */
import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { expect } from "vitest";
import { type Platform, type Timer, usePlatform } from "../../../src/webhooks/platform/platform";
import { bindToInvocation, chargeOutgoing } from "../invocations";
import { RealClock, type SimClock, type TimerOwner, VirtualClock } from "./clock";
import { IoContext, WAITING_LIMIT } from "./io-context";

/** One request as a receiver saw it. */
export interface Received {
  seq: number;
  url: string;
  host: string;
  headers: Record<string, string>;
  body: string;
  event: { id: string; type: string; schoolId: string; data: Record<string, unknown> };
  /** When it was sent (the platform clock, ms). */
  sentAt: number;
  /** When it was aborted (timeout or delete), if it was. */
  abortedAt?: number;
  /** The I/O context it was sent from. */
  context: string;
}

/**
 * How a host answers: a status (0 = connection error) after the default latency, a full
 * answer (`afterMs` overrides the latency; `body` replaces "ok"), `"hang"` (never, until aborted), or a function
 * of the request returning any of these (or a promise of one: the answer waits for it).
 */
type Answer = number | "hang" | { status: number; headers?: Record<string, string>; afterMs?: number; body?: string };
export type Behaviour = Answer | ((req: Received) => Answer | Promise<Answer>);

/** The platform and the receivers of one test file: `install()` before, `restore()` after. */
export class SimulatedPlatform {
  readonly log: Received[] = [];
  /** Every I/O context created so far (one per Durable Object instance). */
  readonly contexts: IoContext[] = [];
  /** Milliseconds each answer waits (uniform in [min, max]) unless the behaviour says. */
  delay: [number, number] = [0, 2];
  /** The next this-many Durable Object calls fail without reaching their object (an outage). */
  failCalls = 0;
  /** While set (`holdCalls`), Durable Object calls made wait for it before reaching their object. */
  private callGate: Promise<void> | null = null;
  private seq = 0;
  private objects = 0;
  /** Durable Object calls under way (the virtual driver waits for them). */
  private calls = 0;
  private readonly behaviours = new Map<string, Behaviour>();

  constructor(readonly clock: SimClock = new RealClock()) {}

  /**
   * A platform on a virtual clock. It starts a year ahead of the wall clock, so that an alarm
   * the hub sets in simulated time never fires by itself: the test runs it
   * (`runDurableObjectAlarm`) when the hub, found idle by a publish, set one.
   */
  static virtual(): SimulatedPlatform {
    return new SimulatedPlatform(new VirtualClock(Date.now() + 365 * 86_400_000));
  }

  install(): this {
    usePlatform((objectId, kind) => this.platformOf({ kind, objectId }, `${kind}:${objectId.slice(0, 12)}#${++this.objects}`));
    return this;
  }

  /** Uninstalls, then checks the limit over everything this file dispatched (`expectWithinLimit`). */
  restore(): void {
    usePlatform(null);
    this.expectWithinLimit();
  }

  /**
   * Holds every Durable Object call made from now on (a slow object): each waits, under way
   * in its I/O context, until the returned function is called. Do not `advance` meanwhile
   * (it waits for calls under way).
   */
  holdCalls(): () => void {
    let release = () => {};
    this.callGate = new Promise<void>((resolve) => (release = resolve));
    return () => {
      this.callGate = null;
      release();
    };
  }

  /** Sets how `host` answers. */
  on(host: string, behaviour: Behaviour): this {
    this.behaviours.set(host, behaviour);
    return this;
  }

  /** The sequence number of the last request so far (a point in the receivers' timeline). */
  mark(): number {
    return this.seq;
  }

  /** Requests to `host`, in the order they were sent. */
  to(host: string): Received[] {
    return this.log.filter((r) => r.host === host);
  }

  /** Distinct event ids received by `host`. */
  eventIds(host: string): Set<string> {
    return new Set(this.to(host).map((r) => r.event.id));
  }

  /** The most requests ever waiting for headers in one I/O context. */
  maxWaiting(): number {
    return Math.max(0, ...this.contexts.map((c) => c.maxWaiting));
  }

  /**
   * Asserts what production requires of the webhook objects: no I/O context ever had more
   * than 6 requests waiting for headers, and none ever had to queue one (a queued request's
   * timeout would count time it was not sent).
   */
  expectWithinLimit(): void {
    for (const c of this.contexts) {
      expect(c.maxWaiting, `${c.label}: most requests waiting for headers`).toBeLessThanOrEqual(WAITING_LIMIT);
      expect(c.queuedEver, `${c.label}: requests the runtime would have queued`).toBe(0);
    }
  }

  // -------------------------------------------------------------------------------------
  // Driving a virtual clock

  /** Due times (ms) of the timers pending in objects of `kind` (virtual clock only): a wait under way. */
  pendingTimers(kind: TimerOwner["kind"]): number[] {
    if (!(this.clock instanceof VirtualClock)) throw new Error("pendingTimers() needs a virtual clock");
    return this.clock.pending(kind);
  }

  /** Waits until every Durable Object is quiet: no Durable Object call under way. */
  async settle(): Promise<void> {
    for (let quiet = 0; quiet < 2; ) {
      await new Promise((resolve) => setTimeout(resolve, 0));
      quiet = this.calls === 0 ? quiet + 1 : 0;
    }
  }

  /**
   * Lets `ms` of simulated time pass (virtual clock only): each timer fires at its instant,
   * inside the object that set it (`runInDurableObject`), and the objects settle after each
   * instant. Objects must not be restarted meanwhile (a timer belongs to one instance).
   */
  async advance(ms: number): Promise<void> {
    const clock = this.clock;
    if (!(clock instanceof VirtualClock)) throw new Error("advance() needs a virtual clock");
    const until = clock.now() + ms;
    await this.settle();
    for (let due = clock.takeDue(until); due; due = clock.takeDue(until)) {
      for (const timer of due) {
        if (timer.cancelled) continue;
        await runInDurableObject(stubOf(timer.owner), () => {
          if (!timer.cancelled) timer.fn();
        });
      }
      await this.settle();
    }
    clock.jump(until);
  }

  /** Drops the timers of object `objectId` on a virtual clock (its instance was reset). */
  forgetTimersOf(objectId: string): void {
    if (this.clock instanceof VirtualClock) this.clock.dropTimersOf(objectId);
  }

  // -------------------------------------------------------------------------------------
  // The platform of one object instance

  private platformOf(owner: TimerOwner, label: string): Platform {
    const io = new IoContext(label);
    this.contexts.push(io);
    const clock = this.clock;
    // A new instance of the object: the previous one was reset, and its timers with it.
    if (clock instanceof VirtualClock) clock.dropTimersOf(owner.objectId);
    return {
      now: () => clock.now(),
      setTimer: (fn, ms) => clock.setTimer(bindToInvocation(fn), ms, owner),
      fetch: (url, init) => {
        try {
          chargeOutgoing("fetch");
        } catch (err) {
          return Promise.reject(err);
        }
        return io.request(() => this.answer(url, init, owner, label), init.signal);
      },
      call: <T>(send: () => PromiseLike<T>) => {
        if (this.failCalls > 0) {
          this.failCalls -= 1;
          return Promise.reject(new Error("simulated outage: the Durable Object could not be reached"));
        }
        this.calls += 1;
        const done = () => (this.calls -= 1);
        const gate = this.callGate;
        return io
          .request(() => (gate ? gate.then(() => send()) : Promise.resolve(send())))
          .then(
            (value) => {
              done();
              return value;
            },
            (err: unknown) => {
              done();
              throw err;
            },
          );
      },
    };
  }

  /** A receiver's answer to one request (runs in the sending object's context). */
  private async answer(url: string, init: RequestInit, owner: TimerOwner, context: string): Promise<Response> {
    const signal = init.signal ?? null;
    // Like a real fetch, an already aborted signal sends nothing.
    if (signal?.aborted) throw signal.reason;
    const parsed = new URL(url);
    const body = typeof init.body === "string" ? init.body : "";
    // Logged synchronously, before any await: `seq` orders requests against `mark()`.
    const received: Received = {
      seq: ++this.seq,
      url: parsed.href,
      host: parsed.host,
      headers: Object.fromEntries(new Headers(init.headers)),
      body,
      event: JSON.parse(body) as Received["event"],
      sentAt: this.clock.now(),
      context,
    };
    this.log.push(received);
    signal?.addEventListener("abort", () => {
      received.abortedAt = this.clock.now();
    });
    const behaviour = this.behaviours.get(parsed.host) ?? 204;
    const answer = typeof behaviour === "function" ? await this.abortable(Promise.resolve(behaviour(received)), signal) : behaviour;
    if (answer === "hang") return this.abortable(new Promise<Response>(() => {}), signal);
    const {
      status,
      headers,
      afterMs,
      body: answerBody,
    } = typeof answer === "number" ? { status: answer, headers: undefined, afterMs: undefined, body: undefined } : answer;
    const [min, max] = this.delay;
    await this.sleep(afterMs ?? min + Math.random() * (max - min), signal, owner);
    if (status === 0) throw new TypeError("Network connection lost.");
    return new Response(status === 204 || status === 304 ? null : (answerBody ?? "ok"), { status, headers });
  }

  private sleep(ms: number, signal: AbortSignal | null, owner: TimerOwner): Promise<void> {
    let timer: Timer | undefined;
    return this.abortable(new Promise<void>((resolve) => (timer = this.clock.setTimer(resolve, ms, owner))), signal, () => timer?.cancel());
  }

  /** Settles like `p`, or rejects with the abort reason as soon as `signal` aborts. */
  private abortable<T>(p: Promise<T>, signal: AbortSignal | null, onAbort?: () => void): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      if (signal?.aborted) {
        onAbort?.();
        return reject(signal.reason);
      }
      signal?.addEventListener("abort", () => {
        onAbort?.();
        reject(signal.reason);
      });
      p.then(resolve, reject);
    });
  }
}

/** The stub of a timer's object (for `runInDurableObject`). */
function stubOf({ kind, objectId }: TimerOwner): DurableObjectStub {
  const ns = kind === "hub" ? env.SCHOOL_HUB : env.WEBHOOK_COURIER;
  return ns.get(ns.idFromString(objectId)) as DurableObjectStub;
}
