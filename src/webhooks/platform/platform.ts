/**
 * The platform as the webhook objects see it: a clock, timers, outgoing HTTP requests and
 * outgoing calls to other Durable Objects, all from one Durable Object's I/O context.
 *
 * Production uses `CLOUDFLARE` (the runtime's own `Date.now`, `setTimeout`, `fetch`, the RPC
 * call as made, the objects' SQL as is). The seams let the tests and the benchmark run the
 * same objects on a simulated platform that enforces what the local runtime does not: 6
 * requests waiting for response headers per I/O context, latencies, hangs, a virtual clock
 * (test/support/webhooks/platform-sim.ts), and production's storage limits (`useStorageSeam`).
 * Only tests and the benchmark's own Worker entry (scripts/bench-hub-worker.ts) install them:
 * docs/development.md § The simulated platform.
 */

/** A pending timer; `cancel()` is idempotent. */
export interface Timer {
  cancel(): void;
}

/** What a webhook Durable Object needs from the platform, bound to its own I/O context. */
export interface Platform {
  /** Current time, ms since the epoch (the clock every due time and log instant uses). */
  now(): number;
  /** Runs `fn` once after `ms` milliseconds of this platform's clock. */
  setTimer(fn: () => void, ms: number): Timer;
  /**
   * An outgoing HTTP request. It waits for response headers in this object's I/O context
   * (one of its 6 slots) until the returned promise settles; honour `init.signal`.
   */
  fetch(url: string, init: RequestInit): Promise<Response>;
  /**
   * An outgoing call to another Durable Object. `send` is invoked synchronously (the call is
   * under way when `call` returns). The Workers limits page does not list Durable Object
   * calls among what counts toward the 6 (cloudflare-docs issue #22320 asks); the webhook
   * objects budget them as if they did, and the simulation counts them.
   */
  call<T>(send: () => PromiseLike<T>): Promise<T>;
}

/** The production platform: the runtime itself. */
export const CLOUDFLARE: Platform = {
  now: () => Date.now(),
  setTimer(fn, ms) {
    const handle = setTimeout(fn, ms);
    return { cancel: () => clearTimeout(handle) };
  },
  fetch: (url, init) => fetch(url, init),
  call: (send) => Promise.resolve(send()),
};

/**
 * Gives a webhook object its platform. Called once per object instance, in its constructor:
 * `objectId` is `ctx.id.toString()`, `kind` the class (`hub` or `courier`). A new instance
 * (after a restart) asks again and gets a fresh I/O context.
 */
export type PlatformProvider = (objectId: string, kind: "hub" | "courier") => Platform;

let provider: PlatformProvider | null = null;

/** The platform of a new object instance (see `PlatformProvider`). */
export function platformFor(objectId: string, kind: "hub" | "courier"): Platform {
  return provider === null ? CLOUDFLARE : provider(objectId, kind);
}

/**
 * Installs a simulated platform for the objects constructed from now on (`null` restores the
 * runtime). For tests and the benchmark entry only; the production Worker never calls it.
 */
export function usePlatform(next: PlatformProvider | null): void {
  provider = next;
}

/** Wraps an object's storage (see `useStorageSeam`). */
export type StorageSeam = (storage: DurableObjectStorage) => DurableObjectStorage;

let storageSeam: StorageSeam | null = null;

/**
 * The storage a webhook object runs on: `storage` itself, or as the installed seam wraps it
 * (SQL, key-value, transactions, alarms). Called once per object instance, in its constructor;
 * the object reaches its storage only through what this returns.
 */
export function storageOf(storage: DurableObjectStorage): DurableObjectStorage {
  return storageSeam === null ? storage : storageSeam(storage);
}

/**
 * Installs a wrapper of the objects' storage for the objects constructed from now on, once:
 * tests install one that refuses what production's storage refuses and the local runtime
 * accepts (test/support/sql-limits.ts); production never calls it.
 *
 * @throws when a seam is installed already: none can be replaced nor removed, so that no test
 *   file runs the objects without it.
 */
export function useStorageSeam(next: StorageSeam): void {
  if (storageSeam !== null) throw new Error("The storage seam is installed once (test/support/setup.ts): it cannot be replaced nor removed.");
  storageSeam = next;
}
