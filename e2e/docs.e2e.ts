/**
 * GET /docs in Chromium against `wrangler dev`: Scalar's API Reference renders, and its
 * "Test Request" client sends a request, under the page's Content-Security-Policy
 * (src/portal/headers.ts `DOCS_CSP`) with no CSP violation and no uncaught error, and the
 * page asks nothing of another origin.
 *
 * Environment: E2E_PORT (the dev server's port; default a free one), CHROMIUM_PATH (default
 * /usr/bin/chromium), DOCS_SCREENSHOT (a PNG path: the rendered page is saved there).
 */
import { mkdirSync, rmSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type DevServer, startDevServer } from "../scripts/lib/dev-server";
import { ROOT } from "../scripts/lib/wrangler";
import { SCALAR_SCRIPT_PATH } from "../src/openapi/docs-page";
import { DOCS_CSP } from "../src/portal/headers";
import { launchBrowser, type PortalBrowser } from "./browser";

let server: DevServer;
let browser: PortalBrowser;
const persistTo = path.join(ROOT, ".wrangler", `e2e-docs-${process.pid}`);

beforeAll(async () => {
  rmSync(persistTo, { recursive: true, force: true });
  mkdirSync(persistTo, { recursive: true });
  server = await startDevServer({
    persistTo,
    port: process.env.E2E_PORT ? Number(process.env.E2E_PORT) : undefined,
    vars: { RATE_LIMIT_ENABLED: "false" },
    quiet: true,
    timeoutMs: 120_000,
  });
  browser = await launchBrowser(server.base);
});

afterAll(async () => {
  await browser?.close();
  await server?.stop();
  rmSync(persistTo, { recursive: true, force: true });
});

describe("GET /docs in a browser", () => {
  it("wrangler dev serves the page and its script with the docs' security headers", async () => {
    for (const url of ["/docs", SCALAR_SCRIPT_PATH]) {
      const res = await fetch(`${server.base}${url}`);
      expect(res.status, url).toBe(200);
      expect(res.headers.get("content-security-policy"), url).toBe(DOCS_CSP);
      expect([res.headers.get("x-content-type-options"), res.headers.get("referrer-policy")], url).toEqual(["nosniff", "no-referrer"]);
      await res.arrayBuffer();
    }
  });

  it("renders the reference and sends a test request under its CSP: no violation, no uncaught error, nothing from another origin", async () => {
    const { page } = browser;
    const requested: string[] = [];
    page.on("request", (r) => requested.push(r.url()));
    const { info } = (await (await fetch(`${server.base}/openapi.json`)).json()) as { info: { title: string } };
    await page.goto(`${server.base}/docs`);
    await page.getByRole("heading", { name: info.title }).first().waitFor({ state: "visible", timeout: 30_000 });
    await page.getByText("List the school's courses").first().waitFor({ state: "visible", timeout: 30_000 });
    // Styled, not a bare page: Scalar's stylesheet applied (its sidebar is laid out beside the content).
    const sidebar = await page.locator(".t-doc__sidebar, aside, nav").first().boundingBox();
    expect(sidebar?.width ?? 0).toBeGreaterThan(100);
    if (process.env.DOCS_SCREENSHOT) await page.screenshot({ path: process.env.DOCS_SCREENSHOT });
    // "Test Request" under the same policy: the client opens and calls this server (no key: 401).
    await page.getByText("List the school's courses").first().click();
    await page
      .getByRole("button", { name: /Test Request/ })
      .first()
      .click();
    await page.getByRole("button", { name: /Send/ }).first().click();
    await page.getByText("401 Unauthorized").first().waitFor({ state: "visible", timeout: 30_000 });
    expect(await browser.cspViolations(), "CSP violations").toEqual([]);
    expect(browser.pageErrors, "uncaught errors in the page").toEqual([]);
    expect(requested.filter((u) => !u.startsWith(`${server.base}/`) && !/^(data|blob):/.test(u))).toEqual([]);
  });
});
