/**
 * `npm run portal:build` — builds the webhook portal (portal/, a Preact app) with Vite into
 * the Worker's static assets: `dist/assets/portal/` (index.html, hashed JS and CSS under
 * `assets/`, favicon), served at /portal (src/portal/serve.ts adds its security headers).
 *
 * Like the Scalar bundle of /docs (scripts/docs-assets.ts), `dist/` is git-ignored and the
 * build is made by every entry point that serves assets: wrangler's custom build
 * (scripts/build-assets.ts, wrangler.toml `[build]`: `npm start`, `wrangler dev`,
 * `wrangler deploy`) and vitest.config.ts. It is skipped when nothing it depends on changed:
 * `dist/assets/portal.version` records a hash of portal/, of the src/ files it imports and of
 * the versions of vite, preact and uplot (dist/assets/.assetsignore keeps `*.version` out).
 */
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { ASSETS_DIR } from "./docs-assets.ts";

/** The repository root (this file lives in scripts/). */
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");

/** Where the portal is built, relative to the repository root (served at /portal/). */
export const PORTAL_OUT_DIR = path.join(ASSETS_DIR, "portal");

/** Packages whose version changes the build's output. */
const BUILD_PACKAGES = ["vite", "preact", "uplot"];

/** Every file under `dir`, sorted, as paths relative to `base`. */
function listFiles(dir: string, base: string): string[] {
  return readdirSync(dir, { withFileTypes: true })
    .flatMap((e) => (e.isDirectory() ? listFiles(path.join(dir, e.name), base) : [path.relative(base, path.join(dir, e.name))]))
    .sort();
}

/** The files outside portal/ the portal imports (the scope names of src/lib/scopes.ts), relative to the root. */
const SHARED_SOURCES = ["src/lib/scopes.ts"];

/** A hash of portal/ and `SHARED_SOURCES` (names and contents) and of the build packages' versions. */
export function portalSourceHash(root = ROOT): string {
  const hash = createHash("sha256");
  const src = path.join(root, "portal");
  for (const file of [...listFiles(src, root), ...SHARED_SOURCES])
    hash
      .update(`${file}\0`)
      .update(readFileSync(path.join(root, file)))
      .update("\0");
  for (const pkg of BUILD_PACKAGES) {
    const manifest = path.join(root, "node_modules", pkg, "package.json");
    hash.update(`${pkg}@${existsSync(manifest) ? (JSON.parse(readFileSync(manifest, "utf8")) as { version: string }).version : "missing"}\0`);
  }
  return hash.digest("hex");
}

/**
 * Builds the portal into `dist/assets/portal/` unless the last build came from the same
 * sources (see the module comment).
 *
 * @param root the repository root (default: this checkout).
 * @param force build even when up to date.
 * @returns the output directory and whether a build ran.
 * @throws Error when Vite is not installed (run `npm ci`) or the build fails (its message).
 */
export async function ensurePortalAssets(root = ROOT, force = false): Promise<{ dir: string; built: boolean }> {
  const dir = path.join(root, PORTAL_OUT_DIR);
  const stamp = path.join(root, ASSETS_DIR, "portal.version");
  const expected = portalSourceHash(root);
  if (!force && existsSync(path.join(dir, "index.html")) && existsSync(stamp) && readFileSync(stamp, "utf8") === expected) return { dir, built: false };
  const { build } = await import("vite");
  await build({ configFile: path.join(root, "portal", "vite.config.ts"), logLevel: "warn" });
  mkdirSync(path.dirname(stamp), { recursive: true });
  writeFileSync(stamp, expected);
  writeFileSync(path.join(root, ASSETS_DIR, ".assetsignore"), "*.version\n");
  return { dir, built: true };
}

if (process.argv[1] && import.meta.url === pathToFileURL(path.resolve(process.argv[1])).href) {
  try {
    const { dir, built } = await ensurePortalAssets(ROOT, process.argv.includes("--force"));
    console.log(`${built ? "built" : "up to date"}: webhook portal → ${path.relative(ROOT, dir)}`);
  } catch (err) {
    console.error((err as Error).message);
    process.exitCode = 1;
  }
}
