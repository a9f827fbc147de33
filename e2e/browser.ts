/**
 * The browser of the end-to-end tests: Debian's Chromium (`/usr/bin/chromium`, or
 * CHROMIUM_PATH) driven by playwright-core, headless, with a fresh profile, plus the checks
 * every test makes on the page — axe-core (no serious or critical violation) and no
 * Content-Security-Policy violation or uncaught error.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import axe from "axe-core";
import { type BrowserContext, chromium, type Page } from "playwright-core";

/** The Chromium binary: Debian's package (`.ci/run` installs it when missing). */
const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";

/**
 * Flags that work in this sandboxed machine and keep Chromium off the network (no update
 * checks, no sync, no QUIC probing). Playwright adds `--headless` and the profile directory.
 */
const FLAGS = [
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

/** A browser with one page, and what that page reported. */
export interface PortalBrowser {
  context: BrowserContext;
  page: Page;
  /** CSP violations seen by the page (`securitypolicyviolation` events), as text. */
  cspViolations(): Promise<string[]>;
  /** Uncaught exceptions of the page. */
  pageErrors: string[];
  close(): Promise<void>;
}

/**
 * Launches Chromium with a fresh profile directory (removed by `close`), clipboard access
 * granted for `origin`, a 1280×800 viewport and an English locale (`locale`, default en-GB).
 */
export async function launchBrowser(origin: string, locale = "en-GB"): Promise<PortalBrowser> {
  const profile = mkdtempSync(path.join(tmpdir(), "portal-e2e-chromium-"));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: FLAGS,
    viewport: { width: 1280, height: 800 },
    locale,
    timezoneId: "Europe/Paris",
    permissions: ["clipboard-read", "clipboard-write"],
  });
  await context.grantPermissions(["clipboard-read", "clipboard-write"], { origin });
  // Recorded from the first document on (an init script is not subject to the page's CSP).
  await context.addInitScript(() => {
    const w = window as unknown as { __csp: string[] };
    w.__csp = [];
    document.addEventListener("securitypolicyviolation", (e) =>
      w.__csp.push(`${e.violatedDirective} blocked ${e.blockedURI || "inline"} (${e.sourceFile}:${e.lineNumber})`),
    );
  });
  const page = context.pages()[0] ?? (await context.newPage());
  const pageErrors: string[] = [];
  page.on("pageerror", (err) => pageErrors.push(err.message));
  page.on("console", (msg) => {
    if (msg.type() === "error" && /Content Security Policy/i.test(msg.text())) pageErrors.push(msg.text());
  });
  return {
    context,
    page,
    pageErrors,
    cspViolations: () => page.evaluate(() => (window as unknown as { __csp?: string[] }).__csp ?? []),
    async close() {
      await context.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}

/**
 * Runs axe-core on the page as it is (injected through the DevTools protocol, so the page's
 * CSP does not apply to it) and returns the serious and critical violations, one line each:
 * rule, impact, help and the offending elements.
 */
export async function axeViolations(page: Page): Promise<string[]> {
  if (!(await page.evaluate(() => "axe" in window))) await page.evaluate(axe.source);
  const results = await page.evaluate(() => (window as unknown as { axe: typeof axe }).axe.run(document, { resultTypes: ["violations"] }));
  return results.violations
    .filter((v) => v.impact === "serious" || v.impact === "critical")
    .map((v) => `${v.id} (${v.impact}): ${v.help} — ${v.nodes.map((n) => n.target.join(" ")).join(", ")}`);
}
