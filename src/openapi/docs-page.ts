/**
 * The HTML of GET /docs: Scalar's API Reference rendering /openapi.json. The script is the
 * Worker's own static asset (`SCALAR_SCRIPT_PATH`, copied from node_modules by
 * scripts/docs-assets.ts); the page loads nothing from another origin (no CDN, no web fonts,
 * no telemetry), and "Test Request" calls the server the page came from.
 *
 * This module has no imports, so the Node script that copies the asset can read the path.
 */

/** URL path of the Scalar API Reference bundle, served from the static assets directory. */
export const SCALAR_SCRIPT_PATH = "/docs/scalar-api-reference.js";

/** URL path of the OpenAPI document. */
export const OPENAPI_PATH = "/openapi.json";

/**
 * Scalar's configuration for the page: the document, the bearer scheme preselected (paste the
 * key in the "Authentication" box), and everything that would reach another origin off.
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
} as const;

/**
 * The page (UTF-8 HTML). `title` is the document's `info.title`. The mount point is not
 * `#api-reference`: the bundle auto-mounts a second, unconfigured app on that id.
 */
export function docsPageHtml(title: string): string {
  const config = JSON.stringify(SCALAR_CONFIGURATION).replace(/</g, "\\u003c");
  const safeTitle = title.replace(/[<>&"]/g, (c) => `&#${c.charCodeAt(0)};`);
  return `<!doctype html>
<html lang="en">
  <head>
    <meta charset="utf-8" />
    <meta name="viewport" content="width=device-width, initial-scale=1" />
    <title>${safeTitle} — reference</title>
    <link rel="icon" href="data:," />
    <style>body { margin: 0; font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; }</style>
  </head>
  <body>
    <div id="app"></div>
    <noscript>This reference needs JavaScript. The raw document is at <a href="${OPENAPI_PATH}">${OPENAPI_PATH}</a>.</noscript>
    <script src="${SCALAR_SCRIPT_PATH}"></script>
    <script>
      Scalar.createApiReference("#app", ${config});
    </script>
  </body>
</html>
`;
}
