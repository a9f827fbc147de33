/**
 * `npm run test:e2e`: the webhook portal in a real browser (Debian's Chromium driven by
 * playwright-core) against `wrangler dev` and a local webhook receiver. Runs in Node, one
 * file at a time, its tests in order (each step builds on the previous one).
 */
import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    root: `${import.meta.dirname}/..`,
    include: ["e2e/**/*.e2e.ts"],
    pool: "forks",
    fileParallelism: false,
    // Steps wait for deliveries (ms to a few s locally); the hook starts wrangler and seeds.
    testTimeout: 90_000,
    hookTimeout: 300_000,
  },
});
