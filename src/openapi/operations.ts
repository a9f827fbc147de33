/**
 * The reference operations, without authentication: GET / (a redirect to /docs), GET /openapi.json (the generated
 * OpenAPI 3.1 document) and GET /docs (Scalar's interactive reference, served by this
 * Worker; its script is a static asset, see src/openapi/docs-page.ts).
 *
 * The document's JSON is cached per origin, since `servers` names the origin the document is
 * fetched from, so that "Test Request" in /docs calls the same server.
 */
import type { Operation } from "../http/operation";
import { docsPageHtml } from "./docs-page";
import { API_TITLE, API_VERSION, type OpenApiDocument } from "./document";

/** Distinct origins whose JSON is kept (a Worker sees one or two; the bound stops abuse). */
const MAX_CACHED_ORIGINS = 8;

const TAG = { name: "Reference", description: "This document and its interactive reference." };

/**
 * The reference operations.
 *
 * @param document the document of every operation (built once per isolate; not mutated here).
 * @param pageHeaders the security headers of the /docs page (its CSP and companions), owned by
 *   src/portal/headers.ts with the portal's (injected by src/api.ts: that layer sits above this one).
 */
export function referenceOperations<E>(document: () => OpenApiDocument, pageHeaders: Record<string, string>): Operation<E>[] {
  const serialized = new Map<string, string>();
  /** The document as JSON with `servers: [{ url: origin }]` (cached per origin). */
  const documentJson = (origin: string): string => {
    let text = serialized.get(origin);
    if (text === undefined) {
      text = JSON.stringify({ ...document(), servers: [{ url: origin, description: "This server" }] });
      if (serialized.size >= MAX_CACHED_ORIGINS) serialized.clear();
      serialized.set(origin, text);
    }
    return text;
  };
  let page: string | undefined;
  const headers = (type: string) => ({ "content-type": `${type}; charset=utf-8`, "cache-control": "no-cache" });
  /** Unlike the API's answers (`no-store`), these public pages may be cached once revalidated. */
  const noCache = {
    "Cache-Control": {
      description: "`no-cache`: a cache revalidates before reuse.",
      required: true,
      schema: { type: "string", enum: ["no-cache"] },
      example: "no-cache",
    },
  };
  return [
    {
      method: "GET",
      path: "/",
      operationId: "getRoot",
      scopes: [],
      tag: TAG,
      summary: "Redirect to the interactive reference",
      description: "The root has no content of its own: it redirects to `/docs`. No authentication.",
      public: true,
      responses: {
        302: {
          description: "Redirect to `/docs` (no body).",
          headers: {
            location: { description: "`/docs`.", required: true, schema: { type: "string", enum: ["/docs"] }, example: "/docs" },
            ...noCache,
          },
        },
      },
      /** 302 to /docs, no body (the query string is ignored). */
      async handler() {
        return new Response(null, { status: 302, headers: { location: "/docs", "cache-control": "no-cache" } });
      },
    },
    {
      method: "GET",
      path: "/openapi.json",
      operationId: "getOpenApiDocument",
      scopes: [],
      tag: TAG,
      summary: "This OpenAPI document",
      description:
        "The OpenAPI 3.1 document, generated from the zod schemas the service validates with. No authentication. `servers` names the origin the document was fetched from.",
      public: true,
      responses: {
        200: {
          description: "The document.",
          schema: { type: "object", description: "An OpenAPI 3.1 document." },
          example: { openapi: "3.1.0", info: { title: API_TITLE, version: API_VERSION } },
          headers: noCache,
        },
      },
      /** 200 `application/json; charset=utf-8` (the query string is ignored). */
      async handler(req) {
        return new Response(documentJson(new URL(req.url).origin), { headers: headers("application/json") });
      },
    },
    {
      method: "GET",
      path: "/docs",
      operationId: "getApiReference",
      scopes: [],
      tag: TAG,
      summary: "Interactive API reference",
      description:
        "An HTML page (Scalar API Reference, served by this Worker) that renders this document and sends requests to this server. No authentication. Served with a Content-Security-Policy that allows nothing from another origin (inline styles only, for Scalar), `frame-ancestors 'none'`, `X-Content-Type-Options: nosniff` and `Referrer-Policy: no-referrer`.",
      public: true,
      responses: {
        200: { description: "The page.", mediaType: "text/html", schema: { type: "string" }, example: "<!doctype html>…", headers: noCache },
      },
      /** 200 `text/html; charset=utf-8` with `pageHeaders` (the query string is ignored). */
      async handler() {
        page ??= docsPageHtml(document().info.title);
        return new Response(page, { headers: { ...headers("text/html"), ...pageHeaders } });
      },
    },
  ];
}
