/**
 * The HTML of GET /docs: Scalar's API Reference rendering /openapi.json. The script is the
 * Worker's own static asset (`SCALAR_SCRIPT_PATH`, copied from node_modules by
 * scripts/docs-assets.ts); the page loads nothing from another origin (no CDN, no web fonts,
 * no telemetry), and "Test Request" calls the server the page came from. The page and its
 * scripts are served with the CSP of src/portal/headers.ts (`DOCS_CSP`).
 *
 * This module has no imports, so the Node script that writes the assets can read it.
 */

/** URL path of the Scalar API Reference bundle, served from the static assets directory. */
export const SCALAR_SCRIPT_PATH = "/docs/scalar-api-reference.js";

/**
 * URL path of the script that runs just before the bundle (a static asset too, written by
 * scripts/docs-assets.ts from `SCALAR_SETUP_SCRIPT`).
 */
export const SCALAR_SETUP_PATH = "/docs/scalar-setup.js";

/**
 * The setup script. Scalar's bundled zod probes `Function("")` to decide whether to compile
 * its validators; the page's CSP allows no `eval`, so the probe is refused and reported as a
 * CSP violation (zod then interprets instead). Setting zod's own global `jitless` option
 * first skips the probe: the same outcome, without the violation.
 */
export const SCALAR_SETUP_SCRIPT = "globalThis.__zod_globalConfig = Object.assign(globalThis.__zod_globalConfig ?? {}, { jitless: true });\n";

/** URL path of the OpenAPI document. */
export const OPENAPI_PATH = "/openapi.json";

/**
 * Scalar's configuration for the page: the document, the bearer scheme preselected (paste the
 * key in the "Authentication" box), and everything that would reach another origin off —
 * "Open API Client" too, a link that hands the document's URL to Scalar's hosted client
 * ("Test Request" stays on this page and calls this server).
 */
export const SCALAR_CONFIGURATION = {
  url: OPENAPI_PATH,
  withDefaultFonts: false,
  telemetry: false,
  agent: { disabled: true },
  mcp: { disabled: true },
  showDeveloperTools: "never",
  documentDownloadType: "json",
  defaultHttpClient: { targetKey: "shell", clientKey: "curl" },
  authentication: { preferredSecurityScheme: "bearerAuth" },
  hideClientButton: true,
} as const;

/**
 * The page (UTF-8 HTML). `title` is the document's `info.title`. No inline script (the CSP
 * of src/portal/headers.ts allows scripts from this origin only): the bundle mounts itself
 * on `#api-reference` and reads its configuration from that element's
 * `data-configuration` (a JSON data block, never executed).
 */
export function docsPageHtml(title: string): string {
  const config = JSON.stringify(SCALAR_CONFIGURATION).replace(/[&"<>]/g, (c) => `&#${c.charCodeAt(0)};`);
  const safeTitle = title.replace(/[<>&"]/g, (c) => `&#${c.charCodeAt(0)};`);
  return `<!doctype html>
<html lang="en">
  <head>
    <meta charset="utf-8" />
    <meta name="viewport" content="width=device-width, initial-scale=1" />
    <title>${safeTitle} — reference</title>
  </head>
  <body>
    <noscript>This reference needs JavaScript. The raw document is at <a href="${OPENAPI_PATH}">${OPENAPI_PATH}</a>.</noscript>
    <script id="api-reference" type="application/json" data-configuration="${config}"></script>
    <script src="${SCALAR_SETUP_PATH}"></script>
    <script src="${SCALAR_SCRIPT_PATH}"></script>
  </body>
</html>
`;
}
