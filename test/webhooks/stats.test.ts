/**
 * Delivery statistics (docs/reference.md § "Delivery statistics: GET /v3/webhooks/{id}/stats"): the
 * window and its defaults, buckets aligned on UTC hours and days with empty ones included,
 * counts that agree with the delivery log, a property test against an oracle written here,
 * the query plan, and every refusal in the contract's envelope.
 */
import { env } from "cloudflare:workers";
import fc from "fast-check";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { hubFor } from "../../src/events/hub-client";
import { LATENCY_SQL, latencyKey, latencyValue } from "../../src/webhooks/courier/latency";
import { STATS_SQL } from "../../src/webhooks/courier/stats";
import { PRUNE_START, pruneLog } from "../../src/webhooks/courier/storage";
import { callJson } from "../support/helpers";
import { drainByAlarms } from "../support/webhooks/alarms";
import { courierStub, courseEvent, drain, inCourier, inHub, newSchool, register } from "../support/webhooks/harness";
import { SimulatedPlatform } from "../support/webhooks/platform-sim";
import { withVirtualPlatform } from "../support/webhooks/virtual";

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
/** The delivery log keeps 7 days (docs/reference.md § Delivery log). */
const LOG_RETENTION_MS = 604_800_000;

const rx = new SimulatedPlatform();
beforeAll(() => rx.install());
afterAll(() => rx.restore());
afterEach(() => rx.expectWithinLimit());

type Percentiles = { p50: number; p95: number; p99: number } | null;
type Bucket = { start: string; succeeded: number; failed: number; pending: number; skipped: number; delayMs: Percentiles; durationMs: Percentiles };
type Stats = { since: string; until: string; bucket: "hour" | "day"; buckets: Bucket[] };

const stats = async (key: string, id: string, query = "") => {
  const { status, body } = await callJson(`/v3/webhooks/${id}/stats${query}`, { key });
  expect(status, JSON.stringify(body)).toBe(200);
  return body.result as Stats;
};

const iso = (ms: number) => new Date(ms).toISOString();
const window = (since: number, until: number, bucket?: string) => `?since=${iso(since)}&until=${iso(until)}${bucket === undefined ? "" : `&bucket=${bucket}`}`;

/** The nearest-rank q-quantile of `values` (the ⌈q·n⌉-th smallest). */
const nearestRank = (values: number[], q: number) => [...values].sort((a, b) => a - b)[Math.max(1, Math.ceil(q * values.length)) - 1]!;

/**
 * Asserts a bucket's percentiles against the exact latencies of its successes: `null` for
 * none, else each within 5 % of the nearest-rank value plus 0.5 ms (docs/reference.md §
 * "Delivery statistics").
 */
function expectPercentiles(got: Percentiles, exact: number[], what: string): void {
  if (exact.length === 0) {
    expect(got, what).toBeNull();
    return;
  }
  expect(got, what).not.toBeNull();
  for (const [q, at] of [
    ["p50", 0.5],
    ["p95", 0.95],
    ["p99", 0.99],
  ] as const) {
    const want = nearestRank(exact, at);
    expect(Math.abs(got![q] - want), `${what} ${q}: ${got![q]} vs ${want}`).toBeLessThanOrEqual(0.05 * want + 0.5);
  }
}

/** Log rows written straight into the registration's courier's storage, at chosen instants (ms). */
type Row = { at: number; status: "succeeded" | "failed" | "skipped" | "queued" };

async function seed(schoolId: string, webhookId: string, rows: Row[]): Promise<void> {
  // The hub reads a courier it never used as empty: mark it used, as a hand-over would.
  await inHub(schoolId, (_hub, state) => state.storage.sql.exec(`UPDATE webhooks SET courier = 1 WHERE id = ?`, webhookId));
  await inCourier(webhookId, (_courier, state) => {
    const sql = state.storage.sql;
    for (const [i, r] of rows.entries()) {
      const eventId = `evt_seed_${i}_${Math.random().toString(36).slice(2, 8)}`;
      sql.exec(`INSERT INTO events (id, type, body, accepted_at) VALUES (?, 'course.updated', '{}', ?)`, eventId, r.at);
      if (r.status === "queued") {
        // Far in the future, so that no alarm of the test attempts it.
        sql.exec(
          `INSERT INTO queue (event_id, event_type, trigger, attempts, next_attempt_at, created_at) VALUES (?, 'course.updated', 'event', 0, ?, ?)`,
          eventId,
          r.at + 365 * DAY,
          r.at,
        );
      } else {
        sql.exec(
          `INSERT INTO log (event_id, event_type, attempt, status, trigger, response_status, error, attempted_at, next_attempt_at)
           VALUES (?, 'course.updated', 1, ?, 'event', NULL, NULL, ?, NULL)`,
          eventId,
          r.status,
          r.at,
        );
      }
    }
  });
}

