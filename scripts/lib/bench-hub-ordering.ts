/**
 * The ordering-pace bench, `npm run bench:hub -- --ordering` (docs/development.md §
 * Benchmarks), on the wall clock of a local dev server: the same course PATCHes delivered with
 * `ordering: "course"` and with `"none"`, alternated in one run. Each phase has its own `hooks`
 * registrations (receivers answering after `latencyMs`): `patches` PATCHes over `courses`
 * courses at `rate` a second, a create + DELETE of another registration every `deleteEveryMs`;
 * then `burst` PATCHes of one course as fast as the API answers them, and `burst` of another
 * while the receiver holds its answers (the held burst: the courier's pace, the API idle).
 * It prints the lags (all, and those ordering must not delay), each course's events per
 * second, the pace and the DELETE latency, per ordering, and their ratios.
 */
import { api, createHook, type DevServer, deleteLoop, fmt, now, type Receiver, type Summary, sleep, summary } from "./bench-hub";

/** The ordering bench's knobs (environment variables of `npm run bench:hub -- --ordering`). */
export interface OrderingOptions {
  hooks: number;
  patches: number;
  courses: number;
  /** PATCHes per second, all courses together. */
  rate: number;
  latencyMs: number;
  burst: number;
  deleteEveryMs: number;
  rounds: number;
}

const ORDERINGS = ["course", "none"] as const;
type Ordering = (typeof ORDERINGS)[number];
/** PATCHes in flight at most (the paced phase falls behind its schedule rather than pile up). */
const IN_FLIGHT = 8;

/** What one phase measured. */
interface Phase {
  lags: number[];
  /**
   * The lags of the paced events whose course's previous event had ended at that registration
   * (received, plus the receiver's answer) when their PATCH was answered: those ordering must
   * not delay ("whenever each course's rate stays under that pace").
   */
  lagsUnderPace: number[];
  /** Per course: its events per second at each registration (first to last receipt), averaged. */
  perCourse: number[];
  burstRate: number;
  /**
   * The burst's gaps (ms) between two receipts of its course at one registration where the
   * later event was accepted (its PATCH answered) before the earlier delivery ended: the
   * course's own pace, whatever the API's.
   */
  waitingGaps: number[];
  /**
   * The held burst's gaps (ms) between two receipts of its course at one registration after
   * the receiver's release, every later event already queued and the API idle: the courier's
   * own pace on this runtime.
   */
  heldGaps: number[];
  deletes: { client: number[]; server: number[] };
  sentRate: number;
}

/** Creates `n` courses; @returns their ids. */
async function createCourses(base: string, n: number): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < n; i++) {
    const res = await api(base, "/v3/courses", {
      method: "POST",
      body: JSON.stringify({ name: `Ordering ${i}`, startDateTime: "2026-12-01T09:00:00Z", endDateTime: "2026-12-01T11:00:00Z" }),
    });
    if (res.status !== 201) throw new Error(`course: ${res.status} ${await res.text()}`);
    ids.push(((await res.json()) as { result: { id: string } }).result.id);
  }
  return ids;
}

/**
 * Sends PATCHes naming each one (`name`), at most IN_FLIGHT at once, the n-th not before
 * `t0 + n × spacingMs`; records when each answer arrived (by name).
 */
async function patches(base: string, targets: { course: string; name: string }[], spacingMs: number, answered: Map<string, number>): Promise<number> {
  const t0 = performance.now();
  const sends: Promise<void>[] = [];
  let inFlight = 0;
  for (const [n, { course, name }] of targets.entries()) {
    const wait = t0 + n * spacingMs - performance.now();
    if (wait > 0) await sleep(wait);
    while (inFlight >= IN_FLIGHT) await sleep(1);
    inFlight += 1;
    sends.push(
      api(base, `/v3/courses/${course}`, { method: "PATCH", body: JSON.stringify({ name }) })
        .then(async (res) => {
          const at = now();
          if (res.status !== 200) throw new Error(`PATCH: ${res.status} ${await res.text()}`);
          await res.arrayBuffer();
          answered.set(name, at);
        })
        .finally(() => (inFlight -= 1)),
    );
  }
  await Promise.all(sends);
  return targets.length / ((performance.now() - t0) / 1000);
}

