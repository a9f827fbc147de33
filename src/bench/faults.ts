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

/** `env` with a `SCHOOL_HUB` whose stubs reject every `publish` (other methods pass through). */
export function failingPublishEnv(env: Env): Env {
  const hubs = env.SCHOOL_HUB;
  const namespace = new Proxy(hubs, {
    get(target, prop) {
      if (prop !== "get") return Reflect.get(target, prop, target);
      return (id: DurableObjectId) => {
        const stub = target.get(id);
        return new Proxy(stub, {
          get: (s, p) => (p === "publish" ? () => Promise.reject(new Error(REFUSED)) : Reflect.get(s, p, s)),
        });
      };
    },
  });
  return { ...env, SCHOOL_HUB: namespace };
}
