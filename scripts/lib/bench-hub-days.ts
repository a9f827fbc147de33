/**
 * The hub benchmark's long run, `npm run bench:hub -- --days N`: storage over simulated days
 * (docs/development.md § Benchmarks, bench/NOTES.md), on the movable clock of
 * scripts/bench-hub-worker.ts. Five schools: `a` and `b` (ordinary, two registrations each),
 * `none` (events, no registration), `feed` (no registration, its feed read after every step)
 * and `throttled` (`maxPerSecond: 1`, receiving more than it can send). Each day: events to
 * every school, receivers waited for, the feed read, the clock moved, the alarms it made due
 * run; then every object's SQLite size and rows per table; at the end, whether each object
 * stayed flat from day 8 on (the 7-day retention reached).
 */

import { api, BENCH_SCHOOL, type BenchSchool, createHook, type DevServer, publish, type Receiver, sleep } from "./bench-hub";
import { formatInt } from "./progress";

const DAY_MS = 86_400_000;
/** Retention of the hub's log and the couriers' (docs/reference.md: 7 days). */
const RETENTION_DAYS = 7;
/** The last day whose end is not yet in the steady state: from day RETENTION_DAYS + 1 on, a full window ages out. */
const STEADY_FROM = RETENTION_DAYS + 1;
/** Growth of an object's rows or bytes, from the first steady day to the last, still called flat. */
const FLAT_TOLERANCE = 0.1;

/** The long run's schools (`a` is the bench school: the dev server's start-up check uses its key). */
export const DAYS_SCHOOLS = {
  a: BENCH_SCHOOL,
  b: { id: "sch_days_b", key: "sk_test_days_b" },
  none: { id: "sch_days_none", key: "sk_test_days_none" },
  feed: { id: "sch_days_feed", key: "sk_test_days_feed" },
  throttled: { id: "sch_days_throttled", key: "sk_test_days_throttled" },
} satisfies Record<string, BenchSchool>;
type SchoolName = keyof typeof DAYS_SCHOOLS;

/** What `GET /__bench/objects` answers for one object. */
interface ObjectFigures {
  kind: "hub" | "courier";
  id: string;
  bytes: number;
  rows: Record<string, number>;
  alarm: number | null;
}

/** The long run's knobs (environment variables of `npm run bench:hub -- --days N`). */
export interface DaysOptions {
  days: number;
  /** Events per school per simulated day. */
  events: number;
  /** Steps per simulated day (the clock moves `24 h ÷ steps` at a time). */
  steps: number;
}

/** Reads the step's feed of `school` from `cursor` to its head; @returns the new cursor and how many events it read. */
async function readFeed(base: string, school: BenchSchool, cursor: string | null): Promise<{ cursor: string | null; read: number }> {
  let read = 0;
  for (;;) {
    const query = cursor === null ? "?limit=100" : `?limit=100&after=${encodeURIComponent(cursor)}`;
    const res = await api(base, `/v3/events${query}`, {}, school.key);
    if (res.status !== 200) throw new Error(`feed: ${res.status} ${await res.text()}`);
    const page = (await res.json()) as { result: unknown[]; pagination: { nextCursor: string; hasMore: boolean } };
    read += page.result.length;
    cursor = page.pagination.nextCursor;
    if (!page.pagination.hasMore) return { cursor, read };
  }
}

/** One row per object: its size and its rows per table. */
function dayTable(day: number, objects: ObjectFigures[], label: (o: ObjectFigures) => string): string {
  const lines = objects.map((o) => {
    const rows = Object.entries(o.rows)
      .map(([t, n]) => `${t} ${formatInt(n)}`)
      .join(" · ");
    return `  ${label(o).padEnd(24)} ${(o.bytes / 1e6).toFixed(2).padStart(8)} MB   ${rows}`;
  });
  return [`day ${String(day).padStart(2)}:`, ...lines].join("\n");
}

/**
 * Runs the long run on a dev server serving scripts/bench-hub-worker.ts (with the five
 * schools of DAYS_SCHOOLS) and prints it; @returns whether every object stayed flat from day
 * STEADY_FROM on (`days` must reach past it to judge).
 */
