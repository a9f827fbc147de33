/**
 * The school's events as its feed serves them (docs/reference.md § "Events feed: GET /v3/events"):
 * where tests read a write's events, since a published outbox row keeps no payload.
 */
import { expect } from "vitest";
import type { SchoolEvent } from "../../src/events/types";
import { callJson } from "./helpers";

/** Every event of the key's school in the feed, in acceptance order, page by page (100 a page). */
export async function feedEvents(key: string): Promise<SchoolEvent[]> {
  const events: SchoolEvent[] = [];
  let after = "";
  for (;;) {
    const page = await callJson(`/v3/events?limit=100${after ? `&after=${after}` : ""}`, { key });
    expect(page.status).toBe(200);
    events.push(...(page.body.result as SchoolEvent[]));
    after = page.body.pagination.nextCursor;
    if (!page.body.pagination.hasMore) return events;
  }
}
