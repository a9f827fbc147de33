/**
 * The incident bench, `npm run bench:hub -- --incident` (docs/development.md § Benchmarks,
 * bench/NOTES.md): a correlated failure on the movable clock of scripts/bench-hub-worker.ts,
 * after a control run without it (same seed and server, a school of its own). `hooks`
 * registrations: a third flaky (503 to 4 requests in 5 for the incident hour), one refusing
 * one course (422), the rest healthy; 100 other schools' course writes left in the outbox.
 * Steps of `stepMinutes`: events published, the sweep run (incident only), a wall window
 * for deliveries, the clock moved to the step's end. It prints per kind of registration the
 * deliveries, notices and healthy courses' delay against the control, the hub's log growth
 * and the most D1 calls and subrequests one invocation made.
 */
import { FAIL_PUBLISH_HEADER } from "../../src/bench/faults";
import { type Arrival, api, BENCH_SCHOOL, type BenchSchool, createHook, type DevServer, now, publish, type Receiver, sleep, summary } from "./bench-hub";
import { formatInt, table } from "./progress";

/** The incident run's knobs (environment variables of `npm run bench:hub -- --incident`). */
export interface IncidentOptions {
  hooks: number;
  /** Simulated minutes the flaky receivers fail, from the start. */
  incidentMinutes: number;
  /** Simulated minutes after it (recovery), events still published. */
  afterMinutes: number;
  stepMinutes: number;
  /** Wall ms each step gives deliveries before the clock jumps (more while healthy ones lag, up to 4 ×). */
  windowMs: number;
  /** Courses per step's batch (`crs_bench0` … ; `crs_bench0` is the one refused). */
  courses: number;
  backlogSchools: number;
  backlogWrites: number;
  seed: number;
}

/** Share of a flaky receiver's requests answered 503 during the incident. */
const FAIL_RATE = 0.8;
/** The course the refusing receiver answers 422 to (the first of each synthetic batch). */
const REFUSED = "crs_bench0";
const KINDS = ["healthy", "flaky", "refusing"] as const;
type Kind = (typeof KINDS)[number];
/** Cloudflare's per-invocation limits (Workers Paid / Free): D1 limits page, Workers limits page. */
const D1_LIMIT = { paid: 1000, free: 50 };
const SUBREQUEST_LIMIT = { paid: 10_000, free: 50 };

/** The control run's school. */
const CONTROL: BenchSchool = { id: "sch_incident_control", key: "sk_test_incident_control" };

/** The schools: the incident's (the bench school: the dev server's start-up check uses its key), the control's, the backlog's. */
export function incidentSchools(backlog: number): BenchSchool[] {
  return [BENCH_SCHOOL, CONTROL, ...Array.from({ length: backlog }, (_, i) => ({ id: `sch_backlog_${i}`, key: `sk_test_backlog_${i}` }))];
}

/** The kind of registration `i`: 0 refuses a course, every third from 1 is flaky. */
const kindOf = (i: number): Kind => (i === 0 ? "refusing" : i % 3 === 1 ? "flaky" : "healthy");

interface InvocationRow {
  kind: string;
  n: number;
  maxD1: number;
  maxSubrequests: number;
}

/** What one run measured. */
interface RunFigures {
  label: string;
  simulatedMinutes: number;
  wallSeconds: number;
  perKind: Record<Kind, { regs: number; requests: number; courseOk: number; notices: number; delays: number[]; missing: number }>;
  notices: { failing: number; recovered: number; capped: boolean };
  log: { events: number; bytes: number; rows: Record<string, number> };
  invocations: InvocationRow[];
  backlog: { rows: number; published: number; sweeps: number; sweepErrors: number };
}

/** Events of `types` in `school`'s feed, at most `maxPages` pages of 100 (`capped` if more). */
async function feedCount(base: string, school: BenchSchool, types: string[], maxPages = 300): Promise<{ n: number; capped: boolean }> {
  let n = 0;
  let cursor: string | null = null;
  for (let page = 0; page < maxPages; page++) {
    const q = new URLSearchParams({ limit: "100" });
    for (const t of types) q.append("eventType", t);
    if (cursor) q.set("after", cursor);
    const res = await api(base, `/v3/events?${q}`, {}, school.key);
    if (res.status !== 200) throw new Error(`feed: ${res.status} ${await res.text()}`);
    const body = (await res.json()) as { result: unknown[]; pagination: { nextCursor: string; hasMore: boolean } };
    n += body.result.length;
    cursor = body.pagination.nextCursor;
    if (!body.pagination.hasMore) return { n, capped: false };
  }
  return { n, capped: true };
}

