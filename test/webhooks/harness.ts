/**
 * Test harness for the event hub: schools with API keys, registrations through the HTTP
 * API, synthetic events, and `drain()`, which runs the hub's alarm until nothing is due.
 */
import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { expect } from "vitest";
import { hubFor } from "../../src/events/hub-client";
import type { SchoolEvent } from "../../src/events/types";
import { mintId } from "../../src/lib/ids";
import type { SchoolHub } from "../../src/webhooks/hub";
import type { CreatedWebhook } from "../../src/webhooks/types";
import { callJson, loadFixture } from "../helpers";

let schools = 0;

/** A fresh school (its own hub) with one API key; returns `{ schoolId, key }`. */
export async function newSchool(label = "s"): Promise<{ schoolId: string; key: string }> {
  schools += 1;
  const schoolId = `sch_${label}${schools}_${Math.random().toString(36).slice(2, 8)}`;
  const key = `sk_test_${schoolId}`;
  await loadFixture({ schools: [{ id: schoolId, name: `School ${schoolId}`, apiKeys: [key] }] });
  return { schoolId, key };
}

/** Registers a webhook through POST /v3/webhooks and returns the 201 result. */
export async function register(key: string, url: string, extra: { events?: string[]; description?: string } = {}): Promise<CreatedWebhook> {
  const { status, body } = await callJson("/v3/webhooks", { method: "POST", key, json: { url, ...extra } });
  expect(status, JSON.stringify(body)).toBe(201);
  return body.result as CreatedWebhook;
}

/** A synthetic course event of `schoolId`. */
export function courseEvent(schoolId: string, type: SchoolEvent["type"] = "course.updated", n = 0): SchoolEvent {
  const now = new Date().toISOString();
  return {
    id: mintId("evt"),
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
 * Runs `fn` inside the school's hub (runInDurableObject), typed as a SchoolHub: its `env` is
 * the Worker's Env, which the test runtime's Cloudflare.Env extends.
 */
export function inHub<R>(schoolId: string, fn: (hub: SchoolHub, state: DurableObjectState) => R | Promise<R>): Promise<R> {
  return runInDurableObject(hubFor(env, schoolId), (instance, state) => fn(instance as unknown as SchoolHub, state));
}

/** Deliveries rows of the hub that are due now (in flight ones included). */
async function dueCount(schoolId: string): Promise<number> {
  return runInDurableObject(
    hubFor(env, schoolId),
    (_hub, state) => state.storage.sql.exec<{ n: number }>(`SELECT COUNT(*) AS n FROM deliveries WHERE next_attempt_at <= ?`, Date.now()).one().n,
  );
}

/**
 * Runs the hub's alarm (and waits for its attempts) until no delivery is due now.
 * Deliveries scheduled in the future (retries) stay queued.
 */
export async function drain(schoolId: string): Promise<void> {
  const stub = hubFor(env, schoolId);
  for (let i = 0; i < 200; i++) {
    await runDurableObjectAlarm(stub);
    await inHub(schoolId, (hub) => hub.whenIdle());
    if ((await dueCount(schoolId)) === 0) return;
  }
  throw new Error("drain: deliveries still due after 200 alarm runs");
}

/** Makes every queued delivery due now (as if the clock had reached its retry time). */
export async function makeAllDue(schoolId: string): Promise<void> {
  await runInDurableObject(hubFor(env, schoolId), (_hub, state) => {
    state.storage.sql.exec(`UPDATE deliveries SET next_attempt_at = ?`, Date.now());
  });
}
