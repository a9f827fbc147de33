/**
 * A fault switch of the benchmark entry (src/bench/entry.ts), for `npm run test:restart`:
 * a request with `x-bench-fail-publish: 1` runs with a `SCHOOL_HUB` binding whose stubs
 * refuse `publish`, so that a course write commits in D1 (its outbox rows with it) and its
 * own publish fails — the case the cron's outbox sweep exists for. The production Worker
 * (src/index.ts) never serves it; nothing else of the request changes.
 */

/** The request header that turns the switch on (value `1`). */
export const FAIL_PUBLISH_HEADER = "x-bench-fail-publish";

/** What the refused `publish` rejects with. */
const REFUSED = "bench fault switch: this request's publish to the hub was made to fail";

/** `target`'s property `prop`, a method bound to `target` (the namespace's methods refuse another `this`). */
function bound(target: object, prop: string | symbol): unknown {
  const value = Reflect.get(target, prop, target);
  return typeof value === "function" ? value.bind(target) : value;
}

/** `env` with a `SCHOOL_HUB` whose stubs reject every `publish` (other methods pass through). */
export function failingPublishEnv(env: Env): Env {
  const namespace = new Proxy(env.SCHOOL_HUB, {
    get(target, prop) {
      if (prop !== "get") return bound(target, prop);
      return (id: DurableObjectId) =>
        new Proxy(target.get(id), {
          // A stub's methods are RPC calls that need no `this` (and `bind` would be one).
          get: (stub, p) => (p === "publish" ? () => Promise.reject(new Error(REFUSED)) : Reflect.get(stub, p, stub)),
        });
    },
  });
  return { ...env, SCHOOL_HUB: namespace };
}
