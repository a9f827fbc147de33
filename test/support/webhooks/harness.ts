/**
 * Test harness for the webhook objects: schools with API keys, registrations through the
 * HTTP API, synthetic events, and `drain()`, which runs the hub's alarm and every courier's
 * until nothing is due.
 */
import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { expect } from "vitest";
import { hubFor } from "../../../src/events/hub-client";
import type { SchoolEvent } from "../../../src/events/types";
import { mintId } from "../../../src/lib/ids";
import { backlog } from "../../../src/webhooks/courier/queue";
import type { WebhookCourier } from "../../../src/webhooks/courier/webhook-courier";
import type { SchoolHub } from "../../../src/webhooks/hub/school-hub";
import { type CourierConfig, type CreatedWebhook, courierFor } from "../../../src/webhooks/rpc";
import { callJson, loadFixture } from "../helpers";

let schools = 0;

/**
 * A courier config as the hub makes it for registration `webhookId` of `schoolId`, at
 * version 1,000 (newer than any the hub has given), enabled, `v1` with `secret`, no headers
 * or throttle; `overrides` replace fields. For tests that configure a courier themselves.
 */
export function courierConfig(schoolId: string, webhookId: string, overrides: Partial<CourierConfig> & Pick<CourierConfig, "url">): CourierConfig {
  return {
    webhookId,
    schoolId,
    hubId: env.SCHOOL_HUB.idFromName(schoolId).toString(),
    version: 1_000,
    secret: "whsec_bGF0ZWxhdGVsYXRlbGF0ZWxhdGVsYXRlbGF0ZWxhdGU=",
    previousSecret: null,
    previousExpiresAt: null,
    headers: {},
    maxPerSecond: null,
    enabled: true,
    disables: 0,
    ...overrides,
  };
}

/** A fresh school (its own hub) with one API key; returns `{ schoolId, key }`. */
export async function newSchool(label = "s"): Promise<{ schoolId: string; key: string }> {
  schools += 1;
  const schoolId = `sch_${label}${schools}_${Math.random().toString(36).slice(2, 8)}`;
  const key = `sk_test_${schoolId}`;
  await loadFixture({ schools: [{ id: schoolId, name: `School ${schoolId}`, apiKeys: [key] }] });
  return { schoolId, key };
}

/**
 * Registers a webhook through POST /v3/webhooks and returns the 201 result, typed as a `v1`
 * registration's (with its `secret`; a `v1a` one, `extra.signatureScheme: "v1a"`, has
 * `publicKey` instead).
 */
export async function register(key: string, url: string, extra: Record<string, unknown> = {}): Promise<CreatedWebhook & { secret: string }> {
  const { status, body } = await callJson("/v3/webhooks", { method: "POST", key, json: { url, ...extra } });
  expect(status, JSON.stringify(body)).toBe(201);
  return body.result as CreatedWebhook & { secret: string };
}

/**
 * Mints a portal session through POST /v3/portal-sessions with `key` (`json` its body; none
 * when undefined) and returns the 201 result.
 */
export async function mintPortalSession(
  key: string,
  json?: unknown,
): Promise<{ token: string; url: string; expiresAt: string; readOnly: boolean; scopes: string[] }> {
  const { status, body } = await callJson("/v3/portal-sessions", { method: "POST", key, ...(json === undefined ? {} : { json }) });
  expect(status, JSON.stringify(body)).toBe(201);
  return body.result;
}

/**
 * Mints a portal link with `key` (`json` its body) and redeems it, as the portal does: the
 * returned token is the session's (a link's token works only on the redeem), with the
 * session's end and mode.
 */
export async function openPortalSession(key: string, json?: unknown): Promise<{ token: string; expiresAt: string; readOnly: boolean }> {
  const link = await mintPortalSession(key, json);
  const { status, body } = await callJson("/v3/portal-sessions/redeem", { method: "POST", key: link.token });
  expect(status, JSON.stringify(body)).toBe(201);
  return { token: body.result.token, expiresAt: body.result.expiresAt, readOnly: body.result.readOnly };
}

/** A synthetic course event of `schoolId`. */
export function courseEvent(schoolId: string, type: SchoolEvent["type"] = "course.updated", n = 0): SchoolEvent {
  const now = new Date().toISOString();
  return {
    id: mintId("evt"),
    changeCursor: `chg_${n}`,
    type,
    createdAt: now,
    schoolId,
    data: {
      course: {
        id: `crs_${n}`,
        name: `Cours ${n}`,
        startDateTime: "2026-09-07T08:00:00.000Z",
        endDateTime: "2026-09-07T10:00:00.000Z",
        classroom: null,
        creatorId: null,
        trainingId: null,
        version: 1,
        groupIds: [],
        professorIds: [],
        archived: false,
        absencesSent: false,
        createdAt: now,
        updatedAt: now,
      },
    },
  };
}

/**
 * The exact thin body of course event `e` as the reference states it (docs/reference.md §
 * "Event delivery", `payload`): `{ id, changeCursor, type, createdAt, schoolId, data: { course:
 * { id, version } } }`, with `professorId` when the event has one.
 */
export function thinBody(e: SchoolEvent): string {
  const course = e.data.course!;
  const data = { course: { id: course.id, version: course.version }, ...(e.data.professorId === undefined ? {} : { professorId: e.data.professorId }) };
  return JSON.stringify({ id: e.id, changeCursor: e.changeCursor, type: e.type, createdAt: e.createdAt, schoolId: e.schoolId, data });
}

