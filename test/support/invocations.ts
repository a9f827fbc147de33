/**
 * Production's per-invocation limits, which the local runtime does not enforce: the D1 queries and
 * the subrequests one invocation makes — a Worker request (`fetch`), a `scheduled` run, a Durable
 * Object request, RPC call or alarm (each a new invocation, in the same isolate too). setup.ts
 * installs it once (`installInvocationLimits`): thin wrappers around the Worker's exported
 * handlers and the webhook objects' methods enter an invocation (AsyncLocalStorage), the D1 seam
 * (d1-limits.ts) charges each query, the Durable Object namespaces' stubs each call, and the
 * global `fetch` and the simulated platform (webhooks/platform-sim.ts) each request. Past a limit
 * every later call of the invocation throws the error production gives. The plan is the
 * invocation's `env.WORKERS_PLAN` ("paid" unless "free"; wrangler.toml [vars]).
 */
import { AsyncLocalStorage } from "node:async_hooks";

/** A Workers plan, as `WORKERS_PLAN` names it. */
type Plan = "paid" | "free";

/** The per-invocation limits of each plan, each with the page it comes from. */
const INVOCATION_LIMITS = {
  /**
   * https://developers.cloudflare.com/d1/platform/limits/: "Queries per Worker invocation (read
   * subrequest limits): 1000 (Workers Paid) / 50 (Free)". One `prepare(…).run/all/first/raw`,
   * one `batch` (all its statements go to D1 in one request) and one `exec` each count one.
   */
  d1Queries: { paid: 1000, free: 50 },
  /**
   * https://developers.cloudflare.com/workers/platform/limits/ § Subrequests: "50/request" (Free),
   * "10,000/request" (Paid). A subrequest is any request to the Internet (`fetch`) or to another
   * Cloudflare service: each D1 query above and each call on a Durable Object stub count too.
   */
  subrequests: { paid: 10_000, free: 50 },
} as const;

/** What one invocation has spent so far. */
export interface Invocation {
  kind: "fetch" | "scheduled" | "object";
  /** What it runs in (a Durable Object instance; a fresh object for each Worker invocation). */
  owner: object;
  plan: Plan;
  d1Queries: number;
  subrequests: number;
  /** The D1 methods it called, in order (`first`, `all`, `run`, `raw`, `batch`, `exec`). */
  d1Calls: string[];
}

const current = new AsyncLocalStorage<Invocation>();

/** The last invocations started (at most 100), oldest first. */
const recent: Invocation[] = [];

/** The last invocations started (at most 100), oldest first: what each spent so far. */
export function recentInvocations(): readonly Invocation[] {
  return recent;
}

/** The most any invocation spent since `resetPeaks` (reported by tests and the benchmark). */
const peaks = { d1Queries: 0, subrequests: 0 };

/** The most D1 queries and the most subrequests one invocation made since the last reset. */
export function invocationPeaks(): { d1Queries: number; subrequests: number } {
  return { ...peaks };
}

/** Forgets the peaks (`invocationPeaks`). */
export function resetPeaks(): void {
  peaks.d1Queries = 0;
  peaks.subrequests = 0;
}

const planOf = (env: unknown): Plan => ((env as { WORKERS_PLAN?: unknown } | undefined)?.WORKERS_PLAN === "free" ? "free" : "paid");

/**
 * Runs `fn` as an invocation of `owner` (a Durable Object method called by another method of the
 * same object stays in the invocation it is part of).
 */
export function enterInvocation<R>(kind: Invocation["kind"], owner: object, env: unknown, fn: () => R): R {
  if (current.getStore()?.owner === owner) return fn();
  const inv: Invocation = { kind, owner, plan: planOf(env), d1Queries: 0, subrequests: 0, d1Calls: [] };
  recent.push(inv);
  if (recent.length > 100) recent.shift();
  return current.run(inv, fn);
}

/** `fn` bound to the invocation under way (a timer's callback runs in the invocation that set it). */
export function bindToInvocation<A extends unknown[], R>(fn: (...args: A) => R): (...args: A) => R {
  const store = current.getStore();
  return store === undefined ? fn : (...args: A) => current.run(store, () => fn(...args));
}

const SUFFIX = (why: string) => ` (simulated production limit: ${why})`;