export async function storageDays(server: DevServer, receiver: Receiver, receiverPort: number, opts: DaysOptions): Promise<boolean> {
  const { base } = server;
  const at = (p: string) => `http://127.0.0.1:${receiverPort}${p}`;
  const hooks: { id: string; label: string }[] = [];
  for (const name of ["a", "b"] as const) {
    for (let i = 0; i < 2; i++) {
      const hook = await createHook(base, at(`/${name}/${i}`), undefined, { key: DAYS_SCHOOLS[name].key });
      receiver.path(`/${name}/${i}`, { secret: hook.secret, group: "ordinary" });
      hooks.push({ id: hook.id, label: `courier ${name}/${i}` });
    }
  }
  const throttled = await createHook(base, at("/throttled"), undefined, { key: DAYS_SCHOOLS.throttled.key, maxPerSecond: 1 });
  receiver.path("/throttled", { secret: throttled.secret, group: "throttled" });
  hooks.push({ id: throttled.id, label: "courier throttled" });
  const names = Object.keys(DAYS_SCHOOLS) as SchoolName[];
  const objectsQuery = `schools=${names.map((n) => DAYS_SCHOOLS[n].id).join(",")}&hooks=${hooks.map((h) => h.id).join(",")}`;
  const label = (o: ObjectFigures) =>
    o.kind === "hub" ? `hub ${names.find((n) => DAYS_SCHOOLS[n].id === o.id)}` : (hooks.find((h) => h.id === o.id)?.label ?? o.id);
  const figures = async () => ((await (await api(base, `/__bench/objects?${objectsQuery}`)).json()) as { now: number; objects: ObjectFigures[] }).objects;
  const advance = async (ms: number) => {
    const res = await api(base, `/__bench/clock?advance=${ms}&${objectsQuery}`, { method: "POST" });
    if (res.status !== 200) throw new Error(`clock: ${res.status} ${await res.text()}`);
    await res.arrayBuffer();
  };
  // The alarms the advance made due run now (a prune goes on in chunks a second apart):
  // wait until no object but the throttled courier (always due: its queue) has one due soon.
  const settle = async () => {
    for (let i = 0; i < 60; i++) {
      await sleep(1_000);
      const { now, objects } = (await (await api(base, `/__bench/objects?${objectsQuery}`)).json()) as { now: number; objects: ObjectFigures[] };
      if (objects.every((o) => o.id === throttled.id || o.alarm === null || o.alarm > now + 2_000)) return;
    }
  };

  const perStep = Math.max(1, Math.round(opts.events / opts.steps));
  console.log(
    `${opts.days} simulated days of ${opts.steps} steps; ${perStep} events per school per step (${perStep * opts.steps} a day); schools: ` +
      "a, b (2 registrations each), none (no registration), feed (no registration, its feed read every step), throttled (1 registration, maxPerSecond 1)",
  );
  const t0 = performance.now();
  const history: ObjectFigures[][] = [];
  let feedCursor: string | null = null;
  let feedRead = 0;
  let ordinaryExpected = 0;
  for (let day = 1; day <= opts.days; day++) {
    for (let step = 0; step < opts.steps; step++) {
      await Promise.all(names.map((n) => publish(base, perStep, 50, 1, "course.updated", DAYS_SCHOOLS[n].key)));
      ordinaryExpected += 4 * perStep;
      await receiver.reached(ordinaryExpected, "ordinary");
      const feed = await readFeed(base, DAYS_SCHOOLS.feed, feedCursor);
      feedCursor = feed.cursor;
      feedRead += feed.read;
      await advance(DAY_MS / opts.steps);
      await settle();
    }
    const objects = await figures();
    history.push(objects);
    console.log(dayTable(day, objects, label));
  }
  const seconds = (performance.now() - t0) / 1000;
  console.log("");
  console.log(
    `${opts.days} days in ${seconds.toFixed(0)} s; deliveries: ${formatInt(receiver.groups.ordinary?.count ?? 0)} ordinary (expected ${formatInt(ordinaryExpected)}), ${formatInt(receiver.groups.throttled?.count ?? 0)} throttled (of ${formatInt(perStep * opts.steps * opts.days)} addressed); feed: ${formatInt(feedRead)} events read`,
  );
  if (opts.days <= STEADY_FROM) {
    console.log(`(flatness needs days past ${STEADY_FROM}: the ${RETENTION_DAYS}-day retention is reached at the end of day ${STEADY_FROM})`);
    return false;
  }
  let flat = true;
  const first = history[STEADY_FROM - 1]!;
  const last = history.at(-1)!;
  for (const o of last) {
    const base0 = first.find((f) => f.id === o.id)!;
    const total = (f: ObjectFigures) => Object.values(f.rows).reduce((a, b) => a + b, 0);
    const grew = (a: number, b: number) => b > a * (1 + FLAT_TOLERANCE) + 10;
    const ok = !grew(total(base0), total(o)) && !grew(base0.bytes, o.bytes);
    flat &&= ok;
    console.log(
      `flat:                  ${ok ? "yes    " : "NO     "} ${label(o).padEnd(24)} rows ${formatInt(total(base0))} → ${formatInt(total(o))}, ${(base0.bytes / 1e6).toFixed(2)} → ${(o.bytes / 1e6).toFixed(2)} MB (day ${STEADY_FROM} → ${opts.days})`,
    );
  }
  return flat;
}
