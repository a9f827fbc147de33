/**
 * The events feed's figures for `npm run bench` (docs/reference.md § "Events feed"): a page of 100
 * events against the floor's p50 (autocannon, 1 connection), the long poll's wake-up latency
 * over 100 wake-ups (a publish while a reader waits with `wait=25`: from sending the publish to
 * the page's arrival — an upper bound, the publish's own round trip included, since the hub
 * may answer the reader before the publisher), and the cost of a registration's filter in the hub's accept step
 * (the hub's own `addressed`, timed in Node over 50 filtered registrations).
 */
import autocannon from "autocannon";
import { addressed, audiencesOf } from "../../src/webhooks/hub/event-log";
import type { WebhookRow } from "../../src/webhooks/hub/registrations";

const percentile = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(p * s.length))] ?? Number.NaN;
};

/** Targets of the issue: page p50 ≤ 1.5 × floor, wake-up p99 < 1 s, filter < 0.05 ms per registration. */
export interface FeedFigures {
  pageP50: number;
  floorP50: number;
  wakeP50: number;
  wakeP99: number;
  filterMsPerRegistration: number;
}

/**
 * Runs the three measurements against a served Worker at `base` (the benchmark entry, with
 * `POST /__bench/publish`) as the school of `key`.
 */
export async function benchFeed(base: string, key: string, floorP50: number, seconds: number): Promise<FeedFigures> {
  const headers = { authorization: `Bearer ${key}`, "content-type": "application/json" };
  const publish = (count: number) => fetch(`${base}/__bench/publish`, { method: "POST", headers, body: JSON.stringify({ count }) }).then((r) => r.text());
  await publish(150);
  const page = await autocannon({ url: `${base}/v3/events?limit=100`, connections: 1, duration: seconds, headers });
  const pageP50 = page.latency.p50;

  // Read to the head, then 100 times: wait, publish one, time the wake-up.
  let cursor = "";
  for (;;) {
    const body = (await (await fetch(`${base}/v3/events?limit=100${cursor ? `&after=${cursor}` : ""}`, { headers })).json()) as {
      pagination: { nextCursor: string; hasMore: boolean };
    };
    cursor = body.pagination.nextCursor;
    if (!body.pagination.hasMore) break;
  }
  const wakes: number[] = [];
  for (let i = 0; i < 100; i++) {
    const waiting = fetch(`${base}/v3/events?after=${cursor}&wait=25`, { headers }).then(async (r) => {
      const arrived = performance.now();
      const body = (await r.json()) as { result: unknown[]; pagination: { nextCursor: string } };
      cursor = body.pagination.nextCursor;
      return { arrived, n: body.result.length };
    });
    await new Promise((r) => setTimeout(r, 30));
    const sent = performance.now();
    await publish(1);
    const { arrived, n } = await waiting;
    if (n > 0) wakes.push(arrived - sent);
  }

  // The filter: 50 registrations with a three-dimension filter, 2,000 course events.
  const rows = Array.from({ length: 50 }, (_, i) => ({
    id: `wh_${i}`,
    events: JSON.stringify(["*"]),
    enabled: 1,
    filter: JSON.stringify({ trainingId: [`trn_${i}`, `trn_${i + 1}`], groupId: [`grp_${i}`], professorId: [`prf_${i % 7}`] }),
  })) as unknown as WebhookRow[];
  const audiences = audiencesOf(rows);
  const events = Array.from({ length: 2000 }, (_, i) => ({
    id: `evt_${i}`,
    type: "course.updated" as const,
    createdAt: "2026-09-07T08:00:00.000Z",
    schoolId: "sch_bench",
    data: { course: { trainingId: `trn_${i % 60}`, groupIds: [`grp_${i % 50}`, `grp_${(i + 3) % 50}`], professorIds: [`prf_${i % 7}`] } },
    previous: { trainingId: `trn_${(i + 1) % 60}`, groupIds: [`grp_${i % 50}`], professorIds: [] },
  }));
  let hits = 0;
  const t0 = performance.now();
  for (let round = 0; round < 5; round++) for (const event of events) for (const a of audiences) if (addressed(a, event as never)) hits += 1;
  const filterMs = (performance.now() - t0) / (5 * events.length * audiences.length);
  if (hits < 0) throw new Error("unreachable");
  return { pageP50, floorP50, wakeP50: percentile(wakes, 0.5), wakeP99: percentile(wakes, 0.99), filterMsPerRegistration: filterMs };
}

/** The figures as report lines, each with its target. */
export function feedLines(f: FeedFigures): string[] {
  const ratio = f.pageP50 / f.floorP50;
  return [
    `- a feed page of 100 events: p50 ${f.pageP50.toFixed(1)} ms = ${ratio.toFixed(2)} × the floor's ${f.floorP50.toFixed(1)} ms (target ≤ 1.5 ×: ${ratio <= 1.5 ? "met" : "NOT met"})`,
    `- long-poll wake-up, publish sent → page arrived (the publish's round trip included), 100 wake-ups: p50 ${f.wakeP50.toFixed(1)} ms, p99 ${f.wakeP99.toFixed(1)} ms (target p99 < 1 s: ${f.wakeP99 < 1000 ? "met" : "NOT met"})`,
    `- a filter in the hub's accept step: ${(f.filterMsPerRegistration * 1000).toFixed(2)} µs per event per registration (target < 0.05 ms: ${f.filterMsPerRegistration < 0.05 ? "met" : "NOT met"})`,
  ];
}
