/**
 * The cron within one invocation's limits (docs/architecture.md § The outbox; docs/operations.md
 * § The cron sweep): each `scheduled` run sends at most 1,000 D1 queries on Workers Paid and
 * 50 queries and subrequests on Free, runs every prune first, and a backlog drains over
 * several runs, each row published once; a school whose back-off ended is taken in the order
 * its row fell due, never after schools whose rows fell due later. Queries and hub calls are
 * counted here, at the bindings, independently of the Worker's own count.
 */
import { createExecutionContext, createScheduledController, env, waitOnExecutionContext } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { sweepOutbox } from "../../src/events/outbox";
import worker from "../../src/index";
import { recordingHubs } from "../support/shards";

const hour = 3_600_000;
const SHARDS = ["SHARD_0", "SHARD_1"] as const;

/** What one run sent: statements per D1 binding (their SQL), hub calls and the ids they carried. */
interface Counted {
  statements: string[];
  calls: number;
  published: string[];
}

/** `db` (a binding or a session) pushing the SQL of each statement it runs into `into` (a batch: each of its statements; `exec`: its text). */
function counting<D extends object>(db: D, into: string[]): D {
  const statement = (s: D1PreparedStatement, sql: string): D1PreparedStatement =>
    new Proxy(s, {
      get(t, p) {
        if (p === "bind") return (...v: unknown[]) => statement(t.bind(...v), sql);
        if (p === "first" || p === "all" || p === "run" || p === "raw") {
          return (...a: unknown[]) => {
            into.push(sql);
            return (t[p] as (...x: unknown[]) => unknown).apply(t, a);
          };
        }
        if (p === "inner") return t;
        if (p === "sql") return sql;
        const v = Reflect.get(t, p, t);
        return typeof v === "function" ? v.bind(t) : v;
      },
    });
  return new Proxy(db, {
    get(t, p) {
      const target = t as unknown as D1Database;
      if (p === "prepare") return (sql: string) => statement(target.prepare(sql), sql);
      if (p === "batch") {
        return (list: D1PreparedStatement[]) => {
          const own = list as unknown as { inner: D1PreparedStatement; sql: string }[];
          into.push(...own.map((s) => s.sql));
          return target.batch(own.map((s) => s.inner));
        };
      }
      if (p === "exec") {
        return (sql: string) => {
          into.push(sql);
          return target.exec(sql);
        };
      }
      if (p === "withSession") return (...a: Parameters<D1Database["withSession"]>) => counting(target.withSession(...a), into);
      const v = Reflect.get(t, p, t);
      return typeof v === "function" ? v.bind(t) : v;
    },
  });
}

/** One `scheduled` run at `scheduledTime` on `plan`, its D1 bindings and hubs counted. */
async function cronRun(plan: "paid" | "free", scheduledTime: number): Promise<Counted> {
  const counted: Counted = { statements: [], calls: 0, published: [] };
  const SCHOOL_HUB = {
    idFromName: (name: string) => ({ name }),
    get: () => ({
      publish: async (events: { id: string }[]) => {
        counted.calls += 1;
        counted.published.push(...events.map((e) => e.id));
        return {};
      },
    }),
  };
  const bindings = Object.fromEntries(
    ["DIRECTORY", ...SHARDS].map((b) => [b, counting((env as unknown as Record<string, D1Database>)[b]!, counted.statements)]),
  );
  const testEnv = { ...recordingHubs([]), ...bindings, SCHOOL_HUB, WORKERS_PLAN: plan } as unknown as typeof env;
  const exec = createExecutionContext();
  await worker.scheduled(createScheduledController({ scheduledTime, cron: "* * * * *" }), testEnv, exec);
  await waitOnExecutionContext(exec);
  return counted;
}

