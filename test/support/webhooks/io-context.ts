/**
 * One I/O context's budget of requests waiting for response headers, as Cloudflare
 * documents it — the model the simulated platform (platform-sim.ts) and the benchmark's
 * Worker entry (scripts/bench-hub-worker.ts) enforce, since `wrangler dev` and the Vitest
 * integration do not.
 *
 * Workers limits, § "Simultaneous open connections"
 * (https://developers.cloudflare.com/workers/platform/limits/#simultaneous-open-connections,
 * page dated 2026-07-28): "Each Worker invocation can have up to six connections
 * simultaneously waiting for response headers." … "Once response headers arrive for a
 * connection, it no longer counts toward the six-connection limit. … If a seventh connection
 * is attempted while six are already waiting for headers, it is queued until one of the
 * existing connections receives its response headers." (Changelog 2026-04-09, "Relaxed
 * simultaneous connection limiting for Workers": before, a slot was held until the body was
 * read.) One I/O context per Durable Object, shared by all its requests and its alarm:
 * Dynamic Workers limits (https://developers.cloudflare.com/dynamic-workers/platform/limits/):
 * "A Durable Object shares one I/O context across all concurrent requests to the same
 * object"; cloudflare-docs PR #31147 (2026-05-30) adds that Durable Objects share the same
 * 6-connection limit as Workers.
 *
 * The model: a request takes a slot if fewer than 6 are waiting, otherwise it queues (FIFO)
 * and takes the first slot freed; a slot is freed when the request's promise settles
 * (headers arrived, error, or abort). A queued request aborted before it started leaves the
 * queue. Durable Object calls are counted like requests (conservative: the page does not
 * list them; cloudflare-docs issue #22320 asks).
 */

/** Requests one I/O context may have waiting for response headers. */
export const WAITING_LIMIT = 6;

/** One I/O context (one Durable Object instance) and what it went through. */
export class IoContext {
  /** Requests waiting for headers now, and the most ever. */
  waiting = 0;
  maxWaiting = 0;
  /** Requests that had to queue (the runtime would have held them back silently). */
  queuedEver = 0;
  /** Requests started, all told. */
  started = 0;
  private readonly queue: (() => void)[] = [];

  constructor(readonly label: string) {}

  /**
   * Runs `start` as one request of this context: at once (synchronously) if a slot is free,
   * else when one frees, in order. The slot is held until the promise `start` returns
   * settles. An abort of `signal` while queued rejects with its reason, unsent.
   */
  request<T>(start: () => Promise<T>, signal?: AbortSignal | null): Promise<T> {
    if (this.waiting < WAITING_LIMIT && this.queue.length === 0) return this.run(start);
    this.queuedEver += 1;
    return new Promise<T>((resolve, reject) => {
      const go = () => {
        signal?.removeEventListener("abort", onAbort);
        this.run(start).then(resolve, reject);
      };
      const onAbort = () => {
        const i = this.queue.indexOf(go);
        if (i >= 0) this.queue.splice(i, 1);
        reject(signal!.reason);
      };
      if (signal?.aborted) return reject(signal.reason);
      signal?.addEventListener("abort", onAbort);
      this.queue.push(go);
    });
  }

  private run<T>(start: () => Promise<T>): Promise<T> {
    this.waiting += 1;
    this.started += 1;
    this.maxWaiting = Math.max(this.maxWaiting, this.waiting);
    const free = () => {
      this.waiting -= 1;
      this.queue.shift()?.();
    };
    let pending: Promise<T>;
    try {
      pending = start();
    } catch (err) {
      free();
      return Promise.reject(err);
    }
    return pending.then(
      (value) => {
        free();
        return value;
      },
      (err: unknown) => {
        free();
        throw err;
      },
    );
  }
}
