/**
 * A feed page is bounded by bytes as well as by count (docs/reference.md §
 * "Events feed: GET /v3/events": at most 4,000,000 bytes of events per page, at least one event): events of imported courses
 * with long id lists, `limit` of which weigh more than that, come back over several pages —
 * every event exactly once, in order, each page within the bound — with or without a type
 * filter, `hasMore` true on every page but the last.
 */
import { env } from "cloudflare:workers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { hubFor } from "../../src/events/hub-client";
import type { SchoolEvent } from "../../src/events/types";
import { callJson } from "../support/helpers";
import { courseEvent, newSchool } from "../support/webhooks/harness";
import { SimulatedPlatform } from "../support/webhooks/platform-sim";

const rx = new SimulatedPlatform();
beforeAll(() => {
  rx.install();
});
afterAll(() => rx.restore());

/** The contract's bound on one page's events, in bytes (docs/reference.md § Events feed). */
const PAGE_BYTES = 4_000_000;
const utf8 = (s: string) => new TextEncoder().encode(s).length;

/** A course event of an imported course with `groups` group ids (no list cap on imports): about 62 bytes per id. */
function heavyEvent(schoolId: string, n: number, groups: number): SchoolEvent {
  const event = courseEvent(schoolId, n % 2 === 0 ? "course.updated" : "course.created", n);
  const course = event.data.course as { groupIds: string[] };
  course.groupIds = Array.from({ length: groups }, (_, i) => `grp_${n}_${String(i).padStart(6, "0")}_${"x".repeat(40)}`);
  return event;
}

type Page = { result: { id: string }[]; pagination: { hasMore: boolean; nextCursor: string } };

/** Reads the whole feed with `query` (limit 100), page after page; each page's ids and byte size. */
async function readPages(key: string, query: string): Promise<{ ids: string[]; bytes: number; hasMore: boolean }[]> {
  const pages: { ids: string[]; bytes: number; hasMore: boolean }[] = [];
  let after = "";
  for (let n = 0; n < 20; n++) {
    const { status, body } = (await callJson(`/v3/events?limit=100${query}${after}`, { key })) as { status: number; body: Page };
    expect(status).toBe(200);
    pages.push({
      ids: body.result.map((e) => e.id),
      bytes: body.result.reduce((sum, e) => sum + utf8(JSON.stringify(e)), 0),
      hasMore: body.pagination.hasMore,
    });
    after = `&after=${body.pagination.nextCursor}`;
    if (!body.pagination.hasMore) return pages;
  }
  throw new Error("the feed still has more after 20 pages");
}

describe("GET /v3/events with heavy events", () => {
  it("cuts pages at 4,000,000 bytes of events: every event once, in order, each page within the bound", async () => {
    const { schoolId, key } = await newSchool("feedbytes");
    // 12 events of about 730 KB: 8.7 MB (6 of each type: 4.4 MB), far under `limit` = 100 by count.
    const events = Array.from({ length: 12 }, (_, n) => heavyEvent(schoolId, n, 13_000));
    for (const event of events) expect(utf8(JSON.stringify(event))).toBeGreaterThan(700_000);
    for (let i = 0; i < events.length; i += 3) await hubFor(env, schoolId).publish(events.slice(i, i + 3));

    for (const [query, expected] of [
      ["", events],
      ["&eventType=course.updated", events.filter((e) => e.type === "course.updated")],
    ] as const) {
      const pages = await readPages(key, query);
      expect(
        pages.flatMap((p) => p.ids),
        query,
      ).toEqual(expected.map((e) => e.id));
      expect(pages.length, query).toBeGreaterThan(1);
      for (const page of pages) {
        expect(page.ids.length, query).toBeGreaterThan(0);
        expect(page.bytes, query).toBeLessThanOrEqual(PAGE_BYTES);
      }
      expect(
        pages.map((p) => p.hasMore),
        query,
      ).toEqual(pages.map((_, i) => i < pages.length - 1));
    }
  });
});