function chargeSubrequest(inv: Invocation, what: string): void {
  const limit = INVOCATION_LIMITS.subrequests[inv.plan];
  if (inv.subrequests >= limit) {
    throw new Error(
      `Too many subrequests by single Worker invocation. To configure this limit, refer to https://developers.cloudflare.com/workers/platform/limits/${SUFFIX(
        `${what}: a ${inv.kind} invocation past ${limit} subrequests on Workers ${inv.plan === "paid" ? "Paid" : "Free"}`,
      )}`,
    );
  }
  inv.subrequests++;
  peaks.subrequests = Math.max(peaks.subrequests, inv.subrequests);
}

/**
 * Counts one D1 query of the invocation under way (none outside one: a test's own statements).
 *
 * @throws production's error past 1,000 (Paid) or 50 (Free) queries, or past the subrequests.
 */
export function chargeD1Query(method: string): void {
  const inv = current.getStore();
  if (inv === undefined) return;
  const limit = INVOCATION_LIMITS.d1Queries[inv.plan];
  if (inv.d1Queries >= limit) {
    throw new Error(
      `Too many API requests by single Worker invocation.${SUFFIX(`a ${inv.kind} invocation past ${limit} D1 queries on Workers ${inv.plan === "paid" ? "Paid" : "Free"}`)}`,
    );
  }
  chargeSubrequest(inv, "a D1 query");
  inv.d1Queries++;
  inv.d1Calls.push(method);
  peaks.d1Queries = Math.max(peaks.d1Queries, inv.d1Queries);
}

/** Counts one outgoing request (`fetch`) or Durable Object call of the invocation under way. */
export function chargeOutgoing(what: "fetch" | "a Durable Object call"): void {
  const inv = current.getStore();
  if (inv !== undefined) chargeSubrequest(inv, what);
}

/** `stub` whose every method call counts as a subrequest of the invocation making it. */
function countedStub<S extends object>(stub: S): S {
  return new Proxy(stub, {
    get(target, prop) {
      const value = Reflect.get(target, prop, target);
      if (typeof value !== "function") return value;
      return (...args: unknown[]) => {
        try {
          chargeOutgoing("a Durable Object call");
        } catch (err) {
          return Promise.reject(err);
        }
        return Reflect.apply(value, target, args);
      };
    },
  });
}

/** Wraps each method of `proto` (not the constructor, not accessors) as an entry point. */
function wrapObjectMethods(proto: object): void {
  for (const name of Object.getOwnPropertyNames(proto)) {
    const d = Object.getOwnPropertyDescriptor(proto, name)!;
    if (name === "constructor" || typeof d.value !== "function") continue;
    const method = d.value as (...a: unknown[]) => unknown;
    Object.defineProperty(proto, name, {
      ...d,
      value: function (this: { env?: unknown }, ...args: unknown[]) {
        return enterInvocation("object", this, this.env, () => method.apply(this, args));
      },
    });
  }
}

let installed = false;

/**
 * Installs the per-invocation limits (once; a second call throws): `worker` is the Worker's
 * default export (its `fetch` and `scheduled` become entry points), `objectClasses` the Durable
 * Object classes (each method an entry point), `namespaces` the Durable Object bindings (their
 * stubs' calls count).
 */
export function installInvocationLimits(worker: ExportedHandler<Env>, objectClasses: { prototype: object }[], namespaces: DurableObjectNamespace[]): void {
  if (installed) throw new Error("the per-invocation limits are installed once, by test/support/setup.ts");
  installed = true;
  const { fetch: onFetch, scheduled: onScheduled } = worker;
  if (onFetch) worker.fetch = (request, env, exec) => enterInvocation("fetch", {}, env, () => onFetch.call(worker, request, env, exec));
  if (onScheduled) worker.scheduled = (controller, env, exec) => enterInvocation("scheduled", {}, env, () => onScheduled.call(worker, controller, env, exec));
  for (const cls of objectClasses) wrapObjectMethods(cls.prototype);
  const protos = new Set(namespaces.map((ns) => Object.getPrototypeOf(ns) as Record<string, unknown>));
  for (const proto of protos) {
    for (const name of ["get", "getByName"]) {
      const original = proto[name];
      if (typeof original !== "function") continue;
      // A stub made in an invocation (product code) counts its calls; a test's own stays the
      // runtime's (runInDurableObject and runDurableObjectAlarm take no other).
      proto[name] = function (this: unknown, ...args: unknown[]) {
        const stub = (original as (...a: unknown[]) => object).apply(this, args);
        return current.getStore() === undefined ? stub : countedStub(stub);
      };
    }
  }
  const globalFetch = globalThis.fetch;
  globalThis.fetch = (input, init) => {
    try {
      chargeOutgoing("fetch");
    } catch (err) {
      return Promise.reject(err);
    }
    return globalFetch(input, init);
  };
}