/** Receipts per (path, course) → events per second from its first to its last receipt. */
function ratesOf(receipts: { path: string; course: string; at: number }[]): Map<string, number[]> {
  const byKey = new Map<string, number[]>();
  for (const r of receipts) {
    const k = `${r.path} ${r.course}`;
    const list = byKey.get(k) ?? [];
    list.push(r.at);
    byKey.set(k, list);
  }
  const byCourse = new Map<string, number[]>();
  for (const [k, ats] of byKey) {
    if (ats.length < 2) continue;
    const course = k.split(" ")[1]!;
    const list = byCourse.get(course) ?? [];
    list.push((ats.length - 1) / ((Math.max(...ats) - Math.min(...ats)) / 1000));
    byCourse.set(course, list);
  }
  return byCourse;
}

const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length);

/** One phase: registrations with `ordering`, the paced PATCHes under a DELETE loop, then the burst. */
async function phase(
  base: string,
  receiver: Receiver,
  port: number,
  opts: OrderingOptions,
  courses: string[],
  ordering: Ordering,
  round: number,
): Promise<Phase> {
  const at = (p: string) => `http://127.0.0.1:${port}${p}`;
  const group = `ordering:${ordering}:${round}`;
  const ids: string[] = [];
  for (let i = 0; i < opts.hooks; i++) {
    const path = `/ordering/${ordering}/${round}/${i}`;
    const hook = await createHook(base, at(path), ["course.updated"], { ordering });
    receiver.path(path, { secret: hook.secret, group, delayMs: opts.latencyMs });
    ids.push(hook.id);
  }
  const answered = new Map<string, number>();
  const paced = Array.from({ length: opts.patches }, (_, n) => ({ course: courses[n % courses.length]!, name: `${group} paced ${n}` }));
  const burst = Array.from({ length: opts.burst }, (_, n) => ({ course: courses[0]!, name: `${group} burst ${n}` }));
  const heldBurst = Array.from({ length: opts.burst }, (_, n) => ({ course: courses[1 % courses.length]!, name: `${group} held ${n}` }));
  // Warm-up: each new registration's courier takes its first events (its storage created,
  // its first hand-over) before anything is measured; a courier's first start is not the
  // ordering's cost.
  const warm = courses.map((course, n) => ({ course, name: `${group} warm ${n}` }));
  await patches(base, warm, 0, new Map());
  await Promise.race([receiver.reached(warm.length * opts.hooks, group), sleep(30_000)]);
  receiver.track(true);
  const before = receiver.groups[group]?.count ?? 0;
  let loading = true;
  const deletes = deleteLoop(base, at("/ordering/extra"), () => !loading, Infinity, opts.deleteEveryMs);
  const sentRate = await patches(base, paced, 1000 / opts.rate, answered);
  await Promise.race([receiver.reached(before + opts.patches * opts.hooks, group), sleep(120_000)]);
  loading = false;
  await patches(base, burst, 0, answered);
  await Promise.race([receiver.reached(before + (opts.patches + opts.burst) * opts.hooks, group), sleep(120_000)]);
  // The held burst: the receiver holds its answers until every PATCH is answered and handed
  // over (a second's margin), so that each course's events wait in its couriers' queues.
  receiver.hold(true);
  await patches(base, heldBurst, 0, answered);
  await sleep(1000);
  const releasedAt = now();
  receiver.hold(false);
  await Promise.race([receiver.reached(before + (opts.patches + 2 * opts.burst) * opts.hooks, group), sleep(120_000)]);
  const arrivals = (await receiver.dump()).filter(([g, , , info]) => g === group && info.type === "course.updated" && info.name !== undefined);
  receiver.track(false);
  for (const id of ids) await api(base, `/v3/webhooks/${id}`, { method: "DELETE" }).then((r) => r.arrayBuffer());
  const receipts = arrivals.map(([, t, , info]) => ({ path: info.path, course: info.course ?? "", name: info.name!, at: t }));
  const pacedReceipts = receipts.filter((r) => r.name.includes(" paced "));
  const lags = pacedReceipts.flatMap((r) => (answered.has(r.name) ? [r.at - answered.get(r.name)!] : []));
  const missing = opts.patches * opts.hooks - pacedReceipts.length;
  if (missing > 0) console.log(`${group}: ${missing} paced receipts missing after 120 s`);
  const perCourse = courses.map((c) => mean(ratesOf(pacedReceipts).get(c) ?? []));
  const lagsUnderPace = underPace(pacedReceipts, answered, opts.latencyMs);
  const heldGaps = gapsByPath(receipts.filter((r) => r.name.includes(" held ") && r.at > releasedAt)).flatMap((rs) =>
    rs.slice(1).map((r, i) => r.at - rs[i]!.at),
  );
  const burstReceipts = receipts.filter((r) => r.name.includes(" burst "));
  const burstRate = mean(ratesOf(burstReceipts).get(courses[0]!) ?? []);
  const waitingGaps = gapsByPath(burstReceipts).flatMap((sorted) =>
    sorted.slice(1).flatMap((r, i) => ((answered.get(r.name) ?? Infinity) <= sorted[i]!.at + opts.latencyMs ? [r.at - sorted[i]!.at] : [])),
  );
  return { lags, lagsUnderPace, perCourse, burstRate, waitingGaps, heldGaps, deletes: await deletes, sentRate };
}

