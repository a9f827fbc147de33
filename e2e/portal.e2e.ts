/**
 * The webhook portal end to end (API.md § "Webhook portal: GET /portal"): an administrator's
 * session in Chromium against `wrangler dev` (seeded with the demo data,
 * WEBHOOK_ALLOW_INSECURE_URLS=true) and a local receiver on 127.0.0.1.
 *
 * The tests are the steps of one session, in order, sharing `state`; each step ends with the
 * page's checks (no CSP violation, no uncaught error) and runs axe-core on every view it
 * reaches. Controls are found by their accessible role and name, so a control without a
 * label fails the step that needs it.
 *
 * Environment: E2E_PORT (the dev server's port; default a free one), E2E_RECEIVER_PORT
 * (default a free one), CHROMIUM_PATH (default /usr/bin/chromium), PORTAL_SCREENSHOT (a PNG
 * path: the detail view after the test delivery is saved there; `npm run docs:screenshot`
 * writes docs/portal.png).
 */
import { mkdirSync, rmSync } from "node:fs";
import path from "node:path";
import type { Locator, Page } from "playwright-core";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { DEMO_API_KEY } from "../scripts/dataset/build";
import { type DevServer, startDevServer } from "../scripts/lib/dev-server";
import { applyMigrations, ROOT } from "../scripts/lib/wrangler";
import { seedDemo } from "../scripts/seed-demo";
import { PORTAL_CSP } from "../src/portal/headers";
import { axeViolations, launchBrowser, type PortalBrowser } from "./browser";
import { type Receiver, startReceiver, verifyDelivery } from "./receiver";

/** What the steps pass on to each other. */
const state: { id?: string; secret?: string; url?: string } = {};

let receiver: Receiver;
let server: DevServer;
let browser: PortalBrowser;
let page: Page;
const persistTo = path.join(ROOT, ".wrangler", `e2e-${process.pid}`);

/** Calls the API as the demo school (or with `key`), JSON in and out. */
async function api(method: string, apiPath: string, body?: unknown, key = DEMO_API_KEY): Promise<{ status: number; body: any }> {
  const res = await fetch(`${server.base}${apiPath}`, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, body: await res.json() };
}

/** axe-core on the current view: no serious or critical violation. */
async function expectAccessible(view: string): Promise<void> {
  expect(await axeViolations(page), `axe-core on the ${view} view`).toEqual([]);
}

/** Waits until the view titled `title` (its one h1) is shown. */
const view = (title: string) => page.getByRole("heading", { level: 1, name: title, exact: true }).waitFor();

/** Waits until `locator` is visible (playwright-core has no `expect`; it waits with `waitFor`). */
const shown = (locator: Locator, timeout = 10_000) => locator.waitFor({ state: "visible", timeout });

/** Waits until an element with this role shows `text`. */
const says = (role: "alert" | "status" | "dialog", text: string | RegExp) => shown(page.getByRole(role).filter({ hasText: text }).first());

/** Whether `locator` has the keyboard focus. */
const focused = (locator: Locator) => locator.evaluate((el) => el === document.activeElement);

/** Opens the detail view of the registration `id` from the list. */
async function openEndpoint(id: string): Promise<void> {
  await page.goto(`${server.base}/portal#/`);
  await page.locator(`a[href="#/webhooks/${id}"]`).click();
  await shown(page.getByRole("heading", { name: "Delivery log" }));
}

/** The delivery log's row of `eventId` once its status is `status` (the log polls by itself after a test). */
async function logRow(eventId: string, status: string) {
  const row = page.locator(`tr[data-event-id="${eventId}"][data-status="${status}"]`).first();
  await shown(row, 30_000);
  return row;
}

/**
 * The stats chart's totals for the period shown, by series ("Delivered", "Failed",
 * "Skipped"), read from its legend.
 */
async function chartTotals(): Promise<Record<string, number>> {
  const items = await page.locator(".legend li").allTextContents();
  return Object.fromEntries(items.map((t) => /^\s*(\w+): (\d+)/.exec(t)!).map((m) => [m[1]!, Number(m[2])]));
}