/**
 * Runs `fn` inside the school's hub (runInDurableObject), typed as a SchoolHub: its `env` is
 * the Worker's Env, which the test runtime's Cloudflare.Env extends.
 */
export function inHub<R>(schoolId: string, fn: (hub: SchoolHub, state: DurableObjectState) => R | Promise<R>): Promise<R> {
  return runInDurableObject(hubFor(env, schoolId), (instance, state) => fn(instance as unknown as SchoolHub, state));
}

/**
 * The storage an object instance itself runs on: through the platform's storage seam, so behind
 * production's limits (test/support/sql-limits.ts). A test that runs product code on an object's
 * storage (a migration, a query builder, a helper of its class) passes it this one, never
 * `state.storage` (the runtime's, with no seam), which is for a test's own reads and fixtures.
 */
export const ownStorage = (object: SchoolHub | WebhookCourier): DurableObjectStorage => (object as unknown as { storage: DurableObjectStorage }).storage;

/** The school's hub as the runtime's stub type, for `runDurableObjectAlarm` and the simulated platform's drains. */
export const hubStub = (schoolId: string) => hubFor(env, schoolId) as unknown as DurableObjectStub;

/** Registration `webhookId`'s courier as the runtime's stub type (see `hubStub`). */
export const courierStub = (webhookId: string) => courierFor(env, webhookId) as unknown as DurableObjectStub;

/**
 * Rebuilds an object's SQLite schema (`sql`: its `ownStorage`) as its first `version` migrations
 * left it, every row gone, for a test of a later migration: `migrate` is the object's own.
 */
export function schemaAsOf(sql: SqlStorage, version: number, migrate: (sql: SqlStorage, upTo: number) => void): void {
  const tables = sql
    .exec<{ name: string }>(
      `SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE '\\_cf\\_%' ESCAPE '\\' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\'`,
    )
    .toArray();
  for (const { name } of tables) sql.exec(`DROP TABLE "${name}"`);
  migrate(sql, version);
}

/** Runs `fn` inside registration `webhookId`'s courier, typed as a WebhookCourier. */
export function inCourier<R>(webhookId: string, fn: (courier: WebhookCourier, state: DurableObjectState) => R | Promise<R>): Promise<R> {
  return runInDurableObject(courierFor(env, webhookId), (instance, state) => fn(instance as unknown as WebhookCourier, state));
}

/** Every registration id the hub knows, deleted ones included. */
async function webhookIds(schoolId: string): Promise<string[]> {
  return inHub(schoolId, (_hub, state) =>
    state.storage.sql
      .exec<{ id: string }>(`SELECT id FROM webhooks`)
      .toArray()
      .map((r) => r.id),
  );
}

/**
 * Queue rows of a courier due now (in flight ones included), as the courier counts them: with
 * `ordering: course`, a row held behind an earlier delivery of its course is not due.
 */
async function dueCount(webhookId: string): Promise<number> {
  return inCourier(webhookId, (courier) => {
    const storage = ownStorage(courier);
    const config = storage.kv.get("config") as CourierConfig | undefined;
    return backlog(storage.sql, Date.now(), Number.MAX_SAFE_INTEGER, config?.ordering === "course");
  });
}

/** Queue rows of a courier (deliveries not yet succeeded or failed). */
export async function queuedCount(webhookId: string): Promise<number> {
  return inCourier(webhookId, (_c, state) => state.storage.sql.exec<{ n: number }>(`SELECT COUNT(*) AS n FROM queue`).one().n);
}

/**
 * Runs the hub's alarm (its hand-overs) and each courier's alarm (and waits for their
 * attempts) until nothing is due now. Deliveries scheduled in the future (retries) stay queued.
 * It starts every object and calls them itself: a restart test, which must show that the
 * objects wake by themselves, uses `drainByAlarms` (alarms.ts) instead.
 */
export async function drain(schoolId: string): Promise<void> {
  const hub = hubFor(env, schoolId);
  for (let i = 0; i < 200; i++) {
    await runDurableObjectAlarm(hub);
    await inHub(schoolId, (h) => h.whenIdle());
    let due = 0;
    for (const id of await webhookIds(schoolId)) {
      await runDurableObjectAlarm(courierFor(env, id));
      await inCourier(id, (c) => c.whenIdle());
      due += await dueCount(id);
    }
    const behind = await inHub(
      schoolId,
      (_h, state) =>
        state.storage.sql
          .exec<{ n: number }>(
            `SELECT COUNT(*) AS n FROM webhooks w WHERE w.deleted_at IS NULL AND EXISTS (SELECT 1 FROM targets t WHERE t.webhook_id = w.id AND t.seq > w.acked_seq)`,
          )
          .one().n,
    );
    if (due === 0 && behind === 0) return;
  }
  throw new Error("drain: deliveries still due after 200 rounds");
}

/** Makes every queued delivery of the school's couriers due now (as if the clock had reached its retry time). */
export async function makeAllDue(schoolId: string): Promise<void> {
  for (const id of await webhookIds(schoolId)) {
    await inCourier(id, (_c, state) => {
      state.storage.sql.exec(`UPDATE queue SET next_attempt_at = ?`, Date.now());
    });
  }
}

/**
 * Polls `check` (sync or async) every 5 ms until it holds: for what a test waits on in real
 * time (a request under way, an abort), never a measured duration.
 *
 * @throws after `ms` (default 5,000) with `what` in the message.
 */
export async function eventually(check: () => boolean | Promise<boolean>, what: string, ms = 5000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}
