import { env } from "cloudflare:test";
import { openApiDocument } from "../../src/api";
import { useD1Seam, withD1Seam } from "../../src/db/client";
import worker from "../../src/index";
import { WebhookCourier } from "../../src/webhooks/courier/webhook-courier";
import { SchoolHub } from "../../src/webhooks/hub/school-hub";
import { useStorageSeam } from "../../src/webhooks/platform/platform";
import { limitedD1, runtimeD1 } from "./d1-limits";
import { d1Bindings, freshStorage } from "./fresh-storage";
import { installInvocationLimits } from "./invocations";
import { limitedStorage } from "./sql-limits";

/**
 * Freezes `value` and everything it holds (an object frozen already is taken as frozen whole),
 * src/ objects the document holds by reference included: they are not to be changed either.
 */
function deepFreeze(value: unknown): void {
  if (typeof value !== "object" || value === null || Object.isFrozen(value)) return;
  Object.freeze(value);
  for (const v of Object.values(value)) deepFreeze(v);
}

// The files of a vitest worker share one runtime (vitest.config.ts: `isolate: false`): each file
// starts from empty, migrated storage (fresh-storage.ts; test/limits/fresh-storage.test.ts).
const testEnv = env as unknown as Record<string, D1Database>;
const firstFile = runtimeD1(testEnv.DIRECTORY!) === testEnv.DIRECTORY;
await freshStorage();

// Production's per-query limits, which the local runtime does not enforce (production-limits.ts),
// on every path: the Worker's D1 bindings (`useD1Seam`: the directory and every shard, sessions
// included), the tests' own (the same bindings of `env`, replaced here, so that the fixtures,
// moves and direct statements of every test file go through them too), and every webhook
// object's storage (`useStorageSeam`: SQL and key-value); then production's per-invocation
// limits (invocations.ts): D1 queries and subrequests counted per Worker request, cron run, and
// Durable Object request, RPC call or alarm. The runtime's first file installs them, once (each
// refuses to be installed again); its modules stay loaded, so every later file runs with them.
if (firstFile) {
  useD1Seam(limitedD1);
  useStorageSeam(limitedStorage);
  for (const b of d1Bindings()) testEnv[b] = limitedD1(testEnv[b]!);
  installInvocationLimits(worker, [SchoolHub, WebhookCourier], [env.SCHOOL_HUB, env.WEBHOOK_COURIER]);
  // The OpenAPI document is built once per isolate and shared (src/api.ts): frozen, so that
  // no file changes what a later one reads (a change throws a TypeError).
  deepFreeze(openApiDocument());
} else if (withD1Seam(env) === env) {
  throw new Error("setup.ts: the D1 seam is not installed in this file's modules (were they loaded again?)");
}