/** `rows` unpublished rows for each of `schools` schools of `shard` (`${prefix}_${shard}_NN`), written an hour ago. */
async function backlog(prefix: string, schools: number, rows: number): Promise<void> {
  for (const shard of SHARDS) {
    for (let s = 0; s < schools; s++) {
      const school = `${prefix}_${shard}_${String(s).padStart(2, "0")}`;
      await (env as unknown as Record<string, D1Database>)
        [shard]!.prepare(
          `WITH RECURSIVE k(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM k WHERE i < ?2 - 1)
         INSERT INTO outbox (event_id, school_id, payload, created_at)
         SELECT printf('evt_%s_%05d', ?1, i), ?1,
           json_object('id', printf('evt_%s_%05d', ?1, i), 'type', 'course.updated', 'createdAt', '2026-09-01T08:00:00.000Z', 'schoolId', ?1,
             'data', json_object('course', json_object('id', printf('crs_%05d', i), 'name', printf('Cours %d', i)))),
           ?3 + i FROM k`,
        )
        .bind(school, rows, Date.now() - hour)
        .run();
    }
  }
}

/** Rows published 8 days ago on each shard (for the outbox's prune). */
async function publishedLongAgo(n: number): Promise<void> {
  const old = Date.now() - 8 * 24 * hour;
  for (const shard of SHARDS) {
    await (env as unknown as Record<string, D1Database>)
      [shard]!.prepare(
        `WITH RECURSIVE k(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM k WHERE i < ?1 - 1)
       INSERT INTO outbox (event_id, school_id, payload, created_at, published_at) SELECT printf('evt_old_%05d', i), 'sch_old', '', ?2, ?2 FROM k`,
      )
      .bind(n, old)
      .run();
  }
}

const unpublished = async () => {
  let n = 0;
  for (const shard of SHARDS) {
    n += (await (env as unknown as Record<string, D1Database>)
      [shard]!.prepare("SELECT count(*) AS n FROM outbox WHERE published_at IS NULL")
      .first<{ n: number }>())!.n;
  }
  return n;
};

/** The prunes a run must send: three per shard, the directory's two. */
const PRUNES = [/DELETE FROM idempotency_keys/, /DELETE FROM event_bytes/, /DELETE FROM outbox/, /DELETE FROM portal_sessions/];

/** Runs the cron a minute apart until the backlog is drained (at most `most` runs); each run's counts. */
async function drain(plan: "paid" | "free", most: number): Promise<Counted[]> {
  const runs: Counted[] = [];
  // The first run on the hour: PRAGMA optimize on every database as well.
  let at = Date.UTC(2026, 10, 28, 12, 0);
  while (runs.length < most && (await unpublished()) > 0) {
    runs.push(await cronRun(plan, at));
    at += 60_000;
  }
  return runs;
}

/** Every prune ran in run `i`: each of PRUNES, and the three shard prunes on each of the 2 shards. */
function expectEveryPrune(statements: readonly string[], i: number): void {
  for (const prune of PRUNES)
    expect(
      statements.some((s) => prune.test(s)),
      `run ${i}: ${prune}`,
    ).toBe(true);
  expect(
    statements.filter((s) => /DELETE FROM (idempotency_keys|event_bytes|outbox)/.test(s)),
    `run ${i}: the shards' prunes`,
  ).toHaveLength(6);
}

describe("the cron within one invocation's limits", () => {
  it("Workers Paid: 2 shards × 50 schools × 1,000 due rows drain over several runs, each under 1,000 queries and 10,000 subrequests, every prune in each, every row published once", async () => {
    await backlog("sch_paid", 50, 1_000);
    await publishedLongAgo(10);
    const runs = await drain("paid", 10);
    for (const [i, run] of runs.entries()) {
      expect(run.statements.length, `run ${i}: D1 queries`).toBeLessThanOrEqual(1_000);
      expect(run.statements.length + run.calls, `run ${i}: subrequests`).toBeLessThanOrEqual(10_000);
      expectEveryPrune(run.statements, i);
    }
    expect(await unpublished()).toBe(0);
    expect(runs.length).toBeGreaterThan(1);
    expect(runs[0]!.statements.filter((s) => s === "PRAGMA optimize")).toHaveLength(3);
    const published = runs.flatMap((r) => r.published);
    expect(published).toHaveLength(100_000);
    expect(new Set(published).size).toBe(100_000);
    const left = await env.SHARD_0.prepare("SELECT count(*) AS n FROM outbox WHERE school_id = 'sch_old'").first<{ n: number }>();
    expect(left!.n).toBe(0);
  }, 300_000);

  it("Workers Free: 2 shards × 50 schools × 10 due rows drain over several runs, each under 50 queries and 50 subrequests, every prune in each, every row published once", async () => {
    await backlog("sch_free", 50, 10);
    const runs = await drain("free", 60);
    for (const [i, run] of runs.entries()) {
      expect(run.statements.length + run.calls, `run ${i}: queries and calls`).toBeLessThanOrEqual(50);
      expectEveryPrune(run.statements, i);
    }
    expect(await unpublished()).toBe(0);
    expect(runs.length).toBeGreaterThan(1);
    const published = runs.flatMap((r) => r.published);
    expect(published).toHaveLength(1_000);
    expect(new Set(published).size).toBe(1_000);
  }, 300_000);
});

