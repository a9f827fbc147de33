/**
 * Event ids sort in the order the feed lists them, within one write too (docs/reference.md §
 * Conventions: ids are time-sortable; § "Events feed": acceptance order): a PATCH that signs
 * many professors publishes `course.updated` then one `course.professor_signed` each, all
 * of one instant, and their ids must increase in that order.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { mintOrderedIds } from "../../src/lib/ids";
import { callJson, loadFixture } from "../support/helpers";
import { newSchool, register } from "../support/webhooks/harness";
import { SimulatedPlatform } from "../support/webhooks/platform-sim";

const rx = new SimulatedPlatform();
beforeAll(() => rx.install());
afterAll(() => rx.restore());

const PROFESSORS = 20;
const WRITES = 10;

type FeedItem = { id: string; type: string; data: { course: { id: string; version: number } } };

/** Every event of the school's feed, in its order. */
async function wholeFeed(key: string): Promise<FeedItem[]> {
  const items: FeedItem[] = [];
  let cursor: string | undefined;
  for (;;) {
    const { status, body } = await callJson(`/v3/events?limit=100${cursor ? `&after=${cursor}` : ""}`, { key });
    expect(status).toBe(200);
    items.push(...body.result);
    cursor = body.pagination.nextCursor;
    if (!body.pagination.hasMore) return items;
  }
}

describe("event ids of one write", () => {
  it(`${WRITES} PATCHes signing ${PROFESSORS} professors: each write's ids increase in feed order`, async () => {
    const { schoolId, key } = await newSchool("evtorder");
    const ids = Array.from({ length: PROFESSORS }, (_, i) => `prf_${String(i + 1).padStart(2, "0")}`);
    await loadFixture({ professors: ids.map((id) => ({ id, schoolId, firstName: "P", lastName: id, email: `${id}@example.org` })) });
    await register(key, "https://event-order.example.com/in");
    const professors = (signed: boolean) => ids.map((professorId) => ({ professorId, signed }));
    const created = await callJson("/v3/courses", {
      method: "POST",
      key,
      json: { name: "Ordre", startDateTime: "2026-10-01T10:00:00Z", endDateTime: "2026-10-01T12:00:00Z", professors: professors(false) },
    });
    expect(created.status).toBe(201);
    for (let w = 0; w < WRITES; w++) {
      for (const signed of [true, false]) {
        const { status } = await callJson(`/v3/courses/${created.body.result.id}`, { method: "PATCH", key, json: { professors: professors(signed) } });
        expect(status).toBe(200);
      }
    }

    const feed = await wholeFeed(key);
    // One course.created, then per round: 1 + PROFESSORS events signing, 1 unsigning.
    expect(feed).toHaveLength(1 + WRITES * (PROFESSORS + 2));
    // The events of one write carry the same course version.
    const byWrite = new Map<number, FeedItem[]>();
    for (const e of feed) byWrite.set(e.data.course.version, [...(byWrite.get(e.data.course.version) ?? []), e]);
    const signingWrites = [...byWrite.values()].filter((events) => events.length === PROFESSORS + 1);
    expect(signingWrites).toHaveLength(WRITES);
    for (const events of byWrite.values()) {
      const inFeedOrder = events.map((e) => e.id);
      expect(inFeedOrder).toEqual([...inFeedOrder].sort());
    }
  });
});

describe("mintOrderedIds", () => {
  it("1,000 batches of 64 ids of one instant: each batch strictly increasing, well-formed, carries included", () => {
    for (let run = 0; run < 1000; run++) {
      const batch = mintOrderedIds("evt", 64, 1_790_000_000_000);
      for (const id of batch) expect(id).toMatch(/^evt_[0-9A-HJKMNP-TV-Z]{26}$/);
      for (let i = 1; i < batch.length; i++) expect(batch[i - 1]! < batch[i]!).toBe(true);
    }
  });
});
