import { availableParallelism } from "node:os";
import path from "node:path";
import { cloudflareTest, readD1Migrations } from "@cloudflare/vitest-plugin";
import { defineConfig } from "vitest/config";
import { ensureDocsAssets } from "./scripts/docs-assets.ts";
import { ensurePortalAssets } from "./scripts/portal-assets.ts";

export default defineConfig(async () => {
  // wrangler.toml's [assets] directory (the Scalar bundle of GET /docs, the portal of
  // GET /portal) must exist; the plugin does not run wrangler's custom build.
  ensureDocsAssets();
  await ensurePortalAssets();
  // The directory's and the shards' migrations (wrangler.toml's migrations_dir of each
  // binding), applied to DIRECTORY and every SHARD_<n> before each file (test/support/fresh-storage.ts).
  const migrations = (folder: string) => readD1Migrations(path.join(import.meta.dirname, "migrations", folder));
  return {
    plugins: [
      cloudflareTest({
        wrangler: { configPath: "./wrangler.toml" },
        miniflare: {
          bindings: {
            TEST_DIRECTORY_MIGRATIONS: await migrations("directory"),
            TEST_SHARD_MIGRATIONS: await migrations("shard"),
            WEBHOOK_ALLOW_INSECURE_URLS: "false",
            // A short attempt timeout so the webhook timeout test does not wait 15 s.
            WEBHOOK_TIMEOUT_MS: "1000",
            // Off for the suite; test/http/rate-limit.test.ts turns it on with the small limit below.
            RATE_LIMIT_ENABLED: "false",
            RATE_LIMIT_QUOTA: "5",
          },
          // A limit small enough to cross in a test (wrangler.toml: 600 per 60 s).
          // The /48 counter at 2 times the /64's (wrangler.toml: 16 times), small enough to cross too.
          ratelimits: {
            RATE_LIMITER: { namespace_id: "1001", simple: { limit: 5, period: 60 } },
            RATE_LIMITER_PREFIX48: { namespace_id: "1002", simple: { limit: 10, period: 60 } },
            // A school's portal sessions together, at 2 times a session's (wrangler.toml: 4 times).
            RATE_LIMITER_PORTAL_SCHOOL: { namespace_id: "1003", simple: { limit: 10, period: 60 } },
          },
          // The simulated read replica of test/support/replica-sim.ts (the local runtime has none).
          d1Databases: { TEST_REPLICA: "test-replica" },
        },
      }),
    ],
    test: {
      include: ["test/**/*.test.ts"],
      setupFiles: ["./test/support/setup.ts"],
      // The files of a worker share one runtime (one workerd process, its modules loaded once):
      // a runtime and the Worker's module graph per file cost about 2.5 CPU s each, half of
      // the suite's CPU (docs/development.md § Suite time). Each file still starts from empty
      // storage: test/support/setup.ts resets every D1 database and Durable Object first.
      isolate: false,
      // One worker per core: a worker's time is spent in its own workerd (Miniflare) process, so
      // vitest's default (cores − 1, a single worker on a 2-core machine) leaves a core idle.
      // VITEST_MAX_WORKERS overrides it (docs/development.md § Suite time).
      maxWorkers: availableParallelism(),
      // Zod, drizzle-orm and the other dependencies as one pre-bundled module each, not
      // hundreds of files that each worker's runtime fetches and evaluates.
      deps: {
        optimizer: {
          ssr: {
            enabled: true,
            include: [
              "zod",
              "drizzle-orm",
              "drizzle-orm/d1",
              "drizzle-orm/sqlite-core",
              "itty-router",
              "ipaddr.js",
              "@cfworker/json-schema",
              "@asteasolutions/zod-to-openapi",
              "fast-check",
              "standardwebhooks",
            ],
          },
        },
      },
      testTimeout: 30_000,
      // The service's routine log lines (src/lib/log.ts: one per request) would bury the
      // report; warnings and errors (stderr) are still shown.
      onConsoleLog: (log: string, type: "stdout" | "stderr") => !(type === "stdout" && log.startsWith('{"kind":')),
    },
  };
});