/** Writes `writes` courses in each backlog school with their publish made to fail: outbox rows for the sweep. */
async function writeBacklog(base: string, schools: BenchSchool[], writes: number): Promise<number> {
  const jobs = schools.flatMap((s) => Array.from({ length: writes }, (_, i) => ({ s, i })));
  let next = 0;
  let done = 0;
  const worker = async () => {
    while (next < jobs.length) {
      const { s, i } = jobs[next++]!;
      const res = await api(
        base,
        "/v3/courses",
        {
          method: "POST",
          headers: { [FAIL_PUBLISH_HEADER]: "1" },
          body: JSON.stringify({ name: `Backlog ${i}`, startDateTime: "2026-12-01T09:00:00Z", endDateTime: "2026-12-01T11:00:00Z" }),
        },
        s.key,
      );
      await res.arrayBuffer();
      if (res.status === 201) done += 1;
    }
  };
  await Promise.all(Array.from({ length: 6 }, worker));
  return done;
}

/** One run: the incident (school SCHOOL, the backlog swept) or its control (school CONTROL). */
async function run(server: DevServer, receiver: Receiver, receiverPort: number, opts: IncidentOptions, incident: boolean): Promise<RunFigures> {
  const { base } = server;
  const label = incident ? "incident" : "control";
  const school = incident ? BENCH_SCHOOL : CONTROL;
  const backlog = incidentSchools(opts.backlogSchools).slice(2);
  const t0 = now();
  await api(base, "/__bench/invocations", { method: "DELETE" }).then((r) => r.arrayBuffer());
  const hooks: { id: string; kind: Kind }[] = [];
  for (let i = 0; i < opts.hooks; i++) {
    const kind = kindOf(i);
    const path = `/${label}/${i}`;
    const hook = await createHook(base, `http://127.0.0.1:${receiverPort}${path}`, undefined, { key: school.key });
    receiver.path(path, {
      secret: hook.secret,
      group: `${label}:${kind}`,
      ...(incident && kind === "flaky" ? { failRate: FAIL_RATE, seed: opts.seed + i } : {}),
      ...(incident && kind === "refusing" ? { refuseCourse: REFUSED } : {}),
    });
    hooks.push({ id: hook.id, kind });
  }
  const objectsQuery = `schools=${school.id}&hooks=${hooks.map((h) => h.id).join(",")}`;
  const hubFigures = async () => {
    const body = (await (await api(base, `/__bench/objects?schools=${school.id}`)).json()) as { objects: { bytes: number; rows: Record<string, number> }[] };
    return body.objects[0]!;
  };
  const hubBefore = await hubFigures();
  const eventsBefore = (await feedCount(base, school, [])).n;

  // Offsets of the objects' clock: [wall instant from which it holds, offset ms].
  const offsets: [number, number][] = [[0, 0]];
  const virtual = (wall: number) => {
    let off = 0;
    for (const [at, o] of offsets) if (at <= wall) off = o;
    return wall + off;
  };
  const steps = Math.ceil((opts.incidentMinutes + opts.afterMinutes) / opts.stepMinutes);
  const stepMs = opts.stepMinutes * 60_000;
  const healthyRegs = hooks.filter((h) => h.kind === "healthy").length;
  let sweeps = 0;
  let sweepErrors = 0;
  receiver.track(true);
  let failing = incident;
  receiver.incident(failing);
  const wallStart = now();
  let published = 0;
  for (let step = 0; step < steps; step++) {
    const stepStart = now();
    if (failing && step * opts.stepMinutes >= opts.incidentMinutes) {
      failing = false;
      receiver.incident(false);
    }
    published += await publish(base, opts.courses, opts.courses, 1, "course.updated", school.key);
    // The cron's sweep, once a step (`GET /cdn-cgi/local/scheduled`, as scripts/lib/cron-runner.ts calls it).
    const sweep = !incident
      ? Promise.resolve()
      : fetch(`${base}/cdn-cgi/local/scheduled?${new URLSearchParams({ cron: "* * * * *", format: "json" })}`)
          .then(async (res) => {
            sweeps += 1;
            if (!res.ok) sweepErrors += 1;
            await res.arrayBuffer();
          })
          .catch(() => {
            sweepErrors += 1;
          });
    const expected = published * healthyRegs;
    await sleep(opts.windowMs);
    for (let waited = opts.windowMs; waited < 4 * opts.windowMs && (receiver.groups[`${label}:healthy`]?.ok ?? 0) < expected; waited += 100) await sleep(100);
    await sweep;
    const advance = Math.round(stepMs - (now() - stepStart));
    if (advance > 0) {
      offsets.push([now(), offsets.at(-1)![1] + advance]);
      const res = await api(base, `/__bench/clock?advance=${advance}&${objectsQuery}`, { method: "POST" });
      if (res.status !== 200) throw new Error(`clock: ${res.status} ${await res.text()}`);
      await res.arrayBuffer();
    }
    if ((step + 1) % 5 === 0 || step === steps - 1) {
      const g = (k: Kind) => receiver.groups[`${label}:${k}`];
      console.log(
        `${label}: minute ${(step + 1) * opts.stepMinutes} of ${steps * opts.stepMinutes}, ${((now() - wallStart) / 1000).toFixed(0)} s wall; requests healthy ${g("healthy")?.count ?? 0}, flaky ${g("flaky")?.count ?? 0}, notices received ${KINDS.reduce((n, k) => n + (g(k)?.notices ?? 0), 0)}`,
      );
    }
  }
  await sleep(opts.windowMs);
  receiver.incident(false);
  const arrivals = await receiver.dump();
  receiver.track(false);
  const wallSeconds = (now() - wallStart) / 1000;
  const simulatedMinutes = steps * opts.stepMinutes;

  const perKind = Object.fromEntries(
    KINDS.map((k) => {
      const g = receiver.groups[`${label}:${k}`];
      return [
        k,
        {
          regs: hooks.filter((h) => h.kind === k).length,
          requests: g?.count ?? 0,
          courseOk: g?.ok ?? 0,
          notices: g?.notices ?? 0,
          delays: [] as number[],
          missing: 0,
        },
      ];
    }),
  ) as RunFigures["perKind"];
  // The delay of each healthy course's event at each registration: accepted (createdAt) → first 2xx, on the objects' clock.
  const firstOk = new Map<string, Arrival>();
  for (const a of arrivals) {
    const [group, , , info] = a;
    if (!group.startsWith(`${label}:`) || info.status !== 204 || !info.type?.startsWith("course.") || info.course === REFUSED) continue;
    const key = `${info.path} ${info.id}`;
    if (!firstOk.has(key)) firstOk.set(key, a);
  }
  for (const [group, at, createdAt] of firstOk.values()) perKind[group.slice(label.length + 1) as Kind].delays.push(virtual(at) - virtual(createdAt));
  const healthyCourses = (published / opts.courses) * (opts.courses - 1);
  for (const k of KINDS) perKind[k].missing = healthyCourses * perKind[k].regs - perKind[k].delays.length;

  const invocations = (await (await api(base, "/__bench/invocations")).json()) as InvocationRow[];
  const failingNotices = await feedCount(base, school, ["webhook.failing"]);
  const recovered = await feedCount(base, school, ["webhook.recovered"]);
  const hubAfter = await hubFigures();
  const eventsAfter = await feedCount(base, school, [], 1000);
  const rows = Object.fromEntries(Object.entries(hubAfter.rows).map(([t, n]) => [t, n - (hubBefore.rows[t] ?? 0)]));
  let backlogPublished = 0;
  if (incident) for (const s of backlog) backlogPublished += (await feedCount(base, s, ["course.created"])).n;
  console.log(`${label}: ${((now() - t0) / 1000).toFixed(0)} s wall in all`);
  return {
    label,
    simulatedMinutes,
    wallSeconds,
    perKind,
    notices: { failing: failingNotices.n, recovered: recovered.n, capped: failingNotices.capped || recovered.capped },
    log: { events: eventsAfter.n - eventsBefore, bytes: hubAfter.bytes - hubBefore.bytes, rows },
    invocations,
    backlog: { rows: incident ? backlogRows : 0, published: backlogPublished, sweeps, sweepErrors },
  };
}