type Receipt = { path: string; course: string; name: string; at: number };

/** `receipts` grouped by registration (path), each group in order of receipt. */
function gapsByPath(receipts: Receipt[]): Receipt[][] {
  const byPath = new Map<string, Receipt[]>();
  for (const r of receipts) byPath.set(r.path, [...(byPath.get(r.path) ?? []), r]);
  return [...byPath.values()].map((rs) => rs.sort((a, b) => a.at - b.at));
}

/**
 * The lags (receipt − PATCH answered, ms) of the receipts whose PATCH was answered once the
 * previous receipt of their course at their registration had ended (its receipt plus the
 * receiver's `latencyMs`), and of each course's first: the events ordering must not delay.
 */
function underPace(receipts: Receipt[], answered: Map<string, number>, latencyMs: number): number[] {
  const chains = new Map<string, Receipt[]>();
  for (const r of receipts) chains.set(`${r.path} ${r.course}`, [...(chains.get(`${r.path} ${r.course}`) ?? []), r]);
  return [...chains.values()].flatMap((rs) => {
    const sorted = rs.sort((a, b) => a.at - b.at);
    return sorted.flatMap((r, i) => {
      const at = answered.get(r.name);
      if (at === undefined) return [];
      return i === 0 || at >= sorted[i - 1]!.at + latencyMs ? [r.at - at] : [];
    });
  });
}

