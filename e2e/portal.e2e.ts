/**
 * The webhook portal end to end (docs/reference.md § "Webhook portal: GET /portal", § "Portal
 * sessions: POST /v3/portal-sessions · DELETE /v3/portal-sessions"): an administrator's
 * session in Chromium against `wrangler dev` (demo data, insecure URLs allowed) and a local
 * receiver, signed in with the pasted key; then portal links: sign-in by link (redeemed: a
 * link opens once), the school's name, another school's link (asked before switching),
 * read-only, expiry, revoke-all.
 *
 * The tests are the steps of one session, in order, sharing `state`; each step ends with the
 * page's checks (no CSP violation, no uncaught error) and axe-core on every view it reaches.
 * Environment variables and the screenshot: docs/development.md § End to end.
 */
import { createHash } from "node:crypto";
import { rmSync } from "node:fs";
import path from "node:path";
import type { Locator, Page } from "playwright-core";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { DEMO_API_KEY, OTHER_API_KEY } from "../scripts/dataset/build";
import { type DevServer, startDevServer } from "../scripts/lib/dev-server";
import { migratedState } from "../scripts/lib/selftest";
import { verifyV1a } from "../scripts/lib/webhook-signatures";
import { d1Query, ROOT } from "../scripts/lib/wrangler";
import { seedDemo } from "../scripts/seed-demo";
import { PORTAL_CSP } from "../src/portal/headers";
import { axeViolations, launchBrowser, type PortalBrowser } from "./browser";
import { type Receiver, startReceiver, verifyDelivery } from "./receiver";

/** What the steps pass on to each other. */
const state: {
  id?: string;
  secret?: string;
  url?: string;
  /** The receiver's path the registration points at (it changes with the edit step). */
  path: string;
  /** When the receiver began to fail (ms). */
  failureBegan?: number;
  /** The event whose delivery failed during the outage, and the one skipped while disabled. */
  failedEvent?: string;
  skippedEvent?: string;
  /** A second registration (course.created and course.updated, /control) that shows events still flow. */
  controlId?: string;
  /** The registration with a filter, a custom header and a throttle (/filtered), its URL and secret, and the training it filters on. */
  filteredId?: string;
  filteredUrl?: string;
  filteredSecret?: string;
  trainingId?: string;
} = { path: "/portal-a" };

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

/** Presses "Send test event" and returns the event id the page announces. */
async function sendTest(): Promise<string> {
  await page.getByRole("button", { name: "Send test event" }).click();
  const status = page.getByRole("status").filter({ hasText: /^Test event evt_\S+ queued/ });
  await shown(status);
  return /evt_[A-Za-z0-9_-]+/.exec((await status.textContent())!)![0];
}

/** The delivery log's row of `eventId` once its status is `status` (the log polls by itself after a test). */
async function logRow(eventId: string, status: string) {
  const row = page.locator(`tr[data-event-id="${eventId}"][data-status="${status}"]`).first();
  await shown(row, 30_000);
  return row;
}

/** A cell of a log row by its column (`data-col`: trigger, response, duration, error, …), or an element in it. */
const cell = (row: Locator, col: string, inner?: string) => row.locator(`td[data-col="${col}"]${inner ? ` ${inner}` : ""}`);

/**
 * The stats chart's totals for the period shown, by series ("Succeeded", "Failed",
 * "Skipped"), read from its legend.
 */
async function chartTotals(): Promise<Record<string, number>> {
  const items = await page.locator(".legend li").allTextContents();
  return Object.fromEntries(items.map((t) => /^\s*(\w+): (\d+)/.exec(t)!).map((m) => [m[1]!, Number(m[2])]));
}

/**
 * Clicks the log's Refresh until `locator` shows (the log polls by itself only for a test
 * event; deliveries of course events appear on a reload).
 */
async function refreshUntil(locator: Locator, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    await page.getByRole("button", { name: "Refresh", exact: true }).click();
    try {
      await locator.first().waitFor({ state: "visible", timeout: 1_000 });
      return;
    } catch (err) {
      if (Date.now() > deadline) throw err;
    }
  }
}

/** A course created through the API; returns its id (its `course.created` event follows). */
async function createCourse(name: string): Promise<string> {
  const res = await api("POST", "/v3/courses", { name, startDateTime: "2026-12-01T08:00:00.000Z", endDateTime: "2026-12-01T10:00:00.000Z" });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body.result.id;
}

/** The first request the receiver got on `path` about course `courseId`. */
const courseDelivery = (path: string, courseId: string) => receiver.waitFor((r) => r.path === path && JSON.parse(r.body).data?.course?.id === courseId);

