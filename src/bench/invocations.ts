/**
 * Per-invocation counts of the benchmark's own Worker (scripts/bench-hub-worker.ts): the D1
 * calls and the subrequests (Durable Object calls, outgoing `fetch`) of each invocation — a
 * Worker request, a `scheduled` run, a Durable Object request, RPC call or alarm — against
 * the limits Cloudflare sets per invocation (docs/development.md § Benchmarks). An
 * `AsyncLocalStorage` carries the invocation's counters through its awaits, timers and
 * `waitUntil` work; D1 is counted by `countingEnv` (ab-variants.ts), the rest here.
 */
import { AsyncLocalStorage } from "node:async_hooks";
import { type CallCounts, countingEnv } from "./ab-variants";

/** What one invocation asked of the platform. */
interface Invocation extends CallCounts {
  /** Outgoing `fetch` and calls to Durable Objects (stub methods, `fetch`). */
  subrequests: number;
  /** Whose invocation it is: a Durable Object instance, or the Worker's request. */
  owner: object;
}

const current = new AsyncLocalStorage<Invocation>();
/** Every invocation so far, by kind (`worker GET /v3/webhooks`, `hub.publish`, …); read at report time, so work after the answer counts. */
const byKind = new Map<string, Invocation[]>();
/** Counts made outside any invocation (an object's constructor). */
const outside: Invocation = { d1: 0, rateLimit: 0, subrequests: 0, owner: {} };

const store = () => current.getStore() ?? outside;

/** Counters that always point at the current invocation's (what `countingEnv` increments). */
const ambient: CallCounts = {
  get d1() {
    return store().d1;
  },
  set d1(n) {
    store().d1 = n;
  },
  get rateLimit() {
    return store().rateLimit;
  },
  set rateLimit(n) {
    store().rateLimit = n;
  },
};

/** Counts one subrequest of the current invocation. */
export function countSubrequest(): void {
  store().subrequests += 1;
}

/**
 * Runs `fn` as an invocation of kind `kind` by `owner`, unless `owner` is already running
 * one (a method calling another of its object's methods stays in the caller's invocation).
 */
export function invocation<T>(owner: object, kind: string, fn: () => T): T {
  if (current.getStore()?.owner === owner) return fn();
  const counts: Invocation = { d1: 0, rateLimit: 0, subrequests: 0, owner };
  const list = byKind.get(kind) ?? [];
  byKind.set(kind, list);
  list.push(counts);
  return current.run(counts, fn);
}

/** The Durable Object stubs of `ns`, each of their calls counted as a subrequest of the current invocation. */
function countedNamespace<T extends object>(ns: T): T {
  const stub = (s: object) =>
    new Proxy(s, {
      get(target, p) {
        const value = Reflect.get(target, p, target);
        if (typeof value !== "function" || p === "then") return value;
        return (...args: unknown[]) => {
          countSubrequest();
          return (value as (...a: unknown[]) => unknown)(...args);
        };
      },
    });
  return new Proxy(ns, {
    get(target, p) {
      const value = Reflect.get(target, p, target);
      if (typeof value !== "function") return value;
      const method = (value as (...a: unknown[]) => unknown).bind(target);
      return p === "get" || p === "getByName" ? (...args: unknown[]) => stub(method(...args) as object) : method;
    },
  });
}

/**
 * `env` with every D1 binding counted into the current invocation, and with `stubs` both
 * object namespaces too (the Worker's; an object's calls are counted at its platform's
 * `call` instead, scripts/bench-hub-worker.ts). Build it once per `env`.
 */
export function countedEnv(env: Env, opts: { stubs: boolean }): Env {
  const d1 = countingEnv(env, ambient).env;
  return opts.stubs ? { ...d1, SCHOOL_HUB: countedNamespace(env.SCHOOL_HUB), WEBHOOK_COURIER: countedNamespace(env.WEBHOOK_COURIER) } : d1;
}

/**
 * Wraps every method of `cls`'s prototype chain (up to, not including, `Object.prototype`)
 * as an invocation of kind `${kind}.${method}`: the runtime calls them (`fetch`, `alarm`,
 * RPC methods); the object's own calls between them stay in one invocation (`invocation`).
 */
export function countInvocations(cls: { prototype: object }, kind: string): void {
  const names = new Set<string>();
  for (let p = Object.getPrototypeOf(cls.prototype); p && p !== Object.prototype; p = Object.getPrototypeOf(p)) {
    for (const [name, d] of Object.entries(Object.getOwnPropertyDescriptors(p))) if (name !== "constructor" && typeof d.value === "function") names.add(name);
  }
  for (const name of names) {
    if (Object.hasOwn(cls.prototype, name)) continue;
    const impl = (cls.prototype as Record<string, (...a: unknown[]) => unknown>)[name]!;
    Object.defineProperty(cls.prototype, name, {
      configurable: true,
      writable: true,
      value(this: object, ...args: unknown[]) {
        return invocation(this, `${kind}.${name}`, () => impl.apply(this, args));
      },
    });
  }
}

/** Forgets every invocation so far (a new run of the bench starts). */
export function resetInvocations(): void {
  byKind.clear();
  outside.d1 = 0;
  outside.subrequests = 0;
}

/** Per kind of invocation: how many ran and the most D1 calls and subrequests one made. */
export interface InvocationFigures {
  kind: string;
  n: number;
  maxD1: number;
  maxSubrequests: number;
}

/** The figures of every kind so far, the counts made outside any invocation as kind `(outside)`. */
export function invocationFigures(): InvocationFigures[] {
  const rows = [...byKind].map(([kind, list]) => ({
    kind,
    n: list.length,
    maxD1: list.reduce((m, c) => Math.max(m, c.d1), 0),
    maxSubrequests: list.reduce((m, c) => Math.max(m, c.subrequests), 0),
  }));
  return [...rows, { kind: "(outside)", n: 0, maxD1: outside.d1, maxSubrequests: outside.subrequests }];
}
