/**
 * The security headers of the pages the Worker serves — the webhook portal (docs/reference.md § "Webhook
 * portal: GET /portal", served by src/portal/serve.ts) and the API reference at /docs (its
 * page by src/openapi/operations.ts, its script by src/portal/serve.ts) — in one place. This
 * module has no imports, so the Node end-to-end tests can read the policies they check.
 */

/** Path prefix of the portal. */
export const PORTAL_PATH = "/portal";

/** Path prefix of the API reference's static files (`/docs/scalar-api-reference.js`). */
export const DOCS_ASSETS_PREFIX = "/docs/";

/**
 * A Content-Security-Policy that lets a page load and call nothing but this Worker's own
 * origin: scripts, styles, images, fonts and API calls from `'self'`; no plugin, no `<base>`,
 * forms post only here, and no other site may frame the page. `styleSrc` adds sources to
 * `style-src` (nothing else can be widened).
 */
function sameOriginCsp(styleSrc: readonly string[] = []): string {
  return [
    "default-src 'self'",
    "script-src 'self'",
    ["style-src 'self'", ...styleSrc].join(" "),
    "img-src 'self'",
    "font-src 'self'",
    "connect-src 'self'",
    "object-src 'none'",
    "base-uri 'none'",
    "form-action 'self'",
    "frame-ancestors 'none'",
  ].join("; ");
}

/** The headers every page and file of both carry beside its CSP. */
const COMPANION_HEADERS: Record<string, string> = {
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
  "x-frame-options": "DENY",
  "cross-origin-opener-policy": "same-origin",
  "permissions-policy": "camera=(), microphone=(), geolocation=(), payment=()",
};

/** The portal's Content-Security-Policy: same origin only, no inline script or style (its build emits none). */
export const PORTAL_CSP = sameOriginCsp();

/** Headers set on every /portal response. */
export const PORTAL_HEADERS: Record<string, string> = { "content-security-policy": PORTAL_CSP, ...COMPANION_HEADERS };

/**
 * The CSP of /docs and its script: the portal's, plus inline styles (`'unsafe-inline'` in
 * `style-src` only). Scalar's bundle injects its stylesheet and per-component `<style>`
 * elements at run time and sets `style` attributes, so without it the page renders
 * unstyled; scripts stay `'self'` only (the page has no inline script: Scalar reads its
 * configuration from a JSON data block).
 */
export const DOCS_CSP = sameOriginCsp(["'unsafe-inline'"]);

/** Headers set on GET /docs and on the files under /docs/. */
export const DOCS_HEADERS: Record<string, string> = { "content-security-policy": DOCS_CSP, ...COMPANION_HEADERS };

/** Whether `pathname` belongs to the portal (`/portal`, `/portal/…`). */
export function isPortalPath(pathname: string): boolean {
  return pathname === PORTAL_PATH || pathname.startsWith(`${PORTAL_PATH}/`);
}