const ms = (x: number) => (x >= 10_000 ? `${(x / 1000).toFixed(0)} s` : x >= 1000 ? `${(x / 1000).toFixed(1)} s` : `${x.toFixed(0)} ms`);

/** The run's table and lines (see the module comment); @returns whether every invocation stayed within the Paid limits. */
function report(inc: RunFigures, ctl: RunFigures, opts: IncidentOptions): boolean {
  const hours = inc.simulatedMinutes / 60;
  const rows = KINDS.map((k) => {
    const i = inc.perKind[k];
    const c = ctl.perKind[k];
    const si = i.delays.length > 0 ? summary(i.delays) : null;
    const sc = c.delays.length > 0 ? summary(c.delays) : null;
    return [
      k,
      String(i.regs),
      formatInt(i.requests - i.notices),
      formatInt(i.courseOk),
      formatInt(i.notices),
      (i.notices / i.regs / hours).toFixed(1),
      si ? `${ms(si.p50)} / ${ms(si.p99)}` : "none",
      sc ? `${ms(sc.p50)} / ${ms(sc.p99)}` : "none",
      si && sc ? `${(si.p50 / sc.p50).toFixed(1)} / ${(si.p99 / sc.p99).toFixed(1)}` : "-",
      `${formatInt(i.missing)} / ${formatInt(c.missing)}`,
    ];
  });
  console.log("");
  console.log(
    `incident: ${opts.hooks} registrations; flaky ones answer 503 to ${FAIL_RATE * 100} % of requests for ${opts.incidentMinutes} simulated min, then ${opts.afterMinutes} min of recovery; ` +
      `the refusing one answers 422 to every event of ${REFUSED}; ${opts.courses} courses' events a step (${opts.courses - 1} healthy)`,
  );
  console.log(
    `clock: ${inc.simulatedMinutes} simulated min in steps of ${opts.stepMinutes} min, each ≥ ${opts.windowMs / 1000} s of wall clock then a jump to its end ` +
      `(scale: ${inc.simulatedMinutes * 60} simulated s in ${inc.wallSeconds.toFixed(0)} s of wall clock, ×${((inc.simulatedMinutes * 60) / inc.wallSeconds).toFixed(0)}); a delay past the wall window counts the jump`,
  );
  console.log(
    table(
      [
        "registrations",
        "n",
        "course requests",
        "course 2xx",
        "notices received",
        "notices/reg/h",
        "delay p50 / p99",
        "control p50 / p99",
        "× control",
        "undelivered (inc / ctl)",
      ],
      rows,
    ),
  );
  const n = inc.notices;
  console.log(
    `notices in the hub's log: ${formatInt(n.failing)} webhook.failing, ${formatInt(n.recovered)} webhook.recovered${n.capped ? " (or more: count capped)" : ""} = ${((n.failing + n.recovered) / hours).toFixed(0)} per hour ` +
      `(control: ${formatInt(ctl.notices.failing + ctl.notices.recovered)})`,
  );
  const rowsGrew = Object.entries(inc.log.rows)
    .filter(([, d]) => d !== 0)
    .map(([t, d]) => `${t} +${formatInt(d)}`)
    .join(", ");
  console.log(
    `hub log growth: ${formatInt(inc.log.events)} events, ${(inc.log.bytes / 1e6).toFixed(2)} MB (${rowsGrew}); control: ${formatInt(ctl.log.events)} events, ${(ctl.log.bytes / 1e6).toFixed(2)} MB`,
  );
  if (inc.backlog.rows > 0)
    console.log(
      `backlog: ${formatInt(inc.backlog.rows)} outbox rows in ${opts.backlogSchools} schools, ${formatInt(inc.backlog.published)} published by ${inc.backlog.sweeps} sweeps (${inc.backlog.sweepErrors} failed)`,
    );
  const top = (list: InvocationRow[], by: "maxD1" | "maxSubrequests") =>
    [...list]
      .sort((a, b) => b[by] - a[by])
      .slice(0, 4)
      .map((r) => `${r.kind} ${formatInt(r[by])} (of ${formatInt(r.n)})`)
      .join(", ");
  const most = (by: "maxD1" | "maxSubrequests") => inc.invocations.reduce((m, r) => Math.max(m, r[by]), 0);
  console.log(`most D1 calls in one invocation:     ${top(inc.invocations, "maxD1")} (limit ${D1_LIMIT.paid} Workers Paid, ${D1_LIMIT.free} Free)`);
  console.log(
    `most subrequests in one invocation: ${top(inc.invocations, "maxSubrequests")} (limit ${formatInt(SUBREQUEST_LIMIT.paid)} Workers Paid, ${SUBREQUEST_LIMIT.free} Free)`,
  );
  const within = most("maxD1") <= D1_LIMIT.paid && most("maxSubrequests") <= SUBREQUEST_LIMIT.paid;
  console.log(`target:                ${within ? "met    " : "NOT MET"} every invocation within the Workers Paid limits`);
  return within;
}

/** Course writes left in the outbox by `writeBacklog` (the incident run reports them). */
let backlogRows = 0;

/**
 * Writes the backlog (due to the sweep by the time the control run ends), runs the control,
 * then the incident, on `server` (scripts/bench-hub-worker.ts, with `incidentSchools`), and
 * prints the comparison; @returns whether every invocation stayed within the Paid limits.
 */
export async function incidentBench(server: DevServer, receiver: Receiver, receiverPort: number, opts: IncidentOptions): Promise<boolean> {
  const t0 = now();
  const backlog = incidentSchools(opts.backlogSchools).slice(2);
  backlogRows = await writeBacklog(server.base, backlog, opts.backlogWrites);
  console.log(
    `backlog: ${backlogRows} course writes in ${backlog.length} schools left in the outbox (their publish refused) in ${((now() - t0) / 1000).toFixed(0)} s`,
  );
  const control = await run(server, receiver, receiverPort, opts, false);
  const incident = await run(server, receiver, receiverPort, opts, true);
  return report(incident, control, opts);
}