/** The oracle: the contract's buckets of `rows` over [since, until), computed the obvious way. */
function expected(rows: Row[], since: number, until: number, width: number, now: number): Bucket[] {
  const out: Bucket[] = [];
  for (let start = Math.floor(since / width) * width; start < until; start += width) {
    const inside = rows.filter((r) => r.at >= Math.max(start, since, now - LOG_RETENTION_MS) && r.at < Math.min(start + width, until));
    const n = (...s: Row["status"][]) => inside.filter((r) => s.includes(r.status)).length;
    // Seeded rows bypass the attempt's step: no latency is recorded for them.
    out.push({
      start: iso(start),
      succeeded: n("succeeded"),
      failed: n("failed"),
      pending: n("queued"),
      skipped: n("skipped"),
      delayMs: null,
      durationMs: null,
    });
  }
  return out;
}

describe("GET /v3/webhooks/{id}/stats", () => {
  it("counts real deliveries the way the log shows them: succeeded, failed (retried or not), skipped", async () => {
    const { schoolId, key } = await newSchool("sta");
    const host = "sta.example.com";
    const hook = await register(key, `https://${host}/in`);
    const hub = hubFor(env, schoolId);
    await hub.publish([courseEvent(schoolId, "course.created", 1), courseEvent(schoolId, "course.created", 2)]);
    await drain(schoolId);
    rx.on(host, 503); // retried: `failed` in the log and the stats alike
    await hub.publish([courseEvent(schoolId, "course.updated", 3)]);
    await drain(schoolId);
    rx.on(host, 410); // no retry: `failed` in both (and the registration is disabled: gone)
    await hub.publish([courseEvent(schoolId, "course.updated", 4)]);
    await drain(schoolId);
    await callJson(`/v3/webhooks/${hook.id}`, { method: "PATCH", key, json: { enabled: false } });
    await hub.publish([courseEvent(schoolId, "course.archived", 5)]);
    // The hand-over to the courier (which logs it skipped) follows the publish.
    await drain(schoolId);

    const asked = Date.now();
    const result = await stats(key, hook.id);
    const answered = Date.now();
    // The default window: the last 24 hours (ending at an instant between the call and its
    // answer), per hour, every hour that overlaps it.
    expect(result.bucket).toBe("hour");
    const since = Date.parse(result.since);
    const until = Date.parse(result.until);
    expect(until - since).toBe(DAY);
    expect(until).toBeGreaterThanOrEqual(asked);
    expect(until).toBeLessThanOrEqual(answered);
    expect(result.buckets).toHaveLength(Math.ceil((until - Math.floor(since / HOUR) * HOUR) / HOUR));
    expect(result.buckets.map((b) => Date.parse(b.start) % HOUR)).toEqual(result.buckets.map(() => 0));
    const total = (k: "succeeded" | "failed" | "pending" | "skipped") => result.buckets.reduce((n, b) => n + b[k], 0);
    expect({ succeeded: total("succeeded"), failed: total("failed"), pending: total("pending"), skipped: total("skipped") }).toEqual({
      succeeded: 2,
      failed: 2,
      pending: 0,
      skipped: 2, // the archived event, and the retry of the 503 that the disable dropped
    });
    const log = (await callJson(`/v3/webhooks/${hook.id}/deliveries`, { key })).body.result as { status: string }[];
    const logged = (s: string) => log.filter((e) => e.status === s).length;
    expect(total("succeeded")).toBe(logged("succeeded"));
    expect(total("failed")).toBe(logged("failed"));
    expect(total("skipped")).toBe(logged("skipped"));
    // Everything happened now: in the last bucket (or the one before, had the hour turned meanwhile).
    const recent = result.buckets.slice(-2).reduce((n, b) => n + b.succeeded + b.failed + b.pending + b.skipped, 0);
    expect(recent).toBe(6);
  });

  it("p50, p95, p99 of delay and duration match a receiver of known latency within 5 % (+0.5 ms); null without a success", async () => {
    await withVirtualPlatform(rx, async (sim) => {
      const host = "latency.example.com";
      const { schoolId, key } = await newSchool("stl");
      const hook = await register(key, `https://${host}/in`);
      // Event i is answered after 20·(i+1) ms of simulated time; every fourth fails its first
      // attempt (500), so that its delay holds the retry's wait (5 s and its jitter).
      const events = Array.from({ length: 40 }, (_, i) => courseEvent(schoolId, "course.updated", i));
      const answerMs = new Map(events.map((e, i) => [e.id, 20 * (i + 1)]));
      const failFirst = new Set(events.filter((_, i) => i % 4 === 0).map((e) => e.id));
      const seen = new Set<string>();
      sim.on(host, (req) => {
        const first = !seen.has(req.event.id);
        seen.add(req.event.id);
        return { status: first && failFirst.has(req.event.id) ? 500 : 200, afterMs: answerMs.get(req.event.id)! };
      });
      // The hub accepts the events at t0 (the virtual clock stands still during the call).
      const t0 = sim.clock.now();
      await hubFor(env, schoolId).publish(events);
      // The first attempts end within 3 s (6 at a time); their retries, due 5 s or more after
      // each failure, are the courier's alarm's: run it as the runtime would.
      await sim.advance(4_000);
      await drainByAlarms(sim, [courierStub(hook.id)], 60_000);

      // The known latencies, from the receiver's side: each success's answer instant minus t0.
      const ok = sim.to(host).filter((r, i, all) => !failFirst.has(r.event.id) || all.findIndex((x) => x.event.id === r.event.id) !== i);
      expect(ok.map((r) => r.event.id).sort()).toEqual(events.map((e) => e.id).sort());
      const since = Math.floor(t0 / HOUR) * HOUR - HOUR;
      const until = t0 + 2 * HOUR;
      const result = await stats(key, hook.id, window(since, until));
      expect(result.buckets).toHaveLength(4);
      // The hour before t0: nothing succeeded, no percentiles.
      expect(result.buckets[0]).toMatchObject({ succeeded: 0, delayMs: null, durationMs: null });
      for (const [k, b] of result.buckets.entries()) {
        const start = since + k * HOUR;
        const inside = ok.filter((r) => r.sentAt >= start && r.sentAt < start + HOUR);
        expect(b.succeeded, b.start).toBe(inside.length);
        expectPercentiles(
          b.delayMs,
          inside.map((r) => r.sentAt + answerMs.get(r.event.id)! - t0),
          `${b.start} delay`,
        );
        expectPercentiles(
          b.durationMs,
          inside.map((r) => answerMs.get(r.event.id)!),
          `${b.start} duration`,
        );
      }
      // The retried ones waited at least the 5 s of the schedule: p99 of the delay shows it.
      const delayP99 = Math.max(...result.buckets.map((b) => b.delayMs?.p99 ?? 0));
      expect(delayP99).toBeGreaterThanOrEqual(0.95 * 5_000);
    });
  });

  it("a resend's success counts its duration but no delay; histograms older than the retention are pruned", async () => {
    await withVirtualPlatform(rx, async (sim) => {
      const host = "latency-resend.example.com";
      const { schoolId, key } = await newSchool("str2");
      const hook = await register(key, `https://${host}/in`);
      // The first attempt is answered after 30 ms, the resend's after 300 ms.
      sim.on(host, (req) => ({ status: 200, afterMs: req.seq === sim.to(host)[0]!.seq ? 30 : 300 }));
      const event = courseEvent(schoolId, "course.updated", 1);
      const t0 = sim.clock.now();
      await hubFor(env, schoolId).publish([event]);
      await sim.advance(1_000);
      // Ten minutes later, a resend: its delay since the acceptance would be 600,300 ms or so.
      await sim.advance(600_000);
      expect((await callJson(`/v3/webhooks/${hook.id}/deliveries/${event.id}/resend`, { method: "POST", key })).status).toBe(202);
      await sim.advance(1_000);
      const [first, resent] = sim.to(host);
      expect(sim.to(host)).toHaveLength(2);
      const hour = Math.floor(t0 / HOUR) * HOUR;
      const got = await stats(key, hook.id, window(hour, hour + 2 * HOUR));
      expect(got.buckets.reduce((n, b) => n + b.succeeded, 0)).toBe(2);
      for (const [k, b] of got.buckets.entries()) {
        const inHour = (r: { sentAt: number }) => r.sentAt >= hour + k * HOUR && r.sentAt < hour + (k + 1) * HOUR;
        // The delay of the first only (sent at once: 30 ms); the durations of both.
        expectPercentiles(b.delayMs, inHour(first!) ? [first!.sentAt + 30 - t0] : [], `${b.start} delay`);
        expectPercentiles(b.durationMs, [...(inHour(first!) ? [30] : []), ...(inHour(resent!) ? [300] : [])], `${b.start} duration`);
      }

      // The courier's pruning drops the hours wholly older than the 7-day retention, and keeps the rest.
      const { old, left } = await inCourier(hook.id, (_courier, state) => {
        const sql = state.storage.sql;
        const now = sim.clock.now();
        // The hour wholly before the cutoff (now − 7 days), and the one that straddles it.
        const old = Math.floor((now - LOG_RETENTION_MS) / HOUR) * HOUR - HOUR;
        sql.exec(`INSERT INTO latency (hour, kind, key, n) VALUES (?, 'delay', 1, 1), (?, 'delay', 1, 1)`, old, old + HOUR);
        pruneLog(sql, now, PRUNE_START);
        return {
          old,
          left: sql
            .exec<{ hour: number }>(`SELECT DISTINCT hour FROM latency ORDER BY hour`)
            .toArray()
            .map((r) => r.hour),
        };
      });
      // The straddling hour stays (part of it is within the retention), and so do the recent ones.
      expect(left).not.toContain(old);
      expect(left).toContain(old + HOUR);
      expect(left).toContain(Math.floor(first!.sentAt / HOUR) * HOUR);
    });
  });

  it("the histogram's keys: every value of a key is within 5 % of what it reports (+0.5 ms), under 380 keys up to 2^53 ms", () => {
    // The bound docs/reference.md § "Delivery statistics" states, over every whole millisecond
    // up to 10^6 and random ones beyond (1e-9 of slack: floating-point rounding of the bound).
    const within = (ms: number) => Math.abs(Math.round(latencyValue(latencyKey(ms))) - ms) <= 0.05 * ms + 0.5 + 1e-9 * ms;
    const outside: number[] = [];
    for (let ms = 0; ms <= 1_000_000; ms++) if (!within(ms)) outside.push(ms);
    expect(outside).toEqual([]);
    fc.assert(fc.property(fc.integer({ min: 0, max: Number.MAX_SAFE_INTEGER }), within), { seed: 5, numRuns: 2_000 });
    expect(latencyKey(Number.MAX_SAFE_INTEGER)).toBeLessThan(380);
    expect(latencyKey(-5)).toBe(latencyKey(0));
  });

  it("buckets are aligned on UTC hours and days, oldest first, empty ones included, clipped to the window", async () => {
    const { schoolId, key } = await newSchool("stb");
    const hook = await register(key, "https://stb.example.com/in");
    const h0 = Math.floor(Date.now() / DAY) * DAY - 2 * DAY; // midnight UTC, two days ago
    await seed(schoolId, hook.id, [
      { at: h0 + 10 * 60_000, status: "succeeded" }, // 00:10, before the window
      { at: h0 + 30 * 60_000, status: "succeeded" }, // 00:30, in the window and the first bucket
      { at: h0 + 30 * 60_000, status: "failed" },
      { at: h0 + 2 * HOUR, status: "failed" },
      { at: h0 + 2 * HOUR + 59 * 60_000, status: "skipped" },
      { at: h0 + 3 * HOUR, status: "queued" }, // at `until`: outside
      { at: h0 + 2 * DAY - 1, status: "succeeded" },
    ]);
    const hourly = await stats(key, hook.id, window(h0 + 30 * 60_000, h0 + 3 * HOUR));
    expect(hourly).toEqual({
      since: iso(h0 + 30 * 60_000),
      until: iso(h0 + 3 * HOUR),
      bucket: "hour",
      buckets: [
        { start: iso(h0), succeeded: 1, failed: 1, pending: 0, skipped: 0, delayMs: null, durationMs: null },
        { start: iso(h0 + HOUR), succeeded: 0, failed: 0, pending: 0, skipped: 0, delayMs: null, durationMs: null },
        { start: iso(h0 + 2 * HOUR), succeeded: 0, failed: 1, pending: 0, skipped: 1, delayMs: null, durationMs: null },
      ],
    });
    const daily = await stats(key, hook.id, window(h0 + HOUR, h0 + 2 * DAY + HOUR, "day"));
    expect(daily.buckets).toEqual([
      { start: iso(h0), succeeded: 0, failed: 1, pending: 1, skipped: 1, delayMs: null, durationMs: null },
      { start: iso(h0 + DAY), succeeded: 1, failed: 0, pending: 0, skipped: 0, delayMs: null, durationMs: null },
      { start: iso(h0 + 2 * DAY), succeeded: 0, failed: 0, pending: 0, skipped: 0, delayMs: null, durationMs: null },
    ]);
    // Seven days per day: 7 or 8 buckets; seven days per hour: 168 or 169.
    const now = Date.now();
    expect((await stats(key, hook.id, window(now - 7 * DAY, now, "day"))).buckets.length).toBe(now % DAY === 0 ? 7 : 8);
    expect((await stats(key, hook.id, window(now - 7 * DAY, now))).buckets.length).toBe(now % HOUR === 0 ? 168 : 169);
  });

  it("agrees with an oracle on random logs, windows and bucket sizes (fast-check)", async () => {
    const { schoolId, key } = await newSchool("stp");
    const hook = await register(key, "https://stp.example.com/in");
    const now = Date.now();
    const statuses = ["succeeded", "failed", "skipped", "queued"] as const;
    // Rows over the last 9 days (some beyond the retention, which the stats must not count).
    const rows = fc.sample(fc.record({ at: fc.integer({ min: now - 9 * DAY, max: now }), status: fc.constantFrom(...statuses) }), {
      numRuns: 300,
      seed: 17,
    });
    await seed(schoolId, hook.id, rows);
    const cases = fc.sample(
      fc
        .record({ since: fc.integer({ min: now - 9 * DAY, max: now }), length: fc.integer({ min: 1, max: 7 * DAY }), day: fc.boolean() })
        .map((c) => ({ ...c, until: c.since + c.length })),
      { numRuns: 25, seed: 42 },
    );
    for (const c of cases) {
      // A window wholly before the 7-day retention is refused (nothing of it is kept).
      if (c.until <= Date.now() - 7 * DAY) {
        const refused = await callJson(`/v3/webhooks/${hook.id}/stats${window(c.since, c.until, c.day ? "day" : "hour")}`, { key });
        expect([refused.status, refused.body.code], JSON.stringify(c)).toEqual([400, "INVALID_PARAMETER"]);
        continue;
      }
      const got = await stats(key, hook.id, window(c.since, c.until, c.day ? "day" : "hour"));
      // The hub reads its clock a little after `now`: only rows at the retention's edge could differ, and none is that close.
      expect(got.buckets, JSON.stringify(c)).toEqual(expected(rows, c.since, c.until, c.day ? DAY : HOUR, Date.now()));
    }
  });

  it("is served from the log's indexes, never a scan of it (EXPLAIN QUERY PLAN)", async () => {
    const { key } = await newSchool("stq");
    const hook = await register(key, "https://stq.example.com/in");
    // ?1 unused, ?2 the first bucket's start, ?3 until, ?4 the width, ?5 from.
    const plan = await inCourier(hook.id, (_courier, state) =>
      state.storage.sql
        .exec<{ detail: string }>(`EXPLAIN QUERY PLAN ${STATS_SQL}`, null, 0, 1, HOUR, 0)
        .toArray()
        .map((r) => r.detail)
        .join("\n"),
    );
    expect(plan, plan).toMatch(/SEARCH log USING COVERING INDEX log_time \(attempted_at>\? AND attempted_at<\?\)/);
    expect(plan, plan).toMatch(/SEARCH queue USING (COVERING )?INDEX queue_unattempted \(created_at>\? AND created_at<\?\)/);
    expect(plan, plan).not.toMatch(/SCAN (log|queue|events|l|q|e)\b(?! USING)/);
    // The latency histograms: the window's hours walked in primary-key order, no sort.
    const latencyPlan = await inCourier(hook.id, (_courier, state) =>
      state.storage.sql
        .exec<{ detail: string }>(`EXPLAIN QUERY PLAN ${LATENCY_SQL}`, 0, HOUR)
        .toArray()
        .map((r) => r.detail)
        .join("\n"),
    );
    expect(latencyPlan, latencyPlan).toMatch(/SEARCH latency USING INDEX sqlite_autoindex_latency_1 \(hour>\? AND hour<\?\)/);
    expect(latencyPlan, latencyPlan).not.toMatch(/TEMP B-TREE|SCAN latency/);
  });

  it("refuses a bad window, bucket or parameter in the contract's envelope; unknown or another school's id: 404", async () => {
    const { key } = await newSchool("str");
    const other = await newSchool("strx");
    const hook = await register(key, "https://str.example.com/in");
    const now = Date.now();
    const refused: [string, number, string][] = [
      [window(now, now), 400, "INVALID_PARAMETER"],
      [window(now, now - HOUR), 400, "INVALID_PARAMETER"],
      [window(now - 7 * DAY - 1, now), 400, "INVALID_PARAMETER"],
      [`?since=${iso(now + HOUR)}`, 400, "INVALID_PARAMETER"],
      ["?bucket=week", 400, "INVALID_PARAMETER"],
      ["?since=yesterday", 400, "INVALID_PARAMETER"],
      ["?since=2026-09-07T08:00:00", 400, "INVALID_PARAMETER"],
      ["?step=hour", 400, "UNKNOWN_PARAMETER"],
    ];
    for (const [query, status, code] of refused) {
      const res = await callJson(`/v3/webhooks/${hook.id}/stats${query}`, { key });
      expect([res.status, res.body.status, res.body.code], query).toEqual([status, "error", code]);
      expect(res.body.message, query).toEqual(expect.any(String));
    }
    // Only `since`: until is now (or 7 days later, if that comes first).
    const eightDaysAgo = await stats(key, hook.id, `?since=${iso(now - 8 * DAY)}`);
    expect(Date.parse(eightDaysAgo.until) - Date.parse(eightDaysAgo.since)).toBe(7 * DAY);
    // A window that ends before the 7-day retention: refused, not answered with zeros.
    for (const [query, parameter] of [
      ["?until=0000-01-01T06:00:00Z", "until"],
      [`?until=${iso(now - 7 * DAY - HOUR)}`, "until"],
      [`?since=${iso(now - 15 * DAY)}`, "since"],
    ] as const) {
      const res = await callJson(`/v3/webhooks/${hook.id}/stats${query}`, { key });
      expect([res.status, res.body.code, res.body.details], query).toEqual([
        400,
        "INVALID_PARAMETER",
        [{ parameter, message: "must be within the last 7 days" }],
      ]);
    }
    // One that ends inside it is answered, its older part as zeros.
    expect((await stats(key, hook.id, `?until=${iso(now - 7 * DAY + HOUR)}`)).buckets.length).toBeGreaterThan(0);
    // Only `until`: the 24 hours before it.
    const onlyUntil = await stats(key, hook.id, `?until=${iso(now - DAY)}&bucket=day`);
    expect(onlyUntil.since).toBe(iso(now - 2 * DAY));
    for (const [id, k] of [
      ["wh_unknown", key],
      [hook.id, other.key],
      ["not an id!", key],
    ]) {
      const res = await callJson(`/v3/webhooks/${encodeURIComponent(id!)}/stats`, { key: k });
      expect([res.status, res.body.code]).toEqual([404, "WEBHOOK_NOT_FOUND"]);
    }
    await callJson(`/v3/webhooks/${hook.id}`, { method: "DELETE", key });
    expect((await callJson(`/v3/webhooks/${hook.id}/stats`, { key })).status).toBe(404);
    expect((await callJson(`/v3/webhooks/${hook.id}/stats`, {})).status).toBe(401);
  });
});