/** Runs the phases (course, none, alternated `rounds` times) and prints them side by side; @returns whether Deliver 6's targets hold. */
export async function orderingBench(server: DevServer, receiver: Receiver, port: number, opts: OrderingOptions): Promise<boolean> {
  const { base } = server;
  const courses = await createCourses(base, opts.courses);
  console.log(
    `${opts.hooks} registrations per ordering (receivers answering in ${opts.latencyMs} ms; bound ${(1000 / opts.latencyMs).toFixed(0)} events/s per course at one attempt at a time); ` +
      `${opts.patches} PATCHes over ${opts.courses} courses at ${opts.rate}/s (${(opts.rate / opts.courses).toFixed(1)}/s per course), a DELETE every ${opts.deleteEveryMs} ms; ` +
      `then ${opts.burst} PATCHes of one course at once, and ${opts.burst} of another held by the receiver until the API is idle; ${opts.rounds} round(s) of course, none`,
  );
  // Warm-up: the Worker's first requests and the write path's code, before anything is measured.
  const warm = new Map<string, number>();
  await patches(
    base,
    Array.from({ length: 20 }, (_, n) => ({ course: courses[n % courses.length]!, name: `warm-up ${n}` })),
    0,
    warm,
  );
  const results: Record<Ordering, Phase[]> = { course: [], none: [] };
  for (let round = 0; round < opts.rounds; round++) {
    for (const ordering of ORDERINGS) {
      const p = await phase(base, receiver, port, opts, courses, ordering, round);
      results[ordering].push(p);
      console.log(
        `round ${round + 1} ${ordering.padEnd(6)}: lag ${fmt(summary(p.lags))}; sent ${p.sentRate.toFixed(1)} of ${opts.rate} PATCH/s asked; burst ${p.burstRate.toFixed(1)} events/s`,
      );
    }
  }
  const pooled = (o: Ordering) => {
    const ps = results[o];
    return {
      lag: summary(ps.flatMap((p) => p.lags)),
      lagUnderPace: summary(ps.flatMap((p) => p.lagsUnderPace)),
      held: ps.flatMap((p) => p.heldGaps).sort((a, b) => a - b),
      perCourse: ps[0]!.perCourse.map((_, c) => mean(ps.map((p) => p.perCourse[c]!))),
      burst: mean(ps.map((p) => p.burstRate)),
      waiting: ps.flatMap((p) => p.waitingGaps).sort((a, b) => a - b),
      sent: Math.min(...ps.map((p) => p.sentRate)),
      delServer: summary(ps.flatMap((p) => p.deletes.server)),
      delClient: summary(ps.flatMap((p) => p.deletes.client)),
    };
  };
  const c = pooled("course");
  const n = pooled("none");
  const line = (o: string, x: ReturnType<typeof pooled>) =>
    `${o.padEnd(8)} lag ${fmtLag(x.lag)} | per course ${x.perCourse.map((r) => r.toFixed(1)).join(", ")} events/s | burst of one course ${x.burst.toFixed(1)} events/s | DELETE server ${fmtLag(x.delServer)}, client ${fmtLag(x.delClient)}`;
  console.log("");
  console.log(line("course", c));
  console.log(line("none", n));
  // The course's pace where its next event was waiting: receiver's answer plus the gap after it.
  const at = (xs: number[], q: number) => xs[Math.min(xs.length - 1, Math.floor((xs.length * q) / 100))] ?? Number.NaN;
  const gaps = (xs: number[]) =>
    `gap between receipts p50 ${at(xs, 50).toFixed(0)} ms p90 ${at(xs, 90).toFixed(0)} ms max ${at(xs, 100).toFixed(0)} ms (n=${xs.length})`;
  const pace = 1000 / mean(c.held);
  console.log(
    `course's pace:         ${pace.toFixed(1)} events/s with its later events queued and the API idle (held burst); ${gaps(c.held)}, of which the receiver's answer ${opts.latencyMs} ms`,
  );
  // Beside the API's writes, the Worker, D1, the hub and the couriers share this runtime's one thread.
  console.log(`  beside the API:      ${(1000 / mean(c.waiting)).toFixed(1)} events/s while PATCHes of the course are answered (burst); ${gaps(c.waiting)}`);
  // The paced phase compares orderings only if the API took the asked rate: a saturated
  // machine queues the PATCHes themselves, and the lag then measures the machine, not the order.
  const saturated = Math.min(c.sent, n.sent) < 0.9 * opts.rate;
  if (saturated)
    console.log(
      `saturated:             the API took ${Math.min(c.sent, n.sent).toFixed(1)} of ${opts.rate} PATCH/s asked: lower BENCH_ORDERING_RATE; the lag ratio is void`,
    );
  const ratio = { p50: c.lag.p50 / n.lag.p50, p99: c.lag.p99 / n.lag.p99 };
  const under = c.lagUnderPace.p99 / n.lagUnderPace.p99;
  console.log(
    `under the pace:        lag ${fmtLag(c.lagUnderPace)} with course, ${fmtLag(n.lagUnderPace)} with none ` +
      `(the events whose course's previous event had ended at that registration when their PATCH was answered)`,
  );
  console.log(
    // A p50 near 0 (a receipt before the client read the PATCH's answer) makes a ratio meaningless.
    `ratio course / none: lag p50 ${n.lag.p50 < 10 ? `n/a (none's under 10 ms)` : `×${ratio.p50.toFixed(1)}`}, p99 ×${ratio.p99.toFixed(1)}, under the pace p99 ×${under.toFixed(1)}; DELETE p99 ×${(c.delClient.p99 / n.delClient.p99).toFixed(1)} (client)`,
  );
  const targets: [string, boolean][] = [
    [`lag p99 under the pace with course ≤ 1.5 × with none${saturated ? " (saturated: not measured)" : ""}`, !saturated && under <= 1.5],
    ["one course's events ≥ 15/s (its pace with its later events queued, ordering course)", pace >= 15],
    ["DELETE under that load < 100 ms (the Worker's Server-Timing total p99, ordering course)", c.delServer.p99 < 100],
  ];
  for (const [what, met] of targets) console.log(`target:                ${met ? "met    " : "NOT MET"} ${what}`);
  return targets.every(([, met]) => met);
}

const fmtLag = (x: Summary) => `p50 ${x.p50.toFixed(0)} ms p99 ${x.p99.toFixed(0)} ms (n=${x.n})`;
