/**
 * The sweep's choice of schools cannot starve (docs/architecture.md § The outbox,
 * docs/operations.md § The cron sweep): it reads only schools with due rows, through indexes
 * (`outbox_schools`, kept by the outbox's triggers), so any number of schools backing off
 * takes no place before a school whose rows are due; and every statement of a sweep, the
 * triggers' recounts included, reads through an index (EXPLAIN QUERY PLAN: no SCAN of a
 * table, no temp B-tree).
 */
import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { pruneOutbox, sweepOutbox } from "../../src/events/outbox";
import { recordingD1, refusedPlans } from "../support/d1-statements";
import { recordingHubs } from "../support/shards";
import { courseEvent } from "../support/webhooks/harness";

const hour = 3_600_000;
const later = Date.now() + hour;
const shard = () => env.SHARD_0;

/** `n` unpublished rows, one per school `${prefix}_0000`…, written an hour before `later`, failed `attempts` times and waiting until `retryAt` (0: never failed). */
async function rowsOfSchools(prefix: string, n: number, retryAt: number, attempts: number): Promise<void> {
  const events = Array.from({ length: n }, (_, i) => courseEvent(`${prefix}_${String(i).padStart(4, "0")}`, "course.updated", i));
  // 200 a statement: one bound value stays far below D1's 2,000,000 bytes.
  for (let i = 0; i < n; i += 200) {
    await shard()
      .prepare(
        `INSERT INTO outbox (event_id, school_id, payload, created_at, attempts, retry_at)
         SELECT json_extract(value, '$.id'), json_extract(value, '$.schoolId'), value, ?, ?, ? FROM json_each(?)`,
      )
      .bind(later - hour, attempts, retryAt, JSON.stringify(events.slice(i, i + 200)))
      .run();
  }
}

const unpublished = async (schoolId: string) =>
  (await shard().prepare("SELECT count(*) AS n FROM outbox WHERE school_id = ? AND published_at IS NULL").bind(schoolId).first<{ n: number }>())!.n;

describe("the sweep's choice of schools", () => {
  it("1,001 schools backing off, sorting before a school with a due row: that school is swept in the next run", async () => {
    // Each of them failed once and waits until an hour after the sweep.
    await rowsOfSchools("sch_backoff", 1_001, later + hour, 1);
    await rowsOfSchools("sch_zdue", 1, 0, 0);
    const published: string[] = [];
    expect(await sweepOutbox(recordingHubs(published), later)).toMatchObject({ schools: 1, republished: 1, failed: 0 });
    expect(published).toEqual(["sch_zdue_0000"]);
    expect(await unpublished("sch_zdue_0000")).toBe(0);
    expect(await unpublished("sch_backoff_1000")).toBe(1);
    // Once their back-off ends, they are due in turn: 50 schools per shard and run, as before.
    expect(await sweepOutbox(recordingHubs(published), later + hour)).toMatchObject({ schools: 50, republished: 50 });
  });

  it("a school with a due row and rows backing off is chosen once, by its due row; a school with no unpublished row is not chosen", async () => {
    const events = Array.from({ length: 3 }, (_, i) => courseEvent("sch_mixed", "course.updated", i));
    await shard()
      .prepare(
        "INSERT INTO outbox (event_id, school_id, payload, created_at, attempts, retry_at) SELECT json_extract(value, '$.id'), 'sch_mixed', value, ?, 1, ? + 10 * key FROM json_each(?)",
      )
      .bind(later - 2 * hour, later - 1, JSON.stringify(events))
      .run();
    await rowsOfSchools("sch_fresh", 1, 0, 0);
    const published: string[] = [];
    // sch_fresh's never-failed row leads; sch_mixed's first failed row is due, its next two not yet.
    expect(await sweepOutbox(recordingHubs(published), later)).toMatchObject({ schools: 2, republished: 2, failed: 0 });
    expect(published).toEqual(["sch_fresh_0000", "sch_mixed"]);
    expect(await sweepOutbox(recordingHubs(published), later)).toMatchObject({ schools: 0 });
    expect(await sweepOutbox(recordingHubs(published), later + 19)).toMatchObject({ schools: 1, republished: 2 });
    expect(await unpublished("sch_mixed")).toBe(0);
  });
});

describe("the sweep's statements read through indexes", () => {
  it("choosing schools, reading and marking their rows, backing off, pruning: no SCAN of a table, no temp B-tree", async () => {
    await rowsOfSchools("sch_plan_ok", 3, 0, 0);
    await rowsOfSchools("sch_plan_down", 2, later - 1, 2);
    const { db, sent } = recordingD1(shard());
    const flaky = recordingHubs([], { SHARD_0: db });
    const SCHOOL_HUB = {
      idFromName: (name: string) => ({ name }),
      get: ({ name }: { name: string }) => ({
        publish: async () => {
          if (name.startsWith("sch_plan_down")) throw new Error("down");
          return {};
        },
      }),
    };
    expect(await sweepOutbox({ ...flaky, SCHOOL_HUB } as unknown as typeof env, later)).toMatchObject({ republished: 3, failed: 2 });
    await pruneOutbox(db, later);
    expect(new Set(sent.map((s) => s.sql.trim().split(/\s/)[0]))).toEqual(new Set(["SELECT", "UPDATE", "DELETE"]));
    expect(await refusedPlans(shard(), sent)).toEqual([]);
    // A slice's payloads: one seek of the primary key per id, never a walk of the unpublished rows.
    const read = sent.find((s) => /SELECT event_id, payload FROM outbox/.test(s.sql))!;
    const plan = await shard()
      .prepare(`EXPLAIN QUERY PLAN ${read.sql}`)
      .bind(...read.values)
      .all<{ detail: string }>();
    expect(plan.results.map((r) => r.detail)).toContain("SEARCH outbox USING INDEX sqlite_autoindex_outbox_1 (event_id=?)");
  });

  it("the triggers that keep outbox_schools: each recount is a seek of the partial index", async () => {
    const recount = [
      "SELECT min(o.created_at) FROM outbox AS o WHERE o.school_id = $school AND o.published_at IS NULL AND o.retry_at = 0",
      "SELECT min(o.retry_at) FROM outbox AS o WHERE o.school_id = $school AND o.published_at IS NULL AND o.retry_at > 0",
    ];
    const { results } = await shard()
      .prepare("SELECT name, sql FROM sqlite_master WHERE type = 'trigger' AND name LIKE 'outbox_schools_%'")
      .all<{ name: string; sql: string }>();
    expect(results.map((r) => r.name).sort()).toEqual(["outbox_schools_delete", "outbox_schools_insert", "outbox_schools_update"]);
    // The recounts read below are the update and delete triggers' own statements.
    const body = (name: string) => results.find((r) => r.name === name)!.sql.replaceAll("`", "");
    for (const q of recount) {
      expect(body("outbox_schools_update")).toContain(q.replace("$school", "new.school_id"));
      expect(body("outbox_schools_delete")).toContain(q.replace("$school", "old.school_id"));
    }
    for (const q of recount.map((r) => r.replace("$school", "?"))) {
      const plan = await shard().prepare(`EXPLAIN QUERY PLAN ${q}`).bind("sch_x").all<{ detail: string }>();
      expect(plan.results.map((r) => r.detail)).toEqual([
        expect.stringMatching(/^SEARCH o USING (COVERING )?INDEX outbox_unpublished_school_idx \(school_id=\? AND retry_at[=>]\?\)$/),
      ]);
    }
  });
});
