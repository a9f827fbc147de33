import path from "node:path";
import { cloudflareTest, readD1Migrations } from "@cloudflare/vitest-pool-workers";
import { defineConfig } from "vitest/config";
import { ensureDocsAssets } from "./scripts/docs-assets";
import { ensurePortalAssets } from "./scripts/portal-assets";

export default defineConfig(async () => {
  // wrangler.toml's [assets] directory (the Scalar bundle of GET /docs, the portal of
  // GET /portal) must exist; the pool does not run wrangler's custom build.
  ensureDocsAssets();
  await ensurePortalAssets();
  const migrations = await readD1Migrations(path.join(import.meta.dirname, "migrations"));
  return {
    plugins: [
      cloudflareTest({
        wrangler: { configPath: "./wrangler.toml" },
        miniflare: {
          bindings: {
            TEST_MIGRATIONS: migrations,
            WEBHOOK_ALLOW_INSECURE_URLS: "false",
            // A short attempt timeout so the webhook timeout test does not wait 15 s.
            WEBHOOK_TIMEOUT_MS: "1000",
          },
        },
      }),
    ],
    test: {
      include: ["test/**/*.test.ts"],
      setupFiles: ["./test/setup.ts"],
      testTimeout: 30_000,
    },
  };
});
