/**
 * Fake webhook receivers for the tests. The SchoolHub runs in the same isolate as the tests
 * (vitest-pool-workers), so a spy on `globalThis.fetch` sees every attempt the hub makes:
 * each request is logged (URL, headers, body, a global sequence number) and answered by the
 * behaviour registered for its host (default: 204 after a short pause). Pending answers
 * honour the attempt's abort signal, as a real fetch does.
 */
import { vi, type MockInstance } from "vitest";

/** One request as a receiver saw it. */
export interface Received {
  seq: number;
  url: string;
  host: string;
  headers: Record<string, string>;
  body: string;
  event: { id: string; type: string; schoolId: string; data: Record<string, unknown> };
}

/** How a host answers: a status code, or a function of the request. */
export type Behaviour = number | ((req: Received) => number | Promise<number>);

const pause = (ms: number, signal?: AbortSignal | null) =>
  new Promise<void>((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener("abort", () => {
      clearTimeout(timer);
      reject(signal.reason);
    });
  });

/** Settles like `p`, or rejects with the abort reason as soon as `signal` aborts. */
const abortable = <T>(p: Promise<T>, signal?: AbortSignal | null) =>
  new Promise<T>((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    signal?.addEventListener("abort", () => reject(signal.reason));
    p.then(resolve, reject);
  });

/** The receivers of one test file; `install()` in `beforeAll`/`beforeEach`, `restore()` after. */
export class Receivers {
  readonly log: Received[] = [];
  private seq = 0;
  private readonly behaviours = new Map<string, Behaviour>();
  /** Milliseconds each answer waits (random in [min, max]) before it is sent. */
  delay: [number, number] = [0, 2];
  private spy: MockInstance<typeof fetch> | undefined;

  install(): this {
    this.spy = vi.spyOn(globalThis, "fetch").mockImplementation(async (input, init) => {
      // Like a real fetch, an already aborted signal sends nothing.
      if (init?.signal?.aborted) throw init.signal.reason;
      // Logged synchronously, before any await: `seq` orders attempts against `mark()`.
      const url = new URL(input instanceof Request ? input.url : String(input));
      const body = typeof init?.body === "string" ? init.body : "";
      const received: Received = {
        seq: ++this.seq,
        url: url.href,
        host: url.host,
        headers: Object.fromEntries(new Headers(init?.headers)),
        body,
        event: JSON.parse(body),
      };
      this.log.push(received);
      const [min, max] = this.delay;
      await pause(min + Math.random() * (max - min), init?.signal);
      const behaviour = this.behaviours.get(url.host) ?? 204;
      const status = typeof behaviour === "number" ? behaviour : await abortable(Promise.resolve(behaviour(received)), init?.signal);
      if (status === 0) throw new TypeError("Network connection lost.");
      return new Response(status === 204 ? null : "ok", { status });
    });
    return this;
  }

  restore(): void {
    this.spy?.mockRestore();
  }

  /** Sets how `host` answers (a status, 0 = network error, or a function). */
  on(host: string, behaviour: Behaviour): this {
    this.behaviours.set(host, behaviour);
    return this;
  }

  /** The sequence number of the last request so far (a point in the receivers' timeline). */
  mark(): number {
    return this.seq;
  }

  /** Requests to `host`, in arrival order. */
  to(host: string): Received[] {
    return this.log.filter((r) => r.host === host);
  }

  /** Distinct event ids received by `host`. */
  eventIds(host: string): Set<string> {
    return new Set(this.to(host).map((r) => r.event.id));
  }
}
