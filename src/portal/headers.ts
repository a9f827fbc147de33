/**
 * The webhook portal's path and security headers (API.md § "Webhook portal: GET /portal"),
 * served by src/portal/serve.ts. This module has no imports, so the Node end-to-end tests can
 * read the policy they check.
 */

/** Path prefix of the portal. */
export const PORTAL_PATH = "/portal";

/**
 * The portal's Content-Security-Policy: scripts, styles, images, fonts and API calls from
 * this origin only; no inline script or style (the build emits none), no plugin, no frame,
 * no `<base>`, forms post only here.
 */
export const PORTAL_CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self'",
  "font-src 'self'",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join("; ");

/** Headers set on every /portal response (the CSP and its usual companions). */
export const PORTAL_HEADERS: Record<string, string> = {
  "content-security-policy": PORTAL_CSP,
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
  "x-frame-options": "DENY",
  "cross-origin-opener-policy": "same-origin",
  "permissions-policy": "camera=(), microphone=(), geolocation=(), payment=()",
};

/** Whether `pathname` belongs to the portal (`/portal`, `/portal/…`). */
export function isPortalPath(pathname: string): boolean {
  return pathname === PORTAL_PATH || pathname.startsWith(`${PORTAL_PATH}/`);
}
