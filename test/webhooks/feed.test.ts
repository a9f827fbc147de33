/**
 * The events feed (docs/reference.md § "Events feed: GET /v3/events"): the school's log in acceptance
 * order, each item the exact body registrations receive, read on by cursor with no gap and no
 * duplicate — also across a reset of the hub (a fast-check property) — and the long poll,
 * woken by the next accepted event.
 */
import { env } from "cloudflare:workers";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { hubFor } from "../../src/events/hub-client";
import type { SchoolEvent } from "../../src/events/types";
import { encodeCursor } from "../../src/webhooks/api/feed";
import { callJson } from "../support/helpers";
import { courseEvent, drain, eventually, newSchool, register } from "../support/webhooks/harness";
import { SimulatedPlatform } from "../support/webhooks/platform-sim";
import { resetHub } from "../support/webhooks/reset";

const rx = new SimulatedPlatform();
beforeAll(() => {
  rx.install();
});
afterAll(() => rx.restore());

type Page = {
  status: number;
  body: { result: { id: string; type: string }[]; pagination: { limit: number; hasMore: boolean; nextCursor: string }; code?: string };
};
const feed = (key: string, query = "") => callJson(`/v3/events${query}`, { key }) as Promise<Page & { res: Response }>;

/**
 * Reads the feed on from `cursor` (or the start), page by page, where `expected` events are
 * left: `hasMore` must be false by page ⌈expected ÷ limit⌉ (at least one page is read).
 *
 * @throws when a page that should be the last says `hasMore`.
 */
async function readAll(key: string, expected: number, cursor?: string, limit = 7): Promise<{ ids: string[]; cursor: string }> {
  const ids: string[] = [];
  let next = cursor;
  const pages = Math.max(1, Math.ceil(expected / limit));
  for (let n = 1; n <= pages; n++) {
    const page = await feed(key, `?limit=${limit}${next ? `&after=${next}` : ""}`);
    expect(page.status).toBe(200);
    ids.push(...page.body.result.map((e) => e.id));
    next = page.body.pagination.nextCursor;
    if (!page.body.pagination.hasMore) return { ids, cursor: next };
  }
  throw new Error(`the feed still has more after ${pages} pages of ${limit} (${expected} events expected, ${ids.length} read)`);
}

