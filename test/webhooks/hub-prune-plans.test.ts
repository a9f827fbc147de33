/**
 * The hub's alarm reads through indexes, a bounded number of rows per step
 * (docs/architecture.md § Bounded work and storage): every statement one alarm runs on the
 * hub's SQLite — pruning the log, its targets and idempotency keys, forgetting tombstones,
 * finding what is owed, arming the next pruning — is recorded and its EXPLAIN QUERY PLAN
 * read: no SCAN of a table (with or without an index: a full pass either way), no temp
 * B-tree. And pruning deletes exactly what is past the retention, 1,000 events per alarm.
 */
import { runDurableObjectAlarm } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { hubFor } from "../../src/events/hub-client";
import type { SchoolHub } from "../../src/webhooks/hub/school-hub";
import { callJson } from "../support/helpers";
import { inHub, newSchool, register } from "../support/webhooks/harness";
import { SimulatedPlatform } from "../support/webhooks/platform-sim";

const rx = new SimulatedPlatform();
beforeAll(() => {
  rx.install();
});
afterAll(() => rx.restore());

const DAY = 86_400_000;

/** Fills the hub's tables as months of use would: `old` events past the 7-day retention, `young` within it, their targets, keys, tombstones. */
function fill(sql: SqlStorage, hookId: string, old: number, young: number): void {
  const now = Date.now();
  sql.exec(
    `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?1)
     INSERT INTO events (id, type, body, created_at)
     SELECT 'evt_f' || i, 'course.updated', '{"pad":"' || hex(zeroblob(2000)) || '"}', CASE WHEN i <= ?2 THEN ?3 + i ELSE ?4 + i END FROM n`,
    old + young,
    old,
    now - 7 * DAY - 60_000 - (old + young),
    now - 7 * DAY + 60_000,
  );
  sql.exec(`INSERT INTO targets (webhook_id, seq) SELECT ?, seq FROM events`, hookId);
  sql.exec(`UPDATE webhooks SET acked_seq = (SELECT MAX(seq) FROM events) WHERE id = ?`, hookId);
  sql.exec(
    `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 3000)
     INSERT INTO idempotency_keys (key, request_hash, status, body, created_at) SELECT 'k' || i, 'h', 201, '{}', ?1 - (i % 2) * ?2 FROM n`,
    now,
    2 * DAY,
  );
}

