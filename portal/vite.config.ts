/**
 * Vite build of the webhook portal (portal/ → dist/assets/portal/, served at /portal by the
 * Worker's static assets). Run through scripts/portal-assets.ts, never by hand: that is what
 * wrangler's custom build and vitest.config.ts call.
 *
 * CSP-friendly output (the Worker serves /portal with `default-src 'self'`, src/portal/serve.ts):
 * no inline script (no module-preload polyfill), no asset inlined as a `data:` URL, one
 * external stylesheet.
 */
import path from "node:path";
import { defineConfig } from "vite";

const here = import.meta.dirname;

export default defineConfig({
  root: here,
  base: "/portal/",
  publicDir: path.join(here, "public"),
  logLevel: "warn",
  clearScreen: false,
  oxc: { jsx: { runtime: "automatic", importSource: "preact" } },
  build: {
    outDir: path.join(here, "..", "dist", "assets", "portal"),
    emptyOutDir: true,
    assetsDir: "assets",
    assetsInlineLimit: 0,
    cssCodeSplit: false,
    modulePreload: { polyfill: false },
    sourcemap: false,
    target: "es2022",
    reportCompressedSize: false,
  },
});