describe("GET /v3/events", () => {
  it("serves the events in acceptance order, each exactly the body a registration receives", async () => {
    const { schoolId, key } = await newSchool("feed");
    await register(key, "https://feed-rx.example.com/in");
    const events = Array.from({ length: 12 }, (_, i) => courseEvent(schoolId, i % 3 === 0 ? "course.created" : "course.updated", i));
    await hubFor(env, schoolId).publish(events.slice(0, 5));
    await hubFor(env, schoolId).publish(events.slice(5));
    await drain(schoolId);
    const { res, status, body } = await feed(key);
    expect(status).toBe(200);
    expect(body.result.map((e) => e.id)).toEqual(events.map((e) => e.id));
    // The same bytes as delivered: the feed's page text holds each delivered body verbatim.
    const text = JSON.stringify(body.result);
    for (const r of rx.to("feed-rx.example.com")) expect(text).toContain(r.body);
    expect(body.pagination).toEqual({ limit: 100, hasMore: false, nextCursor: expect.stringMatching(/^c1\./) });
    expect(res.headers.get("content-type")).toMatch(/application\/json/);
    // Reading on from the last cursor: an empty page, with a cursor still.
    const empty = await feed(key, `?after=${body.pagination.nextCursor}`);
    expect(empty.body.result).toEqual([]);
    expect(empty.body.pagination.nextCursor).toMatch(/^c1\./);
  });

  it("pages with limit and hasMore; filters by eventType and since; leaves webhook.test out", async () => {
    const { schoolId, key } = await newSchool("feedq");
    const hook = await register(key, "https://feedq.example.com/in");
    const early = Array.from({ length: 4 }, (_, i) => courseEvent(schoolId, "course.created", i));
    await hubFor(env, schoolId).publish(early);
    const mid = new Date(Date.now() + 5).toISOString();
    await new Promise((r) => setTimeout(r, 10));
    const late = Array.from({ length: 4 }, (_, i) => courseEvent(schoolId, "course.updated", 10 + i));
    await hubFor(env, schoolId).publish(late);
    expect((await callJson(`/v3/webhooks/${hook.id}/test`, { method: "POST", key })).status).toBe(202);
    const all = await readAll(key, 8, undefined, 3);
    expect(all.ids).toEqual([...early, ...late].map((e) => e.id));
    const created = await feed(key, "?eventType=course.created");
    expect(created.body.result.map((e) => e.id)).toEqual(early.map((e) => e.id));
    const since = await feed(key, `?since=${mid}`);
    expect(since.body.result.map((e) => e.id)).toEqual(late.map((e) => e.id));
    const first = await feed(key, "?limit=2");
    expect(first.body.pagination.hasMore).toBe(true);
  });

  it("answers bad queries in the envelope: malformed cursor, both after and since, unknown type, expired cursor", async () => {
    const { key } = await newSchool("feedbad");
    const bad = await feed(key, "?after=nope");
    expect([bad.status, bad.body.code]).toEqual([400, "INVALID_PARAMETER"]);
    const both = await feed(key, `?after=${encodeCursor({ seq: 1, at: Date.now() })}&since=2026-01-01T00:00:00Z`);
    expect([both.status, both.body.code]).toEqual([400, "INVALID_PARAMETER"]);
    const type = await feed(key, "?eventType=course.nope");
    expect([type.status, type.body.code]).toEqual([400, "INVALID_PARAMETER"]);
    const wait = await feed(key, "?wait=26");
    expect([wait.status, wait.body.code]).toEqual([400, "INVALID_PARAMETER"]);
    const old = await feed(key, `?after=${encodeCursor({ seq: 1, at: Date.now() - 8 * 86_400_000 })}`);
    expect([old.status, old.body.code]).toEqual([410, "CURSOR_EXPIRED"]);
    const unknown = await feed(key, "?page=2");
    expect([unknown.status, unknown.body.code]).toEqual([400, "UNKNOWN_PARAMETER"]);
  });

  it("a waiting read returns with the next accepted event, woken by the publish alone (virtual time stands still)", async () => {
    // On a virtual clock the wait's timeout never fires by itself: only a publish can end it.
    rx.restore();
    const sim = SimulatedPlatform.virtual().install();
    try {
      const { schoolId, key } = await newSchool("feedwait");
      const { cursor } = await readAll(key, 0);
      let page: Page | undefined;
      const waiting = feed(key, `?after=${cursor}&wait=25`).then((p) => (page = p));
      // The read is waiting: its 25 s timer is set in the hub, on the virtual clock.
      await eventually(() => sim.pendingTimers("hub").includes(sim.clock.now() + 25_000), "the read to wait");
      expect(page).toBeUndefined();
      const event = courseEvent(schoolId, "course.created", 1);
      await hubFor(env, schoolId).publish([event]);
      await eventually(() => page !== undefined, "the publish to wake the waiting read");
      await waiting;
      expect(page!.status).toBe(200);
      expect(page!.body.result.map((e) => e.id)).toEqual([event.id]);
      // Woken, not timed out: no simulated time passed, and its timer is gone.
      expect(sim.pendingTimers("hub")).toEqual([]);
    } finally {
      sim.restore();
      rx.install();
    }
  });

  it("property: interleaved writes, reads and hub resets — every event exactly once, in order", async () => {
    const { schoolId, key } = await newSchool("feedprop");
    const published: SchoolEvent[] = [];
    const read: string[] = [];
    let cursor: string | undefined;
    let n = 0;
    const op = fc.oneof(
      fc.record({ kind: fc.constant("write" as const), count: fc.integer({ min: 1, max: 6 }) }),
      fc.record({ kind: fc.constant("read" as const), limit: fc.integer({ min: 1, max: 5 }) }),
      fc.record({ kind: fc.constant("reset" as const) }),
    );
    await fc.assert(
      fc.asyncProperty(fc.array(op, { minLength: 1, maxLength: 12 }), async (ops) => {
        for (const o of ops) {
          if (o.kind === "write") {
            const events = Array.from({ length: o.count }, () => courseEvent(schoolId, "course.updated", n++));
            published.push(...events);
            await hubFor(env, schoolId).publish(events);
          } else if (o.kind === "read") {
            const page = await feed(key, `?limit=${o.limit}${cursor ? `&after=${cursor}` : ""}`);
            read.push(...page.body.result.map((e) => e.id));
            cursor = page.body.pagination.nextCursor;
          } else {
            await resetHub(schoolId);
          }
        }
        const rest = await readAll(key, published.length - read.length, cursor);
        read.push(...rest.ids);
        cursor = rest.cursor;
        expect(read).toEqual(published.map((e) => e.id));
      }),
      { numRuns: 12, seed: 2026 },
    );
  });
});
