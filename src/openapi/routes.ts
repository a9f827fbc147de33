/**
 * The reference routes, without authentication: GET /openapi.json (the generated OpenAPI 3.1
 * document) and GET /docs (Scalar's interactive reference, served by this Worker; its
 * script is a static asset, see src/openapi/docs-page.ts).
 *
 * The document is generated once per isolate (`openApiDocument`); its JSON is cached per
 * origin, since `servers` names the origin the document is fetched from, so that "Test
 * Request" in /docs calls the same server.
 */
import type { IRequest } from "itty-router";
import type { Env } from "../env";
import type { RequestContext } from "../http/context";
import { docsPageHtml } from "./docs-page";
import { openApiDocument } from "./document";

const serialized = new Map<string, string>();
/** Distinct origins whose JSON is kept (a Worker sees one or two; the bound stops abuse). */
const MAX_CACHED_ORIGINS = 8;

/** The document as JSON with `servers: [{ url: origin }]` (cached per origin). */
export function openApiJson(origin: string): string {
  let text = serialized.get(origin);
  if (text === undefined) {
    text = JSON.stringify({ ...openApiDocument(), servers: [{ url: origin, description: "This server" }] });
    if (serialized.size >= MAX_CACHED_ORIGINS) serialized.clear();
    serialized.set(origin, text);
  }
  return text;
}

/** GET /openapi.json → 200 `application/json; charset=utf-8` (no authentication; the query string is ignored). */
export async function getOpenApi(req: IRequest, _env: Env, _exec: ExecutionContext, _rc: RequestContext): Promise<Response> {
  return new Response(openApiJson(new URL(req.url).origin), {
    headers: { "content-type": "application/json; charset=utf-8", "cache-control": "no-cache" },
  });
}

let page: string | undefined;

/** GET /docs → 200 `text/html; charset=utf-8` (no authentication; the query string is ignored). */
export async function getDocs(_req: IRequest, _env: Env, _exec: ExecutionContext, _rc: RequestContext): Promise<Response> {
  page ??= docsPageHtml(openApiDocument().info.title as string);
  return new Response(page, { headers: { "content-type": "text/html; charset=utf-8", "cache-control": "no-cache" } });
}