/** `ms` as the value of a datetime-local field, in the browser's time zone. */
const localInput = (ms: number) =>
  page.evaluate((t) => {
    const d = new Date(t);
    const p = (n: number) => String(n).padStart(2, "0");
    return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())}T${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`;
  }, ms);

/** How many pixels of the chart's canvas have the colour `hex` (`#rrggbb`): a series is drawn. */
const chartPixels = (hex: string) =>
  page
    .locator(".chart canvas")
    .first()
    .evaluate(
      (canvas: HTMLCanvasElement, rgb) => {
        const { data } = canvas.getContext("2d")!.getImageData(0, 0, canvas.width, canvas.height);
        let n = 0;
        for (let i = 0; i < data.length; i += 4) if (data[i] === rgb[0] && data[i + 1] === rgb[1] && data[i + 2] === rgb[2]) n++;
        return n;
      },
      [1, 3, 5].map((i) => Number.parseInt(hex.slice(i, i + 2), 16)),
    );

/** The log's rows shown on this page, as `{ eventId, status }`. */
const logRows = () =>
  page
    .locator("table.log tbody tr")
    .evaluateAll((rows) => rows.map((r) => ({ eventId: r.getAttribute("data-event-id"), status: r.getAttribute("data-status") })));

beforeAll(async () => {
  receiver = await startReceiver(Number(process.env.E2E_RECEIVER_PORT ?? 0));
  rmSync(persistTo, { recursive: true, force: true });
  // A copy of the migrated state the self-tests share (built here when `npm test` did not).
  await migratedState(persistTo);
  await seedDemo({ persistTo, skipMigrations: true, progress: false });
  server = await startDevServer({
    persistTo,
    port: process.env.E2E_PORT ? Number(process.env.E2E_PORT) : undefined,
    // Short retries, so that a failing receiver's deliveries reach `failed` within a step.
    vars: { WEBHOOK_ALLOW_INSECURE_URLS: "true", WEBHOOK_RETRY_SCHEDULE: "1,1,1", RATE_LIMIT_ENABLED: "false" },
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
    // The key is kept in this tab's sessionStorage (with its school, named in the header), never in the URL.
    expect(await page.evaluate(() => sessionStorage.getItem("webhook-portal.credential"))).toBe(DEMO_API_KEY);
    expect(await page.evaluate(() => Object.values(sessionStorage).filter((v) => v.includes("sk_")))).toEqual([DEMO_API_KEY]);
    await shown(page.locator("#school-name"));
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
    const eventId = await sendTest();

    const row = await logRow(eventId, "succeeded");
    expect(await cell(row, "response", ".response-status").textContent()).toBe("204");
    expect(await cell(row, "trigger").textContent()).toBe("test");
    const delivery = await receiver.waitFor((r) => r.path === "/portal-a" && r.headers["webhook-id"] === eventId);
    expect(verifyDelivery(delivery, state.secret!)).toMatchObject({ id: eventId, type: "webhook.test" });
    // The chart panel shows the stats, the delivery counted.
    expect((await api("GET", `/v3/webhooks/${state.id}/stats`)).status).toBe(200);
    await shown(page.locator(".chart canvas").first());
    await expect.poll(async () => (await chartTotals()).Succeeded, { timeout: 15_000 }).toBeGreaterThanOrEqual(1);
    await expectAccessible("endpoint detail");
  });

  it("draws the stats chart from the contract's buckets, with the same numbers in a table", async () => {
    // The page's stats call is answered with contract-shaped buckets (docs/reference.md § "Delivery
    // statistics"), whatever the server offers: this checks the drawing, not the counting.
    const start = Date.UTC(2026, 10, 21, 0);
    const buckets = Array.from({ length: 24 }, (_, h) => ({
      start: new Date(start + h * 3_600_000).toISOString(),
      succeeded: h % 5,
      failed: h === 20 ? 3 : 0,
      pending: 0,
      skipped: h >= 22 ? 2 : 0,
      delayMs: h % 5 > 0 ? { p50: 100 * h, p95: 200 * h, p99: 300 * h } : null,
      durationMs: h % 5 > 0 ? { p50: 10 * h, p95: 20 * h, p99: 30 * h } : null,
    }));
    const sum = (k: "succeeded" | "failed" | "skipped") => buckets.reduce((n, b) => n + b[k], 0);
    await page.route("**/v3/webhooks/*/stats?*", (route) =>
      route.fulfill({ status: 200, contentType: "application/json; charset=utf-8", body: JSON.stringify({ status: "success", result: { buckets } }) }),
    );
    try {
      await openEndpoint(state.id!);
      await shown(page.locator(".chart canvas").first());
      expect(await chartTotals()).toEqual({ Succeeded: sum("succeeded"), Failed: sum("failed"), Skipped: sum("skipped") });
      const chart = page.getByRole("img", { name: /Stacked bars per hour/ });
      expect(await chart.getAttribute("aria-label")).toContain(`${sum("failed")} failed`);
      await page.getByText("The numbers, per hour").click();
      const rows = page.locator("details tbody tr");
      expect(await rows.count()).toBe(24);
      expect(await rows.nth(20).locator("td").allTextContents()).toEqual(["0", "3", "0", "0", "–", "–", "–"]);
      // The delay's percentiles: drawn as lines, and in the table.
      await shown(page.locator(".chart-delay canvas").first());
      expect(await rows.nth(21).locator("td").allTextContents()).toEqual(["1", "0", "0", "0", "2100 ms", "4200 ms", "6300 ms"]);
      expect(
        await rows
          .nth(24 - 1)
          .locator("td")
          .allTextContents(),
      ).toEqual(["3", "0", "2", "0", "2300 ms", "4600 ms", "6900 ms"]);
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

  it("the receiver fails: the failure shows in the log with its status code, and the chart's Failed count moves", async () => {
    await openEndpoint(state.id!);
    await shown(page.locator(".chart canvas").first());
    const before = await chartTotals();
    receiver.fail(503, state.path);
    state.failureBegan = Date.now();
    const courseId = await createCourse("Portal e2e outage");
    state.failedEvent = (await courseDelivery(state.path, courseId)).headers["webhook-id"] as string;
    // WEBHOOK_RETRY_SCHEDULE=1,1,1: the immediate attempt and three retries, each logged
    // `failed`; the three a retry followed say when it was due, the last (newest) none.
    const rows = page.locator(`tr[data-event-id="${state.failedEvent}"][data-status="failed"]`);
    await refreshUntil(rows.nth(3));
    expect(await rows.count()).toBe(4);
    expect(await cell(rows.first(), "response", ".response-status").textContent()).toBe("503");
    expect(await cell(rows.first(), "next").textContent()).toBe("—");
    expect(await cell(rows.nth(1), "next").textContent()).not.toBe("—");
    expect(receiver.at(state.path).filter((r) => r.headers["webhook-id"] === state.failedEvent)).toHaveLength(4);
    // Every failed attempt counts, the retried ones too (docs/reference.md § "Delivery statistics").
    await expect.poll(async () => (await chartTotals()).Failed, { timeout: 15_000 }).toBe((before.Failed ?? 0) + 4);
    expect(await page.getByRole("img", { name: /Stacked bars per hour/ }).getAttribute("aria-label")).toContain(`${(before.Failed ?? 0) + 4} failed`);
    // The newest hour's bar is drawn, in the Failed series' colour (StatsChart.tsx).
    await expect.poll(() => chartPixels("#c62828")).toBeGreaterThan(0);
    await expectAccessible("endpoint detail after failures");
  });

  it("disables: the badge says so, an event accepted meanwhile is logged skipped, a test is refused with the API's message; then enables", async () => {
    await page.getByRole("button", { name: "Disable", exact: true }).click();
    await says("status", "Endpoint disabled");
    await shown(page.getByText("Disabled (manually)"));
    const courseId = await createCourse("Portal e2e while disabled");
    await expect.poll(async () => (await api("GET", `/v3/webhooks/${state.id}/deliveries?status=skipped`)).body.result.length, { timeout: 15_000 }).toBe(1);
    state.skippedEvent = (await api("GET", `/v3/webhooks/${state.id}/deliveries?status=skipped`)).body.result[0].eventId;
    const row = page.locator(`tr[data-event-id="${state.skippedEvent}"][data-status="skipped"]`);
    await refreshUntil(row);
    expect(await cell(row, "error").textContent()).toBe("registration disabled");
    // Nothing was sent: no duration.
    expect(await cell(row, "duration").textContent()).toBe("—");
    await expect.poll(async () => (await chartTotals()).Skipped, { timeout: 15_000 }).toBeGreaterThanOrEqual(1);

    const refused = await api("POST", `/v3/webhooks/${state.id}/test`);
    expect([refused.status, refused.body.code]).toEqual([409, "WEBHOOK_DISABLED"]);
    await page.getByRole("button", { name: "Send test event" }).click();
    await says("alert", refused.body.message);
    await expectAccessible("endpoint detail, disabled");

    await page.getByRole("button", { name: "Enable", exact: true }).click();
    await says("status", "Endpoint enabled");
    await shown(page.locator(".badge").filter({ hasText: /^Enabled$/ }));
    expect(receiver.at(state.path).filter((r) => JSON.parse(r.body).data?.course?.id === courseId)).toEqual([]);
  });

  it("recovers since the failure began: the failed and the skipped events arrive, signed, and the log shows them delivered", async () => {
    receiver.fail(null, state.path);
    const recover = page.getByRole("region", { name: "Recover after an outage" });
    await recover.getByLabel("Since").fill(await localInput(state.failureBegan! - 1_000));
    await recover.getByRole("button", { name: "Recover" }).click();
    // The failed and the skipped event, and the webhook.events_missed notice the enable sent for
    // the skipped one (docs/reference.md § Missed events), which the failing receiver refused.
    await says("status", "3 events queued again, in the order they were accepted.");
    for (const eventId of [state.failedEvent!, state.skippedEvent!]) {
      const delivery = await receiver.waitFor((r) => r.path === state.path && r.headers["webhook-id"] === eventId && r.answered === 204);
      expect(verifyDelivery(delivery, state.secret!).id).toBe(eventId);
    }
    await refreshUntil(page.locator(`tr[data-event-id="${state.skippedEvent}"][data-status="succeeded"]`));
    await shown(page.locator(`tr[data-event-id="${state.failedEvent}"][data-status="succeeded"]`));
    await expect.poll(async () => (await chartTotals()).Succeeded, { timeout: 15_000 }).toBeGreaterThanOrEqual(3);
    await expectAccessible("endpoint detail after the recovery");
    if (process.env.PORTAL_SCREENSHOT) await page.screenshot({ path: path.resolve(ROOT, process.env.PORTAL_SCREENSHOT), fullPage: true });
  });

  it("rotates: the new secret is shown once, and both signatures of the next delivery verify at the receiver", async () => {
    await page.getByRole("button", { name: "Rotate secret…" }).click();
    const dialog = page.getByRole("dialog", { name: "Rotate the signing secret" });
    await dialog.getByRole("button", { name: "Rotate secret", exact: true }).click();
    const secretField = dialog.getByLabel("Signing secret", { exact: true });
    await shown(secretField);
    const fresh = await secretField.inputValue();
    expect(fresh).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(fresh).not.toBe(state.secret);
    await expectAccessible("new secret shown once");
    await dialog.getByRole("button", { name: "Done" }).click();
    await dialog.waitFor({ state: "hidden" });
    expect(await page.content()).not.toContain(fresh);

    const eventId = await sendTest();
    await logRow(eventId, "succeeded");
    const delivery = await receiver.waitFor((r) => r.headers["webhook-id"] === eventId);
    expect(String(delivery.headers["webhook-signature"]).split(" ")).toHaveLength(2);
    expect(verifyDelivery(delivery, fresh).id).toBe(eventId);
    expect(verifyDelivery(delivery, state.secret!).id).toBe(eventId);
    expect(() => verifyDelivery(delivery, `whsec_${Buffer.alloc(32, 7).toString("base64")}`)).toThrow();
    state.secret = fresh;
  });

  it("edits the URL and the event types, resends one delivery, and filters and pages the log", async () => {
    const control = await api("POST", "/v3/webhooks", { url: receiver.url("/control"), events: ["course.created", "course.updated"] });
    expect(control.status).toBe(201);
    state.controlId = control.body.result.id;

    await page.getByRole("link", { name: "Edit" }).click();
    await view("Edit the endpoint");
    state.path = "/portal-b";
    state.url = receiver.url(state.path);
    await page.getByLabel("Endpoint URL").fill(state.url);
    await page.getByLabel("Only the event types ticked below").check();
    // A test reaches the endpoint whatever is ticked: the form does not offer to subscribe to it.
    expect(await page.getByRole("checkbox", { name: /^webhook\.test/ }).count()).toBe(0);
    await page.getByRole("checkbox", { name: /^course\.updated/ }).check();
    await expectAccessible("edit, event types ticked");
    await page.getByRole("button", { name: "Save changes" }).click();
    await says("status", "Changes saved.");
    await shown(page.getByRole("heading", { level: 1 }).filter({ hasText: state.url }));
    expect((await api("GET", "/v3/webhooks")).body.result.find((w: { id: string }) => w.id === state.id)).toMatchObject({
      url: state.url,
      events: ["course.updated"],
    });

    // The new URL gets the test; a course.created event no longer reaches this registration at all.
    const eventId = await sendTest();
    await logRow(eventId, "succeeded");
    expect(verifyDelivery(await receiver.waitFor((r) => r.path === "/portal-b" && r.headers["webhook-id"] === eventId), state.secret!).id).toBe(eventId);
    const courseId = await createCourse("Portal e2e after the edit");
    const courseEvent = (await courseDelivery("/control", courseId)).headers["webhook-id"];
    expect((await api("GET", `/v3/webhooks/${state.id}/deliveries?eventId=${courseEvent}`)).body.result).toEqual([]);

    // Resend: the same event (same webhook-id) once more.
    await page
      .getByRole("button", { name: `Resend ${eventId}` })
      .first()
      .click();
    await says("status", `Event ${eventId} queued again.`);
    await expect.poll(() => receiver.at("/portal-b").filter((r) => r.headers["webhook-id"] === eventId).length, { timeout: 15_000 }).toBe(2);

    // Filters: status, then event id; only the matching rows.
    await page.getByLabel("Status", { exact: true }).selectOption("failed");
    await page.getByRole("button", { name: "Apply filters" }).click();
    // The failed event's four attempts, and the missed-events notice's one (refused while the receiver failed).
    await expect
      .poll(async () => (await logRows()).filter((r) => r.eventId === state.failedEvent))
      .toEqual(Array(4).fill({ eventId: state.failedEvent!, status: "failed" }));
    expect((await logRows()).map((r) => r.status)).toEqual(Array(5).fill("failed"));
    await page.getByLabel("Status", { exact: true }).selectOption("");
    await page.getByLabel("Event id").fill(state.failedEvent!);
    await page.getByRole("button", { name: "Apply filters" }).click();
    await expect.poll(async () => (await logRows()).map((r) => r.status)).toEqual(["succeeded", "failed", "failed", "failed", "failed"]);
    expect(new Set((await logRows()).map((r) => r.eventId))).toEqual(new Set([state.failedEvent]));
    await page.getByRole("button", { name: "Clear" }).click();

    // Pages of 25: more than 25 entries make a second page, the oldest on it.
    // 25 tests: more than 25 entries whatever the steps before logged (11 so far).
    for (let i = 0; i < 25; i++) expect((await api("POST", `/v3/webhooks/${state.id}/test`)).status).toBe(202);
    const total = async () =>
      (await api("GET", `/v3/webhooks/${state.id}/deliveries?limit=100`)).body.result as { eventId: string; status: string; attemptedAt: string | null }[];
    // Once every test was attempted (no entry still queued), the log's order no longer moves.
    await expect.poll(async () => (await total()).filter((e) => e.attemptedAt === null && e.status === "pending").length, { timeout: 20_000 }).toBe(0);
    expect((await total()).length).toBeGreaterThan(25);
    await page.getByRole("button", { name: "Refresh", exact: true }).click();
    await expect.poll(async () => (await logRows()).length).toBe(25);
    await page.getByRole("button", { name: "Next page" }).click();
    await shown(page.getByText("Page 2", { exact: true }));
    const all = await total();
    await expect.poll(async () => (await logRows()).map((r) => r.eventId)).toEqual(all.slice(25, 50).map((e) => e.eventId));
    await page.getByRole("button", { name: "Previous page" }).click();
    await shown(page.getByText("Page 1", { exact: true }));
    await expectAccessible("delivery log, filtered and paged");
  });

  it("deletes with a confirmation that states the promise, by keyboard, and nothing more arrives", async () => {
    // The second registration (/control, made in the edit step) shows that events still flow.
    // Nothing is owed to this one when it is deleted: the newest entry of each delivery in its
    // log has ended (no first attempt queued, no retry due), so an arrival after the delete
    // could only come from an event accepted after it.
    const owed = async () => {
      const log = (await api("GET", `/v3/webhooks/${state.id}/deliveries?limit=100`)).body.result as { eventId: string; nextAttemptAt: string | null }[];
      expect(log.length).toBeLessThan(100);
      const newest = new Map<string, string | null>();
      for (const entry of log) if (!newest.has(entry.eventId)) newest.set(entry.eventId, entry.nextAttemptAt);
      return [...newest].filter(([, next]) => next !== null);
    };
    await expect.poll(owed, { timeout: 20_000 }).toEqual([]);
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

    expect((await api("POST", `/v3/webhooks/${state.id}/test`)).status).toBe(404);
    // A course.updated event, which the deleted registration subscribed to, reaches the control only.
    const courseId = await createCourse("Portal e2e course");
    const patched = await api("PATCH", `/v3/courses/${courseId}`, { name: "Portal e2e course, renamed" });
    expect(patched.status, JSON.stringify(patched.body)).toBe(200);
    const toControl = await receiver.waitFor(
      (r) => r.path === "/control" && JSON.parse(r.body).type === "course.updated" && JSON.parse(r.body).data?.course?.id === courseId,
    );
    // Driven to its end, not waited for: the control's delivery of the event is `succeeded`
    // in its log (terminal), so the hub has handed the event to every registration it
    // addressed — a hand-over to the deleted one would have gone in that same round, and a
    // courier sends what it is handed at once.
    const eventId = JSON.parse(toControl.body).id as string;
    const newest = async () =>
      ((await api("GET", `/v3/webhooks/${state.controlId}/deliveries?eventId=${eventId}`)).body.result as { status: string }[])[0]?.status;
    await expect.poll(newest, { timeout: 15_000 }).toBe("succeeded");
    expect(receiver.received.filter((r) => r.path !== "/control" && r.at >= deletedAt)).toEqual([]);
    expect((await api("GET", "/v3/webhooks")).body.result.map((w: { id: string }) => w.id)).not.toContain(state.id);
  });

  it("creates a registration with a filter, a custom header and a throttle: the API's refusal names the field, the header reaches the receiver", async () => {
    // A training of the demo school, for a course that passes the filter.
    const courses = await api("GET", "/v3/courses?limit=100");
    const trainingId = (courses.body.result as { trainingId: string | null }[]).find((c) => c.trainingId)?.trainingId;
    expect(trainingId, "a demo course with a training").toBeTruthy();
    state.trainingId = trainingId!;

    await page.goto(`${server.base}/portal#/`);
    await page.getByRole("link", { name: "Add endpoint" }).click();
    await view("Add an endpoint");
    state.filteredUrl = receiver.url("/filtered");
    await page.getByLabel("Endpoint URL").fill(state.filteredUrl);
    // Ids separated by a comma and a new line.
    await page.getByLabel("Training ids").fill(`${trainingId}, trn_e2e_none\ntrn_e2e_other`);
    // "Add a header" by keyboard: the new row's name field takes the focus.
    await page.getByRole("button", { name: "Add a header" }).focus();
    await page.keyboard.press("Enter");
    const header1 = page.getByRole("group", { name: "Header 1", exact: true });
    await shown(header1);
    await expect.poll(() => focused(header1.getByLabel("Name"))).toBe(true);
    await page.keyboard.type("Content-Type");
    await header1.getByLabel("Value").fill("text/plain");
    await page.getByLabel("Most attempts per second (optional)").fill("5");
    await expectAccessible("create, with filter, header and throttle");

    // A reserved header name: the API's 400 VALIDATION_ERROR, its details naming the field.
    const refused = await api("POST", "/v3/webhooks", { url: state.filteredUrl, headers: { "Content-Type": "text/plain" } });
    expect([refused.status, refused.body.code]).toEqual([400, "VALIDATION_ERROR"]);
    await page.getByRole("button", { name: "Create endpoint" }).click();
    await says("alert", refused.body.message);
    const alert = page.getByRole("alert").filter({ hasText: refused.body.message });
    for (const d of refused.body.details as { path?: string; message: string }[]) await shown(alert.getByText(d.message).first());
    await expectAccessible("create, refused header");

    await header1.getByLabel("Name").fill("X-Api-Key");
    await header1.getByLabel("Value").fill("e2e-header-secret-1");
    await page.getByRole("button", { name: "Create endpoint" }).click();
    await view("Endpoint created");
    state.filteredSecret = await page.getByLabel("Signing secret", { exact: true }).inputValue();
    const created = (await api("GET", "/v3/webhooks")).body.result.find((w: { url: string }) => w.url === state.filteredUrl);
    expect(created).toMatchObject({
      filter: { trainingId: [trainingId, "trn_e2e_none", "trn_e2e_other"] },
      headerNames: ["x-api-key"],
      maxPerSecond: 5,
    });
    state.filteredId = created.id;

    // The detail page: the filter, the header's name (never its value) and the throttle.
    await page.getByRole("link", { name: /open the endpoint/ }).click();
    await shown(page.getByRole("heading", { name: "Delivery log" }));
    const record = page.locator("dl.record");
    await shown(record.getByText(`Trainings: ${trainingId}, trn_e2e_none, trn_e2e_other`));
    await shown(record.locator("code", { hasText: /^x-api-key$/ }));
    await shown(record.getByText("At most 5 attempts per second"));
    expect(await page.content()).not.toContain("e2e-header-secret-1");
    await expectAccessible("endpoint detail with filter, header and throttle");

    // The receiver answers with a body, markup included: the log shows it as text.
    receiver.answer("/filtered", { status: 200, body: `{"received":true,"note":"<b>not markup</b>","pad":"${"x".repeat(1200)}"}` });
    const eventId = await sendTest();
    const row = await logRow(eventId, "succeeded");
    const delivery = await receiver.waitFor((r) => r.path === "/filtered" && r.headers["webhook-id"] === eventId);
    expect(delivery.headers["x-api-key"]).toBe("e2e-header-secret-1");
    expect(await cell(row, "trigger").textContent()).toBe("test");
    expect(await cell(row, "response", ".response-status").textContent()).toBe("200");
    expect(await cell(row, "duration").textContent()).toMatch(/^\d+ ms$/);
    expect(await cell(row, "response", ".body-start").textContent()).toMatch(/^\{"received":true,"note":"<b>not markup<\/b>"/);
    // The whole start (1,024 bytes) and the URL behind the disclosure, opened by keyboard.
    await cell(row, "response", "summary").focus();
    await page.keyboard.press("Enter");
    const body = cell(row, "response", "pre.body");
    await shown(body);
    expect((await body.textContent())!.length).toBe(1024);
    await shown(cell(row, "response").getByText(state.filteredUrl));
    expect(await row.locator("b").count()).toBe(0);
    await expectAccessible("delivery log with trigger, duration and body");

    // The filter: a course of the training reaches it (with the header); one without does not.
    const inScope = await api("POST", "/v3/courses", {
      name: "Portal e2e filtered course",
      startDateTime: "2026-12-02T08:00:00.000Z",
      endDateTime: "2026-12-02T10:00:00.000Z",
      trainingId,
    });
    expect(inScope.status, JSON.stringify(inScope.body)).toBe(201);
    const passed = await courseDelivery("/filtered", inScope.body.result.id);
    expect(passed.headers["x-api-key"]).toBe("e2e-header-secret-1");
    expect(verifyDelivery(passed, state.filteredSecret!).type).toBe("course.created");
    const outOfScope = await createCourse("Portal e2e course outside the filter");
    const skipped = (await courseDelivery("/control", outOfScope)).headers["webhook-id"];
    expect((await api("GET", `/v3/webhooks/${state.filteredId}/deliveries?eventId=${skipped}`)).body.result).toEqual([]);
    const trigger = page.locator(`tr[data-event-id="${passed.headers["webhook-id"]}"][data-status="succeeded"] td[data-col="trigger"]`);
    await refreshUntil(trigger);
    expect(await trigger.first().textContent()).toBe("event");
  });

  it("edits the filter, the headers and the throttle: untouched headers are kept, only changed fields are sent; a 410 disables it", async () => {
    const patchBody = () => page.waitForRequest((r) => r.method() === "PATCH" && r.url().endsWith(`/v3/webhooks/${state.filteredId}`));
    await page.getByRole("link", { name: "Edit" }).click();
    await view("Edit the endpoint");
    expect(await page.getByLabel("Training ids").inputValue()).toBe(`${state.trainingId}, trn_e2e_none, trn_e2e_other`);
    expect(await page.getByLabel("Most attempts per second (optional)").inputValue()).toBe("5");
    const header1 = page.getByRole("group", { name: "Header 1", exact: true });
    expect(await header1.getByLabel("Name").inputValue()).toBe("x-api-key");
    // The value is write-only: blank, with the rule in words.
    expect(await header1.getByLabel("Value").inputValue()).toBe("");
    await shown(page.getByText("Leave them untouched to keep them as they are"));
    await expectAccessible("edit, saved headers");

    // Only the throttle changes: the PATCH carries it alone, and the header is kept.
    await page.getByLabel("Most attempts per second (optional)").fill("");
    let sent = patchBody();
    await page.getByRole("button", { name: "Save changes" }).click();
    expect((await sent).postDataJSON()).toEqual({ maxPerSecond: null });
    await says("status", "Changes saved.");
    await shown(page.locator("dl.record").getByText("None", { exact: true }).first());
    const eventId = await sendTest();
    await logRow(eventId, "succeeded");
    expect((await receiver.waitFor((r) => r.path === "/filtered" && r.headers["webhook-id"] === eventId)).headers["x-api-key"]).toBe("e2e-header-secret-1");

    // New values: the whole set is replaced; a named header without a value is refused first.
    await page.getByRole("link", { name: "Edit" }).click();
    await view("Edit the endpoint");
    await page.getByRole("button", { name: "Add a header" }).click();
    const header2 = page.getByRole("group", { name: "Header 2", exact: true });
    await header2.getByLabel("Name").fill("X-Tenant");
    await header2.getByLabel("Value").fill("school-1");
    await shown(page.getByText("Saving replaces the whole set of headers"));
    await page.getByRole("button", { name: "Save changes" }).click();
    await says("alert", 'Enter a value for "x-api-key"');
    await header1.getByLabel("Value").fill("e2e-header-secret-2");
    await page.getByLabel("Group ids").fill("grp_e2e_1");
    await expectAccessible("edit, headers replaced");
    sent = patchBody();
    await page.getByRole("button", { name: "Save changes" }).click();
    expect((await sent).postDataJSON()).toEqual({
      filter: { trainingId: [state.trainingId, "trn_e2e_none", "trn_e2e_other"], groupId: ["grp_e2e_1"] },
      headers: { "x-api-key": "e2e-header-secret-2", "X-Tenant": "school-1" },
    });
    await says("status", "Changes saved.");
    const record = page.locator("dl.record");
    await shown(record.getByText("Groups: grp_e2e_1"));
    expect(await record.locator("ul.names code").allTextContents()).toEqual([
      state.trainingId,
      "trn_e2e_none",
      "trn_e2e_other",
      "grp_e2e_1",
      "x-api-key",
      "x-tenant",
    ]);
    expect(await page.content()).not.toContain("e2e-header-secret-2");
    const second = await sendTest();
    await logRow(second, "succeeded");
    const delivery = await receiver.waitFor((r) => r.path === "/filtered" && r.headers["webhook-id"] === second);
    expect([delivery.headers["x-api-key"], delivery.headers["x-tenant"]]).toEqual(["e2e-header-secret-2", "school-1"]);

    // No filter, no header: both cleared with null; the record says None.
    await page.getByRole("link", { name: "Edit" }).click();
    await view("Edit the endpoint");
    await page.getByLabel("Training ids").fill("");
    await page.getByLabel("Group ids").fill("");
    await page.getByRole("button", { name: "Remove all headers" }).click();
    await says("status", "Every custom header will be removed when you save.");
    expect(await focused(page.getByRole("button", { name: "Add a header" }))).toBe(true);
    sent = patchBody();
    await page.getByRole("button", { name: "Save changes" }).click();
    expect((await sent).postDataJSON()).toEqual({ filter: null, headers: null });
    await says("status", "Changes saved.");
    await shown(record.getByText("None: every event subscribed to"));
    expect(await api("GET", `/v3/webhooks/${state.filteredId}`).then((r) => r.body.result)).toMatchObject({
      filter: null,
      headerNames: [],
      maxPerSecond: null,
    });

    // The receiver answers 410 Gone: the registration is disabled, and the page says why.
    receiver.answer("/filtered", { status: 410, body: "unsubscribe me" });
    const gone = await sendTest();
    await logRow(gone, "failed");
    await expect.poll(async () => (await api("GET", `/v3/webhooks/${state.filteredId}`)).body.result.disabledReason, { timeout: 15_000 }).toBe("gone");
    await page.reload();
    await shown(page.getByText("Disabled (receiver gone)"));
    await shown(page.getByText("The receiver answered 410 Gone"));
    await expectAccessible("endpoint detail, receiver gone");
    receiver.answer("/filtered", null);
    // Out of the way of the steps that follow.
    expect((await api("DELETE", `/v3/webhooks/${state.filteredId}`)).status).toBe(200);
  });

  it("creates a v1a thin registration without ordering: its public key is shown, the detail shows the three; a thin course event verifies with the key at the receiver", async () => {
    await page.goto(`${server.base}/portal#/`);
    await page.getByRole("link", { name: "Add endpoint" }).click();
    await view("Add an endpoint");
    const url = receiver.url("/v1a-thin");
    await page.getByLabel("Endpoint URL").fill(url);
    expect(await page.getByLabel("Ordering", { exact: true }).inputValue()).toBe("course");
    await page.getByLabel("Ordering", { exact: true }).selectOption("none");
    await page.getByLabel("Payload", { exact: true }).selectOption("thin");
    await page.getByLabel("Signature", { exact: true }).selectOption("v1a");
    await expectAccessible("create, v1a and thin");
    const posted = page.waitForRequest((r) => r.method() === "POST" && r.url().endsWith("/v3/webhooks"));
    await page.getByRole("button", { name: "Create endpoint" }).click();
    expect((await posted).postDataJSON()).toEqual({ url, events: ["*"], ordering: "none", signatureScheme: "v1a", payload: "thin" });
    await view("Endpoint created");
    const publicKey = await page.getByLabel("Public key", { exact: true }).inputValue();
    expect(publicKey).toMatch(/^whpk_[A-Za-z0-9+/]{43}=$/);
    await expectAccessible("public key shown");
    const created = (await api("GET", "/v3/webhooks")).body.result.find((w: { url: string }) => w.url === url);
    expect(created).toMatchObject({ ordering: "none", signatureScheme: "v1a", publicKey, payload: "thin" });
    expect(created).not.toHaveProperty("secret");

    await page.getByRole("link", { name: "Open the endpoint" }).click();
    await shown(page.getByRole("heading", { name: "Delivery log" }));
    const record = page.locator("dl.record");
    await shown(record.getByText("None: every event on its own"));
    await shown(record.getByText("Thin: course events carry the course's id and version only"));
    await shown(record.getByText(publicKey));
    await expectAccessible("endpoint detail, v1a and thin");

    const courseId = await createCourse("Cours v1a e2e");
    const delivery = await courseDelivery("/v1a-thin", courseId);
    expect(JSON.parse(delivery.body).data).toEqual({ course: { id: courseId, version: 1 } });
    expect(String(delivery.headers["webhook-signature"])).toMatch(/^v1a,[A-Za-z0-9+/]{86}==$/);
    expect(verifyV1a(delivery, publicKey)).toBe(true);
    // Out of the way of the steps that follow.
    expect((await api("DELETE", `/v3/webhooks/${created.id}`)).status).toBe(200);
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
    await page.evaluate(() => sessionStorage.setItem("webhook-portal.credential", "sk_test_revoked_meanwhile"));
    await page.reload();
    await view("Sign in");
    await says("alert", refused.body.message);
    expect(await page.evaluate(() => sessionStorage.length)).toBe(0);
  });
});

describe("portal links (docs/reference.md § Portal sessions)", () => {
  /** A portal session of the demo school (or of `key`'s), minted with its API key. */
  async function mintSession(body: { expiresInSeconds?: number; readOnly?: boolean } = {}, key = DEMO_API_KEY) {
    const res = await api("POST", "/v3/portal-sessions", body, key);
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    return res.body.result as { token: string; url: string; expiresAt: string; readOnly: boolean };
  }

  /** The school of `key` as GET /v3/school names it. */
  const schoolOf = async (key: string) => (await api("GET", "/v3/school", undefined, key)).body.result as { id: string; name: string };

  /** The token this tab holds (the redeemed one, after a link). */
  const heldToken = () => page.evaluate(() => sessionStorage.getItem("webhook-portal.credential"));

  /** The school name the header shows. */
  const shownSchool = () => page.locator("#school-name strong").textContent();

  /** What the API answers a used link (docs/reference.md § "Portal sessions": a link opens once). */
  const USED_LINK_MESSAGE =
    "This portal session was revoked, or its link was used already (a link opens once); ask your school's administrator for a new portal link.";

  /** The session's end as the top bar shows it (its `<time datetime>`). */
  const shownEnd = () => page.locator("#session-info time").getAttribute("datetime");

  it("signs in by a link: the token leaves the address bar at once and stays in the tab; the page shows when the session ends", async () => {
    const session = await mintSession({ expiresInSeconds: 3600 });
    expect(session.url).toBe(`${server.base}/portal#token=${session.token}`);
    await page.goto(session.url);
    await view("Webhook endpoints");
    expect(page.url()).toBe(`${server.base}/portal`);
    expect(await page.evaluate(() => location.hash)).toBe("");
    // The link's token was redeemed: the tab holds the new one, the link's is refused.
    const held = await heldToken();
    expect(held).toMatch(/^ps_/);
    expect(held).not.toBe(session.token);
    expect((await api("GET", "/v3/webhooks", undefined, session.token)).status).toBe(401);
    expect(await shownSchool()).toBe((await schoolOf(DEMO_API_KEY)).name);
    expect(await shownEnd()).toBe(session.expiresAt);
    await shown(page.getByText(/Portal session ends/));
    expect(await page.getByText("Read-only", { exact: true }).count()).toBe(0);
    // The school's registrations, and the actions of a full session.
    await shown(page.locator(`a[href="#/webhooks/${state.controlId}"]`));
    await shown(page.getByRole("link", { name: "Add endpoint" }));
    await expectAccessible("list, signed in by a portal link");
    // The token stays in this tab across a reload, and is never put back in the address.
    await page.reload();
    await view("Webhook endpoints");
    expect(page.url()).not.toContain(session.token);
    expect(await heldToken()).toBe(held);
    // The same link opened again (history, a forwarded message): refused, saying so; the tab stays signed in.
    await page.goto(session.url);
    // One sentence, the API's (src/http/auth.ts): no title repeating it.
    await says("status", USED_LINK_MESSAGE);
    expect(await page.locator(".flash-error").textContent()).toBe(USED_LINK_MESSAGE);
    await view("Webhook endpoints");
    expect(await heldToken()).toBe(held);
    await expectAccessible("list, a used link refused");
    // Sign-out forgets it.
    await page.getByRole("button", { name: "Sign out" }).click();
    await says("status", "Signed out");
    expect(await page.evaluate(() => sessionStorage.length)).toBe(0);
  });

  it("a used link in a signed-out tab: the sign-in form says the link was used and a new one must be asked for", async () => {
    const session = await mintSession();
    expect((await api("POST", "/v3/portal-sessions/redeem", undefined, session.token)).status).toBe(201);
    await page.goto(session.url);
    await view("Sign in");
    await says("alert", USED_LINK_MESSAGE);
    expect(await page.getByRole("alert").locator("strong").count()).toBe(0);
    expect(await page.getByRole("alert").locator(".error-message").textContent()).toBe(USED_LINK_MESSAGE);
    expect(await page.evaluate(() => sessionStorage.length)).toBe(0);
    await expectAccessible("sign-in, a used link refused");
  });

  it("another school's link while signed in: asked before switching; Stay keeps the school, Switch signs in to the other", async () => {
    const [demo, other] = [await schoolOf(DEMO_API_KEY), await schoolOf(OTHER_API_KEY)];
    expect(other.id).not.toBe(demo.id);
    await page.goto((await mintSession()).url);
    await view("Webhook endpoints");
    expect(await shownSchool()).toBe(demo.name);
    const held = await heldToken();

    await page.goto((await mintSession({}, OTHER_API_KEY)).url);
    await view("Switch school?");
    await shown(page.getByText(`This portal link is for ${other.name}`));
    await expectAccessible("switch school?");
    await page.getByRole("button", { name: `Stay with ${demo.name}` }).click();
    await view("Webhook endpoints");
    expect([await shownSchool(), await heldToken()]).toEqual([demo.name, held]);

    await page.goto((await mintSession({}, OTHER_API_KEY)).url);
    await view("Switch school?");
    await page.getByRole("button", { name: `Switch to ${other.name}` }).click();
    await view("Webhook endpoints");
    expect(await shownSchool()).toBe(other.name);
    expect(await heldToken()).not.toBe(held);
    // The other school's registrations, not the demo school's.
    expect(await page.locator(`a[href="#/webhooks/${state.controlId}"]`).count()).toBe(0);
    await page.getByRole("button", { name: "Sign out" }).click();
    await says("status", "Signed out");
  });

  it("a read-only link offers no action that changes anything; the API refuses a change with it (403)", async () => {
    const session = await mintSession({ readOnly: true });
    await page.goto(session.url);
    await view("Webhook endpoints");
    await shown(page.getByText("Read-only", { exact: true }));
    expect(await page.getByRole("link", { name: "Add endpoint" }).count()).toBe(0);
    await expectAccessible("list, read-only");

    await page.locator(`a[href="#/webhooks/${state.controlId}"]`).click();
    await shown(page.getByRole("heading", { name: "Delivery log" }));
    // The control registration got course events: the log has rows to (not) resend.
    await shown(page.locator("table.log tbody tr").first());
    await shown(page.locator(".chart canvas").first());
    for (const name of ["Send test event", "Disable", "Enable", "Rotate secret…", "Delete…", "Recover"]) {
      expect(await page.getByRole("button", { name, exact: true }).count(), name).toBe(0);
    }
    expect(await page.getByRole("link", { name: "Edit", exact: true }).count()).toBe(0);
    expect(await page.getByRole("button", { name: /^Resend / }).count()).toBe(0);
    expect(await page.getByRole("region", { name: "Recover after an outage" }).count()).toBe(0);
    // The filter, header names and throttle are shown, read-only.
    for (const term of ["Filter", "Custom headers", "Throttle"]) await shown(page.locator("dl.record dt").getByText(term, { exact: true }));
    // Reading goes on: filters and paging are not changes.
    await shown(page.getByRole("button", { name: "Apply filters" }));
    await expectAccessible("endpoint detail, read-only");

    // The forms are not offered either, even by address.
    for (const hash of ["#/new", `#/webhooks/${state.controlId}/edit`]) {
      await page.evaluate((h) => {
        location.hash = h;
      }, hash);
      await view("Read-only access");
    }
    await expectAccessible("read-only notice");
    const refused = await api("PATCH", `/v3/webhooks/${state.controlId}`, { enabled: false }, (await heldToken())!);
    expect([refused.status, refused.body.code]).toEqual([403, "FORBIDDEN"]);
    await page.getByRole("button", { name: "Sign out" }).click();
    await says("status", "Signed out");
  });

  it("writes dates with a four-digit year, in an en-US browser too (whose short date style writes 26)", async () => {
    const session = await mintSession({ expiresInSeconds: 3600 });
    const other = await launchBrowser(server.base, "en-US");
    try {
      await other.page.goto(session.url);
      await other.page.getByRole("heading", { level: 1, name: "Webhook endpoints", exact: true }).waitFor();
      expect(await other.page.locator("#session-info time").textContent()).toMatch(/(^|\D)20\d\d(\D|$)/);
    } finally {
      await other.close();
    }
  });

  it("a session ends by itself: at its end the page signs out, and a token whose end passed is refused by the API", async () => {
    // The page's own clock: Chromium's clock is run 61 s ahead (the shortest session is 60 s).
    const session = await mintSession({ expiresInSeconds: 60 });
    const other = await launchBrowser(server.base);
    try {
      await other.page.clock.install();
      await other.page.goto(session.url);
      await other.page.getByRole("heading", { level: 1, name: "Webhook endpoints", exact: true }).waitFor();
      expect(await other.page.locator("#session-info time").getAttribute("datetime")).toBe(session.expiresAt);
      await other.page.clock.fastForward(61_000);
      await other.page.getByRole("heading", { level: 1, name: "Sign in", exact: true }).waitFor();
      await other.page.getByRole("alert").filter({ hasText: "Your portal session ended at" }).waitFor();
      expect(await other.page.evaluate(() => sessionStorage.length)).toBe(0);
      expect(await other.cspViolations()).toEqual([]);
      expect(other.pageErrors).toEqual([]);
    } finally {
      await other.close();
    }

    // The service's clock: the stored end of a signed-in session is moved into the past (the
    // test does not wait 60 s); the page's next call is refused and signs it out, saying why.
    const ending = await mintSession({ expiresInSeconds: 60 });
    await page.goto(ending.url);
    await view("Webhook endpoints");
    // The list has loaded (its request went out before the session ends).
    await shown(page.locator(`a[href="#/webhooks/${state.controlId}"]`), 30_000);
    // The tab holds the token its link was redeemed for.
    const held = (await heldToken())!;
    const hash = createHash("sha256").update(held).digest("hex");
    await d1Query(`UPDATE portal_sessions SET expires_at = ${Date.now() - 1000} WHERE token_hash = '${hash}'`, "local", persistTo);
    const refused = await api("GET", "/v3/webhooks", undefined, held);
    expect([refused.status, refused.body.code]).toEqual([401, "UNAUTHORIZED"]);
    expect(refused.body.message).toContain("ended at");
    await page.locator(`a[href="#/webhooks/${state.controlId}"]`).click();
    await view("Sign in");
    await says("alert", refused.body.message);
    expect(await page.evaluate(() => sessionStorage.length)).toBe(0);
    await expectAccessible("signed out, session ended");
  });

  it("revoke-all: DELETE /v3/portal-sessions signs every open tab out with the API's message; pasting the key still works", async () => {
    const session = await mintSession();
    await page.goto(session.url);
    await view("Webhook endpoints");
    // The list has loaded (its request went out before the revocation).
    await shown(page.locator(`a[href="#/webhooks/${state.controlId}"]`), 30_000);
    const revoked = await api("DELETE", "/v3/portal-sessions");
    expect(revoked.status).toBe(200);
    expect(revoked.body.result.revoked).toBeGreaterThanOrEqual(1);
    const refused = await api("GET", "/v3/webhooks", undefined, (await heldToken())!);
    expect([refused.status, refused.body.code]).toEqual([401, "UNAUTHORIZED"]);
    await page.locator(`a[href="#/webhooks/${state.controlId}"]`).click();
    await view("Sign in");
    await says("alert", refused.body.message);
    expect(await page.evaluate(() => sessionStorage.length)).toBe(0);
    // The link cannot be used again either.
    await page.goto(session.url);
    await view("Sign in");
    await says("alert", refused.body.message);
    expect(page.url()).not.toContain(session.token);
    // The pasted key is unaffected.
    const keyField = page.getByLabel("API key");
    await keyField.fill(DEMO_API_KEY);
    await keyField.press("Enter");
    await view("Webhook endpoints");
    expect(await page.evaluate(() => sessionStorage.getItem("webhook-portal.credential"))).toBe(DEMO_API_KEY);
    expect(await page.locator("#session-info").count()).toBe(0);
  });
});
