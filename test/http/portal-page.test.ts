/**
 * GET /portal (docs/reference.md § "Webhook portal: GET /portal"): the page and its files are served by
 * the Worker from its static assets, with a Content-Security-Policy that allows only the
 * Worker's own origin, and the built page itself needs nothing else (no inline script or
 * style, no absolute URL). The portal's behaviour in a browser is tested by `npm run test:e2e`.
 */
import { exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { PORTAL_CSP } from "../../src/portal/headers";
import { BASE, callJson } from "../support/helpers";

const get = (path: string, init: RequestInit = {}) => exports.default.fetch(new Request(`${BASE}${path}`, init));

/** The CSP's directives as a map: `default-src` → `["'self'"]`. */
const directives = (csp: string) =>
  new Map(
    csp
      .split(";")
      .map((d) => d.trim().split(/\s+/))
      .map(([name, ...values]) => [name!, values]),
  );

/** The page's script and stylesheet URLs. */
const assetsOf = (html: string) => [...html.matchAll(/<(?:script|link)\b[^>]*\b(?:src|href)="([^"]+)"/g)].map((m) => m[1]!);

describe("GET /portal", () => {
  it("answers 200 with the page and a CSP that allows only this origin", async () => {
    const res = await get("/portal");
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^text\/html/);
    const csp = res.headers.get("content-security-policy");
    expect(csp).toBe(PORTAL_CSP);
    const d = directives(csp!);
    expect(d.get("default-src")).toEqual(["'self'"]);
    for (const name of ["script-src", "style-src", "connect-src", "img-src", "font-src"]) expect(d.get(name), name).toEqual(["'self'"]);
    expect(d.get("object-src")).toEqual(["'none'"]);
    expect(d.get("frame-ancestors")).toEqual(["'none'"]);
    // Nothing else is allowed anywhere: no host, scheme, wildcard, 'unsafe-*', data: or nonce.
    for (const [, values] of d) for (const v of values) expect(["'self'", "'none'"]).toContain(v);
    expect(res.headers.get("x-content-type-options")).toBe("nosniff");
    expect(res.headers.get("referrer-policy")).toBe("no-referrer");
    expect(res.headers.get("cache-control")).toBe("no-cache");
    expect(res.headers.get("x-request-id")).toMatch(/^req_/);
    expect(res.headers.get("server-timing")).toMatch(/total;dur=[\d.]+/);
    const html = await res.text();
    expect(html).toContain('<div id="app"></div>');
  });

  it("serves the same page at /portal/, without a redirect", async () => {
    const [a, b] = await Promise.all([get("/portal"), get("/portal/")]);
    expect(b.status).toBe(200);
    expect(b.headers.get("content-security-policy")).toBe(PORTAL_CSP);
    expect(await b.text()).toBe(await a.text());
  });

  it("the built page has no inline script or style and loads only its own files, each served with the CSP", async () => {
    const html = await (await get("/portal")).text();
    // Every <script> has a src (the CSP forbids inline code); no style attribute or <style>.
    for (const tag of html.match(/<script\b[^>]*>/g) ?? []) expect(tag).toMatch(/\bsrc="/);
    expect(html).not.toMatch(/<style\b|\sstyle="|\son[a-z]+="/i);
    expect(html).not.toMatch(/(src|href)="(https?:|data:)?\/\//);
    const urls = assetsOf(html);
    expect(urls.some((u) => /^\/portal\/assets\/[\w-]+\.js$/.test(u))).toBe(true);
    expect(urls.some((u) => /^\/portal\/assets\/[\w-]+\.css$/.test(u))).toBe(true);
    for (const url of urls) {
      const res = await get(url);
      expect(res.status, url).toBe(200);
      expect(res.headers.get("content-security-policy"), url).toBe(PORTAL_CSP);
      expect(res.headers.get("x-content-type-options"), url).toBe("nosniff");
      await res.arrayBuffer();
    }
    const js = await get(urls.find((u) => u.endsWith(".js"))!);
    expect(js.headers.get("content-type")).toMatch(/javascript/);
    expect(js.headers.get("cache-control")).toBe("public, max-age=31536000, immutable");
    // The bundle calls the API by relative paths only (same origin).
    expect(await js.text()).not.toMatch(/https?:\/\/(?!www\.w3\.org)[\w.-]+\.[a-z]{2,}\/v3/);
  });

  it("an unknown file under /portal is the API's 404 NOT_FOUND, another method its 404 too", async () => {
    const missing = await callJson("/portal/nope.js");
    expect(missing.status).toBe(404);
    expect(missing.body.code).toBe("NOT_FOUND");
    const post = await get("/portal", { method: "POST" });
    expect(post.status).toBe(404);
    expect(((await post.json()) as { code: string }).code).toBe("NOT_FOUND");
  });

  it("answers HEAD with the headers and no body", async () => {
    const res = await get("/portal", { method: "HEAD" });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-security-policy")).toBe(PORTAL_CSP);
    expect(await res.text()).toBe("");
  });
});