describe("the cron's prunes", () => {
  it("each is one statement of at most 5,000 rows a run: 5,001 expired idempotency keys and old published outbox rows take two runs", async () => {
    const old = Date.now() - 8 * 24 * hour;
    await env.SHARD_0.prepare(
      `WITH RECURSIVE k(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM k WHERE i < 5000)
       INSERT INTO idempotency_keys (school_id, key, request_hash, status, body, created_at) SELECT 'sch_prune', printf('key_%05d', i), 'h', 201, '{}', ?1 FROM k`,
    )
      .bind(old)
      .run();
    await env.SHARD_0.prepare(
      `WITH RECURSIVE k(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM k WHERE i < 5000)
       INSERT INTO outbox (event_id, school_id, payload, created_at, published_at) SELECT printf('evt_prune_%05d', i), 'sch_prune', '', ?1, ?1 FROM k`,
    )
      .bind(old)
      .run();
    const left = async () => [
      (await env.SHARD_0.prepare("SELECT count(*) AS n FROM idempotency_keys WHERE school_id = 'sch_prune'").first<{ n: number }>())!.n,
      (await env.SHARD_0.prepare("SELECT count(*) AS n FROM outbox WHERE school_id = 'sch_prune'").first<{ n: number }>())!.n,
    ];
    await cronRun("paid", Date.UTC(2026, 10, 28, 12, 1));
    expect(await left()).toEqual([1, 1]);
    await cronRun("paid", Date.UTC(2026, 10, 28, 12, 2));
    expect(await left()).toEqual([0, 0]);
  });
});

describe("the sweep's order of schools in a wide incident", () => {
  it("schools whose back-off ended are taken in the order their rows fell due: before schools whose rows fell due later, after those due earlier", async () => {
    const now = Date.now() + hour;
    const rows = async (prefix: string, n: number, createdAt: number, retryAt: number) => {
      for (let i = 0; i < n; i++) {
        const school = `${prefix}_${String(i).padStart(2, "0")}`;
        await env.SHARD_0.prepare(
          "INSERT INTO outbox (event_id, school_id, payload, created_at, attempts, retry_at) VALUES (?1, ?2, json_object('id', ?1, 'schoolId', ?2), ?3, ?4, ?5)",
        )
          .bind(`evt_${school}`, school, createdAt, retryAt === 0 ? 0 : 1, retryAt)
          .run();
      }
    };
    // Due 20 min ago (never failed); back-off ended 10 min ago (written long before); due 4.5 min ago.
    await rows("sch_early", 30, now - 20 * 60_000 - 30_000, 0);
    await rows("sch_backoff", 50, now - 2 * hour, now - 10 * 60_000);
    await rows("sch_late", 50, now - 5 * 60_000, 0);
    const taken: string[] = [];
    const kinds = () => taken.splice(0).map((s) => s.replace(/_\d+$/, ""));
    const count = (list: string[]) => Object.fromEntries([...new Set(list)].map((k) => [k, list.filter((x) => x === k).length]));
    expect(await sweepOutbox(recordingHubs(taken), now)).toMatchObject({ schools: 50, republished: 50, failed: 0 });
    expect(count(kinds())).toEqual({ sch_early: 30, sch_backoff: 20 });
    expect(await sweepOutbox(recordingHubs(taken), now)).toMatchObject({ schools: 50, republished: 50, failed: 0 });
    expect(count(kinds())).toEqual({ sch_backoff: 30, sch_late: 20 });
  });
});
