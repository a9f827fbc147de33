/**
 * wrangler's custom build (wrangler.toml `[build]`), run by `npm start`, `wrangler dev` and
 * `wrangler deploy` before they read the static assets directory (`dist/assets/`): copies the
 * Scalar bundle of /docs (scripts/docs-assets.ts) and builds the webhook portal of /portal
 * (scripts/portal-assets.ts). Each step is skipped when already up to date.
 */
import path from "node:path";
import { ensureDocsAssets } from "./docs-assets.ts";
import { ensurePortalAssets } from "./portal-assets.ts";

try {
  const docs = ensureDocsAssets();
  console.log(`${docs.copied ? "copied" : "up to date"}: Scalar API Reference ${docs.version} → ${path.relative(process.cwd(), docs.file)}`);
  const portal = await ensurePortalAssets();
  console.log(`${portal.built ? "built" : "up to date"}: webhook portal → ${path.relative(process.cwd(), portal.dir)}`);
} catch (err) {
  console.error((err as Error).message);
  process.exitCode = 1;
}
