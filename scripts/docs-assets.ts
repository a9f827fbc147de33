/**
 * `npm run docs:assets` — copies Scalar's API Reference browser bundle
 * (`@scalar/api-reference/dist/browser/standalone.js`, styles included) to
 * `dist/assets/docs/scalar-api-reference.js` (`SCALAR_SCRIPT_PATH`), so that GET /docs loads
 * it from the Worker itself, never from a CDN. `dist/` is git-ignored: wrangler's custom
 * build (scripts/build-assets.ts) and vitest.config.ts (`ensureDocsAssets`) make the copy,
 * skipped when the file is already up to date.
 */
import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { SCALAR_SCRIPT_PATH, SCALAR_SETUP_PATH, SCALAR_SETUP_SCRIPT } from "../src/openapi/docs-page.ts";

/** The repository root (this file lives in scripts/). */
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");

/** The static assets directory of wrangler.toml's `[assets]`, relative to the repository root. */
export const ASSETS_DIR = "dist/assets";

/** Where the bundle comes from, relative to the repository root. */
const SOURCE = "node_modules/@scalar/api-reference/dist/browser/standalone.js";

/** Writes the page's setup script (`SCALAR_SETUP_PATH`) unless it is already there as it should be. */
function writeSetupScript(root: string): void {
  const setup = path.join(root, ASSETS_DIR, SCALAR_SETUP_PATH);
  if (existsSync(setup) && readFileSync(setup, "utf8") === SCALAR_SETUP_SCRIPT) return;
  mkdirSync(path.dirname(setup), { recursive: true });
  writeFileSync(setup, SCALAR_SETUP_SCRIPT);
}

/**
 * Makes sure `dist/assets/docs/scalar-api-reference.js` is a copy of the installed Scalar
 * bundle (without its `sourceMappingURL` comment: the map is not shipped), and that the
 * page's setup script (`SCALAR_SETUP_PATH`) is there beside it.
 *
 * @param root the repository root (default: this checkout).
 * @returns the destination path, the Scalar version, and whether a copy was written.
 * @throws Error when `@scalar/api-reference` is not installed (run `npm ci`).
 */
export function ensureDocsAssets(root = ROOT): { file: string; version: string; copied: boolean } {
  const source = path.join(root, SOURCE);
  if (!existsSync(source)) throw new Error(`${SOURCE} is missing: run \`npm ci\` first.`);
  const version = (JSON.parse(readFileSync(path.join(root, "node_modules/@scalar/api-reference/package.json"), "utf8")) as { version: string }).version;
  const file = path.join(root, ASSETS_DIR, SCALAR_SCRIPT_PATH);
  const stamp = `${file}.version`;
  const expected = `${version} ${statSync(source).size}`;
  writeSetupScript(root);
  if (existsSync(file) && existsSync(stamp) && readFileSync(stamp, "utf8") === expected) return { file, version, copied: false };
  mkdirSync(path.dirname(file), { recursive: true });
  const text = readFileSync(source, "utf8").replace(/\n\/\/# sourceMappingURL=\S+\s*$/, "\n");
  writeFileSync(file, text);
  // The stamp records what was copied; dist/assets/.assetsignore keeps it out of the assets.
  writeFileSync(stamp, expected);
  writeFileSync(path.join(root, ASSETS_DIR, ".assetsignore"), "*.version\n");
  return { file, version, copied: true };
}

if (process.argv[1] && import.meta.url === pathToFileURL(path.resolve(process.argv[1])).href) {
  try {
    const { file, version, copied } = ensureDocsAssets();
    console.log(`${copied ? "copied" : "up to date"}: Scalar API Reference ${version} → ${path.relative(ROOT, file)}`);
  } catch (err) {
    console.error((err as Error).message);
    process.exitCode = 1;
  }
}