beforeAll(async () => {
  receiver = await startReceiver(Number(process.env.E2E_RECEIVER_PORT ?? 0));
  rmSync(persistTo, { recursive: true, force: true });
  mkdirSync(persistTo, { recursive: true });
  await applyMigrations("local", persistTo, { quiet: true });
  await seedDemo({ persistTo, skipMigrations: true, progress: false });
  server = await startDevServer({
    persistTo,
    port: process.env.E2E_PORT ? Number(process.env.E2E_PORT) : undefined,
    // Short retries, so that a failing receiver's deliveries reach `failed` within a step.
    vars: { WEBHOOK_ALLOW_INSECURE_URLS: "true", WEBHOOK_RETRY_SCHEDULE: "1,1,1" },
    quiet: true,
    timeoutMs: 120_000,
  });
  browser = await launchBrowser(server.base);
  page = browser.page;
});

afterEach(async () => {
  if (!browser) return;
  expect(await browser.cspViolations(), "CSP violations").toEqual([]);
  expect(browser.pageErrors, "uncaught errors in the page").toEqual([]);
});

afterAll(async () => {
  await browser?.close();
  await server?.stop();
  await receiver?.close();
  rmSync(persistTo, { recursive: true, force: true });
});

describe("the webhook portal, one administrator's session", () => {
  it("wrangler dev serves /portal with the CSP that allows only its own origin", async () => {
    const res = await fetch(`${server.base}/portal`);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-security-policy")).toBe(PORTAL_CSP);
    expect(await res.text()).toContain('<div id="app"></div>');
  });

  it("signs in with a pasted key: a refused key shows the API's message, the school's key opens the list", async () => {
    await page.goto(`${server.base}/portal`);
    await view("Sign in");
    await expectAccessible("sign-in");

    const refused = await api("GET", "/v3/webhooks", undefined, "sk_test_not_a_key");
    expect(refused.status).toBe(401);
    const keyField = page.getByLabel("API key");
    await keyField.fill("sk_test_not_a_key");
    await keyField.press("Enter");
    await says("alert", refused.body.message);
    expect(await page.getByRole("alert").count()).toBe(1);
    expect(await page.evaluate(() => sessionStorage.length)).toBe(0);

    await keyField.fill(DEMO_API_KEY);
    await keyField.press("Enter");
    await view("Webhook endpoints");
    await shown(page.getByText("No endpoint yet"));
    // The key is kept in this tab's sessionStorage, never in the URL.
    expect(await page.evaluate(() => Object.values(sessionStorage))).toEqual([DEMO_API_KEY]);
    expect(page.url()).not.toContain(DEMO_API_KEY);
    // The view's heading has the focus; Tab reaches the next control, whose focus is visible.
    await page.keyboard.press("Tab");
    const addLink = page.getByRole("link", { name: "Add endpoint" });
    expect(await focused(addLink)).toBe(true);
    expect(await addLink.evaluate((el) => getComputedStyle(el).outlineStyle)).not.toBe("none");
    await expectAccessible("list (empty)");
  });

  it("creates a registration: the API's refusal is shown as its message, then the secret is shown once and copied", async () => {
    await page.getByRole("link", { name: "Add endpoint" }).click();
    await view("Add an endpoint");
    await expectAccessible("create");

    const bad = { url: "ftp://example.com/hook", events: ["*"] };
    const refused = await api("POST", "/v3/webhooks", bad);
    expect(refused.status).toBe(400);
    await page.getByLabel("Endpoint URL").fill(bad.url);
    await page.getByRole("button", { name: "Create endpoint" }).click();
    await says("alert", refused.body.message);

    state.url = receiver.url("/portal-a");
    await page.getByLabel("Endpoint URL").fill(state.url);
    await page.getByLabel("Description (optional)").fill("ERP sync (e2e)");
    await page.getByRole("button", { name: "Create endpoint" }).click();
    await view("Endpoint created");
    const secretField = page.getByLabel("Signing secret", { exact: true });
    const displayed = await secretField.inputValue();
    expect(displayed).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    await expectAccessible("secret shown once");

    await page.getByRole("button", { name: "Copy secret" }).click();
    await says("status", "Secret copied to the clipboard.");
    state.secret = await page.evaluate(() => navigator.clipboard.readText());
    expect(state.secret).toBe(displayed);

    const list = await api("GET", "/v3/webhooks");
    expect(list.body.result).toHaveLength(1);
    expect(list.body.result[0]).toMatchObject({ url: state.url, description: "ERP sync (e2e)", events: ["*"] });
    expect(list.body.result[0].secret).toBeUndefined();
    state.id = list.body.result[0].id;

    await page.getByRole("link", { name: /open the endpoint/ }).click();
    await shown(page.getByRole("heading", { name: "Delivery log" }));
    // Shown once: the secret is nowhere on the next view.
    expect(await page.content()).not.toContain(displayed);
  });

  it("sends a test and sees it succeed in the delivery log, signed with the copied secret", async () => {
    await openEndpoint(state.id!);
    await shown(page.getByRole("heading", { level: 1 }).filter({ hasText: state.url! }));
    await page.getByRole("button", { name: "Send test event" }).click();
    const status = page.getByRole("status").filter({ hasText: /^Test event evt_\S+ queued/ });
    await shown(status);
    const eventId = /evt_[A-Za-z0-9_-]+/.exec((await status.textContent())!)![0];

    const row = await logRow(eventId, "succeeded");
    expect(await row.locator("td").nth(3).textContent()).toBe("204");
    const delivery = await receiver.waitFor((r) => r.path === "/portal-a" && r.headers["webhook-id"] === eventId);
    expect(verifyDelivery(delivery, state.secret!)).toMatchObject({ id: eventId, type: "webhook.test" });
    // The chart panel shows the stats, or — where the server lacks the endpoint — its message.
    const stats = await api("GET", `/v3/webhooks/${state.id}/stats`);
    if (stats.status === 200) {
      await shown(page.locator(".chart canvas"));
      await expect.poll(async () => (await chartTotals()).Delivered, { timeout: 15_000 }).toBeGreaterThanOrEqual(1);
    } else {
      await says("alert", stats.body.message);
    }
    await expectAccessible("endpoint detail");
    if (process.env.PORTAL_SCREENSHOT) await page.screenshot({ path: path.resolve(ROOT, process.env.PORTAL_SCREENSHOT), fullPage: true });
  });

  it("draws the stats chart from the contract's buckets, with the same numbers in a table", async () => {
    // The page's stats call is answered with contract-shaped buckets (API.md § "Delivery
    // statistics"), whatever the server offers: this checks the drawing, not the counting.
    const start = Date.UTC(2026, 10, 21, 0);
    const buckets = Array.from({ length: 24 }, (_, h) => ({
      start: new Date(start + h * 3_600_000).toISOString(),
      succeeded: h % 5,
      failed: h === 20 ? 3 : 0,
      pending: 0,
      skipped: h >= 22 ? 2 : 0,
    }));
    const sum = (k: "succeeded" | "failed" | "skipped") => buckets.reduce((n, b) => n + b[k], 0);
    await page.route("**/v3/webhooks/*/stats?*", (route) =>
      route.fulfill({ status: 200, contentType: "application/json; charset=utf-8", body: JSON.stringify({ status: "success", result: { buckets } }) }),
    );
    try {
      await openEndpoint(state.id!);
      await shown(page.locator(".chart canvas").first());
      expect(await chartTotals()).toEqual({ Delivered: sum("succeeded"), Failed: sum("failed"), Skipped: sum("skipped") });
      const chart = page.getByRole("img", { name: /Stacked bars per hour/ });
      expect(await chart.getAttribute("aria-label")).toContain(`${sum("failed")} failed`);
      await page.getByText("The numbers, per hour").click();
      const rows = page.locator("details tbody tr");
      expect(await rows.count()).toBe(24);
      expect(await rows.nth(20).locator("td").allTextContents()).toEqual(["0", "3", "0", "0"]);
      await expectAccessible("endpoint detail with the chart");
    } finally {
      await page.unroute("**/v3/webhooks/*/stats?*");
    }
  });

  it("opens the edit form and the rotation dialog, both accessible, and leaves them with Cancel and Escape", async () => {
    await page.getByRole("link", { name: "Edit" }).click();
    await view("Edit the endpoint");
    expect(await page.getByLabel("Endpoint URL").inputValue()).toBe(state.url);
    expect(await page.getByLabel("Description (optional)").inputValue()).toBe("ERP sync (e2e)");
    expect(await page.getByLabel("All event types, including those added later").isChecked()).toBe(true);
    await expectAccessible("edit");
    await page.getByRole("link", { name: "Cancel" }).click();

    await page.getByRole("button", { name: "Rotate secret…" }).click();
    const dialog = page.getByRole("dialog", { name: "Rotate the signing secret" });
    await shown(dialog);
    expect(await dialog.getByLabel(/Grace period/).inputValue()).toBe("86400");
    await expectAccessible("rotate dialog");
    await page.keyboard.press("Escape");
    await dialog.waitFor({ state: "hidden" });
  });

  it("deletes with a confirmation that states the promise, by keyboard, and nothing more arrives", async () => {
    // A second registration, made through the API, shows that events still flow.
    const control = await api("POST", "/v3/webhooks", { url: receiver.url("/control"), events: ["course.created"] });
    expect(control.status).toBe(201);

    await openEndpoint(state.id!);
    await page.getByRole("button", { name: "Delete…" }).click();
    const dialog = page.getByRole("dialog", { name: "Delete this endpoint?" });
    await shown(dialog);
    const promise = await dialog.textContent();
    expect(promise).toContain("no event accepted after the deletion is ever delivered to it");
    expect(promise).toContain("its pending retries are dropped, and no new delivery attempt to it starts");
    expect(promise).toContain("its id is never reused");
    await expectAccessible("delete confirmation");
    // The safe choice has the focus; the keyboard reaches the other.
    expect(await focused(dialog.getByRole("button", { name: "Cancel" }))).toBe(true);
    await page.keyboard.press("Shift+Tab");
    expect(await focused(dialog.getByRole("button", { name: "Delete permanently" }))).toBe(true);
    await page.keyboard.press("Enter");
    await view("Webhook endpoints");
    await says("status", "deleted");
    expect(await page.locator(`a[href="#/webhooks/${state.id}"]`).count()).toBe(0);
    const deletedAt = Date.now();

    const course = await api("POST", "/v3/courses", {
      name: "Portal e2e course",
      startDateTime: "2026-12-01T08:00:00.000Z",
      endDateTime: "2026-12-01T10:00:00.000Z",
    });
    expect(course.status).toBe(201);
    await receiver.waitFor((r) => r.path === "/control" && JSON.parse(r.body).data?.course?.id === course.body.result.id);
    // The control got the event. Had a delivery to the deleted registration been queued with
    // it, the same alarm would have sent it: give it time to (wrongly) arrive.
    await new Promise((r) => setTimeout(r, 2_000));
    expect(receiver.at("/portal-a").filter((r) => r.at >= deletedAt)).toEqual([]);
    expect((await api("GET", "/v3/webhooks")).body.result.map((w: { id: string }) => w.id)).not.toContain(state.id);
  });

  it("signs out: the key leaves the tab", async () => {
    await page.getByRole("button", { name: "Sign out" }).click();
    await view("Sign in");
    await says("status", "Signed out");
    expect(await page.evaluate(() => sessionStorage.length)).toBe(0);
    await page.reload();
    await view("Sign in");
    await expectAccessible("signed out");
  });

  it("a stored key the API refuses later (revoked) signs the tab out with the API's message", async () => {
    const refused = await api("GET", "/v3/webhooks", undefined, "sk_test_revoked_meanwhile");
    await page.evaluate(() => sessionStorage.setItem("webhook-portal.api-key", "sk_test_revoked_meanwhile"));
    await page.reload();
    await view("Sign in");
    await says("alert", refused.body.message);
    expect(await page.evaluate(() => sessionStorage.length)).toBe(0);
  });
});