describe("every statement of the hub's alarm", () => {
  it("reads through an index or a primary key: no SCAN of a table, no temp B-tree", async () => {
    const { schoolId, key } = await newSchool("plans");
    const kept = await register(key, "https://plans-kept.example.com/in");
    const doomed = await register(key, "https://plans-doomed.example.com/in");
    const gone = await register(key, "https://plans-gone.example.com/in");
    const late = await register(key, "https://plans-late.example.com/in");
    await inHub(schoolId, (_h, state) => fill(state.storage.sql, kept.id, 2500, 500));
    // A registration never handed the oldest 1,000: the pruning sums them for its notice.
    await inHub(schoolId, (_h, state) => {
      state.storage.sql.exec(`INSERT INTO targets (webhook_id, seq) SELECT ?, seq FROM events WHERE seq <= 1000`, late.id);
    });
    // A tombstone being forgotten (its targets remain), and one past the retention.
    await inHub(schoolId, (_h, state) => {
      state.storage.sql.exec(`INSERT INTO targets (webhook_id, seq) SELECT ?, seq FROM events`, doomed.id);
    });
    for (const hook of [doomed, gone]) expect((await callJson(`/v3/webhooks/${hook.id}`, { method: "DELETE", key })).status).toBe(200);
    await inHub(schoolId, (_h, state) => {
      state.storage.sql.exec(`DELETE FROM targets WHERE webhook_id = ?`, gone.id);
      state.storage.sql.exec(`UPDATE webhooks SET deleted_at = deleted_at - ? WHERE id = ?`, 8 * DAY, gone.id);
    });

    const plans = await inHub(schoolId, async (hub, state) => {
      const real = state.storage.sql;
      const own = ownSql(hub);
      const seen = new Map<string, unknown[]>();
      const recorder = {
        exec: (query: string, ...params: unknown[]) => {
          seen.set(query, params);
          return own.exec(query, ...params);
        },
      };
      setSql(hub, recorder as unknown as SqlStorage);
      try {
        // Two runs: the first prunes and forgets, the second finds less to do.
        await hub.alarm();
        await hub.alarm();
      } finally {
        setSql(hub, own);
      }
      return [...seen].map(([query, params]) => ({
        query,
        plan: real
          .exec<{ detail: string }>(`EXPLAIN QUERY PLAN ${query}`, ...params)
          .toArray()
          .map((r) => r.detail),
      }));
    });
    // The alarm pruned, forgot and armed (so each kind of statement was recorded).
    const queries = plans.map((p) => p.query).join("\n");
    expect(queries).toMatch(/DELETE FROM events/);
    expect(queries).toMatch(/DELETE FROM targets/);
    expect(queries).toMatch(/DELETE FROM idempotency_keys/);
    expect(queries).toMatch(/DELETE FROM webhooks/);
    expect(queries).toMatch(/INSERT INTO missed/);
    expect(queries).toMatch(/DELETE FROM change_spans/);
    for (const { query, plan } of plans) {
      // Allowed: the bound list itself (`json_each`) and a constant row (scalar subqueries).
      const scans = plan.filter((line) => /\bSCAN (?!json_each\b|CONSTANT ROW\b)|USE TEMP B-TREE/.test(line));
      expect(scans, `${query}\n${plan.join("\n")}`).toEqual([]);
    }
  });
});

describe("pruning", () => {
  it("deletes exactly the events older than 7 days with their targets, and the keys older than 24 h, 1,000 events per alarm", async () => {
    const { schoolId, key } = await newSchool("exact");
    const hook = await register(key, "https://exact.example.com/in");
    await inHub(schoolId, (_h, state) => fill(state.storage.sql, hook.id, 2500, 500));
    const counts = () =>
      inHub(schoolId, (_h, state) => {
        const sql = state.storage.sql;
        const n = (q: string) => sql.exec<{ n: number }>(q).one().n;
        return {
          events: n(`SELECT COUNT(*) AS n FROM events`),
          targets: n(`SELECT COUNT(*) AS n FROM targets`),
          keys: n(`SELECT COUNT(*) AS n FROM idempotency_keys`),
        };
      });
    const after: { events: number; targets: number; keys: number }[] = [];
    for (let run = 0; run < 4; run++) {
      await inHub(schoolId, (_h, state) => state.storage.setAlarm(Date.now()));
      expect(await runDurableObjectAlarm(hubFor(env, schoolId))).toBe(true);
      after.push(await counts());
    }
    expect(after).toEqual([
      { events: 2000, targets: 2000, keys: 2000 },
      { events: 1000, targets: 1000, keys: 1500 },
      { events: 500, targets: 500, keys: 1500 },
      { events: 500, targets: 500, keys: 1500 },
    ]);
    // The young ones are those left, every one of them.
    const left = await inHub(schoolId, (_h, state) =>
      state.storage.sql
        .exec<{ id: string }>(`SELECT id FROM events ORDER BY seq`)
        .toArray()
        .map((r) => r.id),
    );
    expect(left).toEqual(Array.from({ length: 500 }, (_, i) => `evt_f${2501 + i}`));
  });
});

/** The hub's own SQLite handle (its private field), which every statement of its alarm goes through. */
const ownSql = (hub: SchoolHub): SqlStorage => (hub as unknown as { sql: SqlStorage }).sql;
function setSql(hub: SchoolHub, sql: SqlStorage): void {
  (hub as unknown as { sql: SqlStorage }).sql = sql;
}
