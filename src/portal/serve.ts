/**
 * The static files the Worker serves itself, each with its pages' security headers
 * (src/portal/headers.ts): GET /portal (docs/reference.md § "Webhook portal: GET /portal"),
 * built by scripts/portal-assets.ts into `dist/assets/portal/`, and the API reference's
 * script under /docs/ (scripts/docs-assets.ts; the /docs page is an operation,
 * src/openapi/operations.ts). wrangler.toml's `run_worker_first` sends these requests to the
 * Worker before the assets; the files are read through `ASSETS`. Why through the Worker and
 * not a `_headers` file: docs/architecture.md § The reference and the portal: served from
 * the Worker.
 */
import type { RequestContext } from "../http/context";
import { DOCS_ASSETS_PREFIX, DOCS_HEADERS, isPortalPath, PORTAL_HEADERS, PORTAL_PATH } from "./headers";

/**
 * Serves a GET or HEAD under /portal or /docs/ from the static assets with the headers of
 * its pages ({@link PORTAL_HEADERS}, {@link DOCS_HEADERS}), and `x-request-id` and
 * `Server-Timing` like every response of the Worker (docs/reference.md § Conventions). `/portal` and
 * `/portal/` are the portal's page (index.html); the hashed files under `/portal/assets/`
 * are cacheable for a year, anything else is revalidated on every load.
 *
 * @returns the response, or `null` when the request is not for these files (another method,
 *   another path, no such file): the API's router then answers (404 NOT_FOUND …).
 */
export async function serveStatic(request: Request, env: Env, rc: RequestContext): Promise<Response | null> {
  if (request.method !== "GET" && request.method !== "HEAD") return null;
  const url = new URL(request.url);
  const pageHeaders = isPortalPath(url.pathname) ? PORTAL_HEADERS : url.pathname.startsWith(DOCS_ASSETS_PREFIX) ? DOCS_HEADERS : null;
  if (!pageHeaders) return null;
  // The portal answers at /portal itself, without the assets' trailing-slash redirect.
  const assetUrl = new URL(url.pathname === PORTAL_PATH ? `${PORTAL_PATH}/` : url.pathname, url);
  const asset = await env.ASSETS.fetch(new Request(assetUrl, { method: request.method, headers: request.headers }));
  if (asset.status === 404) return null;
  const headers = new Headers(asset.headers);
  for (const [name, value] of Object.entries(pageHeaders)) headers.set(name, value);
  if (url.pathname.startsWith(`${PORTAL_PATH}/assets/`) && asset.status === 200) headers.set("cache-control", "public, max-age=31536000, immutable");
  else headers.set("cache-control", "no-cache");
  headers.set("x-request-id", rc.requestId);
  headers.set("server-timing", rc.serverTiming());
  return new Response(asset.body, { status: asset.status, statusText: asset.statusText, headers });
}
