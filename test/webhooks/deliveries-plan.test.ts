/**
 * GET /v3/webhooks/{id}/deliveries reads each page through indexes in its order
 * (docs/architecture.md § Bounded work and storage): for every combination of the filters the
 * endpoint accepts (status, eventType, eventId, since, until) and any page, the query plan
 * (EXPLAIN QUERY PLAN, on a courier's own storage) has no SCAN of the log, the queue or the
 * event copies and no temporary B-tree — no sort of the 7-day window — also when held
 * deliveries are shown waiting (`ordering: course`), and the recover's statement neither.
 */
import { describe, expect, it } from "vitest";
import { type LogFilter, logQuery, RECOVER_SQL } from "../../src/webhooks/courier/attempt-log";
import { inCourier, newSchool, ownStorage, register } from "../support/webhooks/harness";

/** Every combination of the five filters, each with a value the endpoint accepts. */
function everyFilter(now: number): LogFilter[] {
  const values: Required<LogFilter> = { status: "failed", eventType: "course.updated", eventId: "evt_x", since: now - 3_600_000, until: now };
  const keys = Object.keys(values) as (keyof LogFilter)[];
  return Array.from({ length: 2 ** keys.length }, (_, mask) =>
    Object.fromEntries(keys.filter((_k, i) => mask & (1 << i)).map((k) => [k, values[k]])),
  ) as LogFilter[];
}

const plan = (sql: SqlStorage, statement: string, params: unknown[]): string =>
  sql
    .exec<{ detail: string }>(`EXPLAIN QUERY PLAN ${statement}`, ...params)
    .toArray()
    .map((r) => r.detail)
    .join("\n");

describe("the delivery log's query plans", () => {
  it("no scan and no temporary B-tree for any filter combination and page, nor for the recover", async () => {
    const { key } = await newSchool("dplan");
    const hook = await register(key, "https://dplan.example.com/in");
    const now = Date.now();
    const filters = everyFilter(now);
    expect(filters).toHaveLength(32);
    await inCourier(hook.id, (courier) => {
      const sql = ownStorage(courier).sql;
      for (const filter of filters) {
        for (const [offset, limit, ordered] of [
          [0, 101, false],
          [400, 21, false],
          [0, 101, true],
        ] as const) {
          const q = logQuery(filter, now, offset, limit, ordered);
          const text = plan(sql, q.sql, q.params);
          const what = `${JSON.stringify(filter)} offset ${offset}${ordered ? " ordered" : ""}:\n${text}`;
          expect(text, what).not.toMatch(/\bSCAN\b/);
          expect(text, what).not.toMatch(/TEMP B-TREE/);
          // Both kinds of entries, merged in order.
          expect(text, what).toMatch(/MERGE \(UNION ALL\)/);
        }
      }
      // One event's entries come from its own index, in time order.
      const one = logQuery({ eventId: "evt_x" }, now, 0, 101);
      expect(plan(sql, one.sql, one.params)).toMatch(/log_event_at/);
      const recover = plan(sql, RECOVER_SQL, [0, 1, 0, 0, 200]);
      expect(recover, recover).not.toMatch(/\bSCAN\b|TEMP B-TREE/);
    });
  });
});
