import { applyD1Migrations, env } from "cloudflare:test";
import { useD1Seam } from "../../src/db/client";
import { shardBindings } from "../../src/db/shard-names";
import worker from "../../src/index";
import { WebhookCourier } from "../../src/webhooks/courier/webhook-courier";
import { SchoolHub } from "../../src/webhooks/hub/school-hub";
import { useStorageSeam } from "../../src/webhooks/platform/platform";
import { guardRows, limitedD1 } from "./d1-limits";
import { installInvocationLimits } from "./invocations";
import { checkStatement } from "./production-limits";
import { limitedStorage } from "./sql-limits";

// Storage is isolated per test file; migrations are idempotent (d1_migrations table). The
// directory and every shard, from their own folders (migrations/directory, migrations/shard),
// each statement first checked against production's limits (applyD1Migrations takes only the
// runtime's own binding); then the triggers that refuse a stored row over 2,000,000 bytes.
const bindings = ["DIRECTORY", ...shardBindings(env)] as const;
const testEnv = env as unknown as Record<string, D1Database>;
for (const b of bindings) {
  const migrations = b === "DIRECTORY" ? env.TEST_DIRECTORY_MIGRATIONS : env.TEST_SHARD_MIGRATIONS;
  for (const m of migrations) for (const q of m.queries) checkStatement("d1", q, []);
  await applyD1Migrations(testEnv[b]!, migrations);
  await guardRows(testEnv[b]!);
}

// Production's per-query limits, which the local runtime does not enforce (production-limits.ts),
// on every path: the Worker's D1 bindings (`useD1Seam`: the directory and every shard, sessions
// included), the tests' own (the same bindings of `env`, replaced here, so that the fixtures,
// moves and direct statements of every test file go through them too), and every webhook
// object's storage (`useStorageSeam`: SQL and key-value). Each seam is installed once and
// refuses to be replaced: no test file can run product code without it.
useD1Seam(limitedD1);
useStorageSeam(limitedStorage);
for (const b of bindings) testEnv[b] = limitedD1(testEnv[b]!);

// Production's per-invocation limits (invocations.ts): D1 queries and subrequests counted per
// Worker request, cron run, and Durable Object request, RPC call or alarm.
installInvocationLimits(worker, [SchoolHub, WebhookCourier], [env.SCHOOL_HUB, env.WEBHOOK_COURIER]);
