/**
 * One I/O context's budget of requests waiting for response headers, as Cloudflare documents
 * it — the model that the simulated platform (platform-sim.ts) and the benchmark's Worker
 * (scripts/bench-hub-worker.ts) enforce, since `wrangler dev` and the Vitest integration do
 * not. A request takes a slot if fewer than 6 are waiting, otherwise it queues (FIFO) for the
 * first slot freed; a slot frees when the request's promise settles (headers, error, abort);
 * a queued request aborted before it started leaves the queue; calls between Durable Objects
 * count like requests. The documentation quoted, page by page:
 * docs/development.md § The simulated platform.
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
