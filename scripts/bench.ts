/**
 * `npm run bench` — benchmarks at realistic scale, against the runtime's own floor: generates
 * and imports a dataset (10 schools, 100,000 courses in `sch_demo`), serves it with the
 * benchmark entry (src/bench/entry.ts), drives a fixed query mix with autocannon beside
 * SQLite alone (scripts/lib/sqlite-alone.ts) and Miniflare alone
 * (scripts/lib/miniflare-server.ts), runs the hub benchmark (scripts/bench-hub.ts), the
 * events feed (scripts/lib/bench-feed.ts), the course record's A/B (scripts/lib/bench-record.ts)
 * and the sessions-and-rate-limit A/B (scripts/lib/bench-ab.ts), then writes bench/RESULTS.md
 * and bench/results.json.
 *
 * The steps, options and how to read the figures: docs/development.md § Benchmarks.
 */
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { parseArgs } from "node:util";
import autocannon from "autocannon";
import { DEMO_API_KEY, generateDataset } from "./dataset/build";

/** The school whose courses the mix reads. */
const DEMO_SCHOOL_ID = "sch_demo";

import { datasetStats } from "./generate";
import { type ImportSummary, importData } from "./import";
import { type AbQuery, abQueries, runAb } from "./lib/bench-ab";
import { type AbQueryResult, abSection, abSummary, replaceAbSection, replaceSection } from "./lib/bench-ab-report";
import { benchFeed, type FeedFigures, feedLines } from "./lib/bench-feed";
import { runMirrorBench } from "./lib/bench-mirror";
import { runRecordAb } from "./lib/bench-record";
import { RECORD_SECTION_END, RECORD_SECTION_START, type RecordAbResult, recordFigures, recordQueries, recordSection } from "./lib/bench-record-report";
import { runShardBench, SHARD_SECTION_END, SHARD_SECTION_START, shardSection } from "./lib/bench-shards";
import { type DevServer, startDevServer } from "./lib/dev-server";
import { type MiniflareServer, startMiniflare } from "./lib/miniflare-server";
import { localShardFile, type SqliteTiming, statementsOf, timeInSqlite } from "./lib/sqlite-alone";
import { applyMigrations, BENCH_ENTRY, ROOT } from "./lib/wrangler";

const { values: opts } = parseArgs({
  options: {
    courses: { type: "string", default: "100000" },
    schools: { type: "string", default: "10" },
    "students-per-course": { type: "string", default: "10" },
    duration: { type: "string", default: "5" },
    port: { type: "string" },
    "skip-hub": { type: "boolean", default: false },
    only: { type: "string" },
    keep: { type: "boolean", default: false },
    data: { type: "string" },
    "skip-ab": { type: "boolean", default: false },
    "ab-only": { type: "boolean", default: false },
    "ab-rounds": { type: "string", default: "200" },
    "record-only": { type: "boolean", default: false },
    "shards-only": { type: "boolean", default: false },
    "shard-rounds": { type: "string", default: "60" },
    mirror: { type: "boolean", default: false },
    "mirror-runs": { type: "string", default: "20" },
  },
});

/** One query of the mix. */
interface MixQuery {
  name: string;
  method: "GET" | "POST";
  path: string;
  body?: unknown;
}

/** Figures of one autocannon run. */
interface Run {
  p50: number;
  p99: number;
  rps: number;
  errors: number;
  non2xx: number;
}

/** Figures of one query. */
interface QueryResult {
  name: string;
  request: string;
  c1: Run;
  c16: Run;
  dbMsMedian: number;
  dbMsP99: number;
  roundTrips: number[];
  ratioToFloor: number;
  resultCount: number;
  /** The same statements in SQLite alone (ms). */
  sqlite: SqliteTiming;
  /** The same query under Miniflare directly, 1 connection, and its D1 time (median, ms). */
  miniflare?: { c1: Run; dbMsMedian: number; ratioToFloor: number };
}

const log = (s: string) => process.stderr.write(`${s}\n`);
const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor((s.length - 1) / 2)] ?? NaN;
};
const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(p * s.length))] ?? NaN;
};

async function cannon(base: string, q: MixQuery, connections: number, seconds: number): Promise<Run> {
  const result = await autocannon({
    url: `${base}${q.path}`,
    method: q.method,
    connections,
    duration: seconds,
    headers: { authorization: `Bearer ${DEMO_API_KEY}`, ...(q.body ? { "content-type": "application/json" } : {}) },
    body: q.body ? JSON.stringify(q.body) : undefined,
  });
  return {
    p50: result.latency.p50,
    p99: result.latency.p99,
    rps: result.requests.average,
    errors: result.errors + result.timeouts,
    non2xx: result.non2xx,
  };
}

/** Sequential requests, reading `Server-Timing` (db;dur and the D1 round trips in its desc). */
async function sample(base: string, q: MixQuery, n: number): Promise<{ db: number[]; trips: number[]; count: number }> {
  const db: number[] = [];
  const trips: number[] = [];
  let count = 0;
  for (let i = 0; i < n; i++) {
    const res = await fetch(`${base}${q.path}`, {
      method: q.method,
      headers: { authorization: `Bearer ${DEMO_API_KEY}`, ...(q.body ? { "content-type": "application/json" } : {}) },
      body: q.body ? JSON.stringify(q.body) : undefined,
    });
    const body = (await res.json()) as { status: string; result: unknown[] | unknown; code?: string; message?: string };
    if (res.status !== 200) throw new Error(`${q.name}: ${res.status} ${body.code}: ${body.message}`);
    count = Array.isArray(body.result) ? body.result.length : 1;
    const timing = res.headers.get("server-timing") ?? "";
    db.push(Number(/db;dur=([\d.]+)/.exec(timing)?.[1] ?? NaN));
    trips.push(Number(/D1 round trips: (\d+)/.exec(timing)?.[1] ?? NaN));
  }
  return { db, trips, count };
}

function mix(data: ReturnType<typeof generateDataset>): MixQuery[] {
  const courses = data.courses!.filter((c) => c.schoolId === "sch_demo");
  const students = data.students!.filter((s) => s.schoolId === "sch_demo");
  const first = courses[Math.floor(courses.length / 3)]!;
  const student = first.studentIds![0]!;
  const group = first.groupIds![0]!;
  const professor = first.professors![0]!.professorId;
  const training = first.trainingId!;
  const classroom = courses.find((c) => c.classroom)!.classroom!;
  const creator = courses.find((c) => c.creatorId)!.creatorId!;
  const start = new Date(Date.parse(first.startDateTime)).toISOString();
  const weekLater = new Date(Date.parse(first.startDateTime) + 7 * 86_400_000).toISOString();
  const enc = encodeURIComponent;
  const tenThousand = students.slice(0, 10_000).map((s) => s.id);
  while (tenThousand.length < 10_000) tenThousand.push(`stu_missing${tenThousand.length}`);
  /** POST /v3/courses:search with 10,000 student ids, sorted by name then startDateTime `order`. */
  const search10k = (order: "asc" | "desc"): MixQuery => ({
    name: `search: 10,000 studentId, sort name + startDateTime${order === "desc" ? " desc" : ""}`,
    method: "POST",
    path: "/v3/courses:search",
    body: {
      studentId: tenThousand,
      sort: [
        { field: "name", order: "asc" },
        { field: "startDateTime", order },
      ],
    },
  });
  return [
    { name: "floor (SELECT 1)", method: "GET", path: "/__bench/floor" },
    { name: "no filter", method: "GET", path: "/v3/courses" },
    { name: "courseStartDateTime", method: "GET", path: `/v3/courses?courseStartDateTime=${enc(start)}` },
    { name: "courseEndDateTime", method: "GET", path: `/v3/courses?courseEndDateTime=${enc(weekLater)}` },
    { name: "absencesSent", method: "GET", path: "/v3/courses?absencesSent=true" },
    { name: "absencesNotSent", method: "GET", path: "/v3/courses?absencesNotSent=true" },
    { name: "groupId", method: "GET", path: `/v3/courses?groupId=${group}` },
    { name: "professorId", method: "GET", path: `/v3/courses?professorId=${professor}` },
    { name: "trainingId", method: "GET", path: `/v3/courses?trainingId=${training}` },
    { name: "archived=false", method: "GET", path: "/v3/courses?archived=false" },
    { name: "classroom", method: "GET", path: `/v3/courses?classroom=${enc(classroom)}` },
    { name: "creatorId", method: "GET", path: `/v3/courses?creatorId=${creator}` },
    { name: "date window (one week)", method: "GET", path: `/v3/courses?courseStartDateTime=${enc(start)}&courseEndDateTime=${enc(weekLater)}` },
    { name: "studentId (one student)", method: "GET", path: `/v3/courses?studentId=${student}` },
    { name: "professorSignatureMissing=true", method: "GET", path: "/v3/courses?professorSignatureMissing=true" },
    { name: "name substring", method: "GET", path: `/v3/courses?name=${enc("économie")}` },
    {
      name: "all four includes, limit=100",
      method: "GET",
      path: "/v3/courses?limit=100&includeStudents=true&includeTeachers=true&includeSurveyTemplates=true&includeTraining=true",
    },
    { name: "page 50", method: "GET", path: "/v3/courses?page=50" },
    search10k("asc"),
    // Mixed directions: no index gives this order, so every course of the first name is probed and sorted.
    search10k("desc"),
  ];
}

/** The label of the hub benchmark on the simulated platform. */
const SIMULATED_HUB = "simulated Cloudflare platform (6 requests waiting per I/O context), inspector off";

/**
 * Runs scripts/bench-hub.ts; `inspector: false` serves through wrangler's API without the
 * devtools relay; `simulated`: its simulated-platform mode.
 */
function runHubBench(inspector: boolean, simulated = false): Promise<{ output: string; code: number }> {
  return new Promise((resolve) => {
    const args = [path.join(ROOT, "node_modules", "tsx", "dist", "cli.mjs"), path.join(ROOT, "scripts", "bench-hub.ts"), ...(simulated ? ["--simulated"] : [])];
    const child = spawn(process.execPath, args, {
      cwd: ROOT,
      stdio: ["ignore", "pipe", "inherit"],
      env: { ...process.env, ...(inspector ? {} : { BENCH_INSPECTOR: "off" }) },
    });
    let output = "";
    child.stdout.on("data", (d) => {
      output += d;
      process.stderr.write(d);
    });
    child.on("close", (code) => resolve({ output, code: code ?? 1 }));
  });
}

const fmt = (n: number, d = 1) => (Number.isFinite(n) ? n.toFixed(d) : "—");

async function main() {
  const seconds = Number(opts.duration);
  const genOpts = { schools: Number(opts.schools), courses: Number(opts.courses), studentsPerCourse: Number(opts["students-per-course"]) };
  log(`generating: ${JSON.stringify(genOpts)}`);
  const t0 = performance.now();
  const data = generateDataset(genOpts);
  const stats = datasetStats(data);
  log(`generated ${stats.courses} courses, ${stats.enrolments} course↔student rows, ${stats.rows} rows in ${fmt((performance.now() - t0) / 1000)} s`);

  let importSummary: ImportSummary | undefined;
  const persistTo = opts.data ?? mkdtempSync(path.join(os.tmpdir(), "school-bench-"));
  if (!opts.data) {
    await applyMigrations("local", persistTo, { quiet: true });
    log("importing into a fresh local D1…");
    importSummary = await importData(data, { persistTo, progress: true });
    log(`imported ${importSummary.rows} rows in ${fmt(importSummary.seconds)} s: ${Math.round(importSummary.rowsPerSecond)} rows/s`);
  }

  if (opts.mirror) {
    const dev = await startDevServer({ persistTo, entry: BENCH_ENTRY, vars: { RATE_LIMIT_ENABLED: "false" }, quiet: true });
    try {
      const runs = await runMirrorBench({
        base: dev.base,
        key: DEMO_API_KEY,
        schoolId: DEMO_SCHOOL_ID,
        data,
        persistTo,
        runs: Number(opts["mirror-runs"]),
        log,
      });
      const ok = runs.filter((r) => r.converged).length;
      log(`mirror: converged in ${ok} of ${runs.length} runs`);
      if (ok < runs.length) process.exitCode = 1;
    } finally {
      await dev.stop();
      if (!opts.keep && !opts.data) rmSync(persistTo, { recursive: true, force: true });
    }
    return;
  }

  if (opts["shards-only"]) {
    try {
      const queries = mix(data).filter((q) => q.path !== "/__bench/floor");
      const rounds = Number(opts["shard-rounds"]);
      const b = await runShardBench({ persistTo, queries, apiKey: DEMO_API_KEY, schoolId: DEMO_SCHOOL_ID, rounds, log });
      const md = path.join(ROOT, "bench", "RESULTS.md");
      const section = shardSection(b, { courses: genOpts.courses, rounds, date: new Date().toISOString(), cpus: os.cpus().length });
      writeFileSync(md, replaceSection(existsSync(md) ? readFileSync(md, "utf8") : "# Benchmark results\n", section, SHARD_SECTION_START, SHARD_SECTION_END));
      log("wrote the shards section of bench/RESULTS.md");
    } finally {
      if (!opts.keep && !opts.data) rmSync(persistTo, { recursive: true, force: true });
    }
    return;
  }

  const abPort = opts.port === undefined ? 0 : Number(opts.port) + 2;
  const abList = abQueries(mix(data), data.courses!.find((c) => c.schoolId === "sch_demo")!.id);
  const runAbOf = (list: AbQuery[]) => runAb({ persistTo, port: abPort, queries: list, rounds: Number(opts["ab-rounds"]), log });
  const abInfo = (load0: number) => ({ courses: genOpts.courses, rounds: Number(opts["ab-rounds"]), load0 });
  if (opts["ab-only"]) {
    const load0 = os.loadavg()[0]!;
    try {
      writeAbOnly(await runAbOf(abList), abInfo(load0));
    } finally {
      if (!opts.keep && !opts.data) rmSync(persistTo, { recursive: true, force: true });
    }
    return;
  }

  const only = opts.only?.split("|");
  const queries = mix(data).filter((q, i) => i === 0 || !only || only.includes(q.name));
  const devOpts = {
    persistTo,
    entry: BENCH_ENTRY,
    vars: { WEBHOOK_ALLOW_INSECURE_URLS: "true", RATE_LIMIT_ENABLED: "false" },
    quiet: true,
    port: opts.port === undefined ? undefined : Number(opts.port),
  };
  const runRecordOn = async (base: string) => {
    const load0 = os.loadavg()[0]!;
    const results = await runRecordAb({ base, schoolId: DEMO_SCHOOL_ID, queries: recordQueries(queries), rounds: Number(opts["ab-rounds"]), log });
    return recordLines(results, { courses: genOpts.courses, rounds: Number(opts["ab-rounds"]), load0 });
  };
  if (opts["record-only"]) {
    const dev = await startDevServer(devOpts);
    try {
      writeRecordOnly(await runRecordOn(dev.base));
    } finally {
      await dev.stop();
      if (!opts.keep && !opts.data) rmSync(persistTo, { recursive: true, force: true });
    }
    return;
  }

  let server: DevServer | undefined;
  let mf: MiniflareServer | undefined;
  const results: QueryResult[] = [];
  let ab: { results: AbQueryResult[]; load0: number } | undefined;
  let record: { lines: string[]; results: RecordAbResult[] } | undefined;
  let feed: FeedFigures | undefined;
  try {
    server = await startDevServer(devOpts);
    log(`wrangler dev on ${server.base}`);
    const dbFile = localShardFile(persistTo, DEMO_SCHOOL_ID);
    let floorP50 = NaN;
    for (const q of queries) {
      const sqlite = timeInSqlite(dbFile, statementsOf(DEMO_SCHOOL_ID, q.method, q.path, q.body));
      const s = await sample(server.base, q, 40); // also warms the isolate and D1's page cache
      const c1 = await cannon(server.base, q, 1, seconds);
      const c16 = await cannon(server.base, q, 16, seconds);
      if (q.path === "/__bench/floor") floorP50 = c1.p50;
      const r: QueryResult = {
        name: q.name,
        request: `${q.method} ${q.path.length > 90 ? `${q.path.slice(0, 87)}…` : q.path}${q.body ? " (body)" : ""}`,
        c1,
        c16,
        dbMsMedian: median(s.db),
        dbMsP99: pct(s.db, 0.99),
        roundTrips: [...new Set(s.trips)],
        ratioToFloor: c1.p50 / floorP50,
        resultCount: s.count,
        sqlite,
      };
      results.push(r);
      log(
        `${q.name.padEnd(38)} p50 ${fmt(c1.p50)} ms (×${fmt(r.ratioToFloor, 2)} floor)  p99 ${fmt(c1.p99)}  ${fmt(c1.rps, 0)} rps | c16 ${fmt(c16.rps, 0)} rps p50 ${fmt(c16.p50)}  | D1 ${fmt(r.dbMsMedian, 2)} ms, trips ${r.roundTrips.join("/")} | SQLite ${fmt(sqlite.medianMs, 2)} ms`,
      );
    }
    log("events feed: a page of 100, long-poll wake-ups, filter cost…");
    feed = await benchFeed(server.base, DEMO_API_KEY, floorP50, seconds);
    for (const line of feedLines(feed)) log(line);
    if (!opts["skip-ab"]) record = await runRecordOn(server.base);
    await server.stop();
    server = undefined;

    // The same mix under Miniflare directly (no wrangler dev proxy), 1 connection.
    mf = await startMiniflare({
      persistTo,
      entry: BENCH_ENTRY,
      vars: { WEBHOOK_ALLOW_INSECURE_URLS: "true", RATE_LIMIT_ENABLED: "false" },
      port: opts.port === undefined ? 0 : Number(opts.port) + 1,
    });
    log(`Miniflare directly on ${mf.base}`);
    let mfFloor = NaN;
    for (const [i, q] of queries.entries()) {
      const s = await sample(mf.base, q, 20);
      const c1 = await cannon(mf.base, q, 1, seconds);
      if (q.path === "/__bench/floor") mfFloor = c1.p50;
      results[i]!.miniflare = { c1, dbMsMedian: median(s.db), ratioToFloor: c1.p50 / mfFloor };
      log(`${q.name.padEnd(38)} Miniflare p50 ${fmt(c1.p50)} ms (×${fmt(c1.p50 / mfFloor, 2)} floor)  p99 ${fmt(c1.p99)}  D1 ${fmt(median(s.db), 2)} ms`);
    }
    await mf.stop();
    mf = undefined;
    if (!opts["skip-ab"]) {
      const load0 = os.loadavg()[0]!;
      ab = { results: await runAbOf(abList), load0 };
    }
  } finally {
    await server?.stop();
    await mf?.stop();
    if (!opts.keep && !opts.data) rmSync(persistTo, { recursive: true, force: true });
    else log(`database kept in ${persistTo} (reuse with --data ${persistTo})`);
  }

  const hub: { label: string; output: string; code: number }[] = [];
  if (!opts["skip-hub"]) {
    log("hub benchmark (scripts/bench-hub.ts) under `wrangler dev`…");
    hub.push({ label: "`wrangler dev` (CLI, devtools inspector on)", ...(await runHubBench(true)) });
    log("hub benchmark with wrangler's dev server API, inspector off…");
    hub.push({ label: "wrangler's dev server API (`unstable_startWorker`), inspector off", ...(await runHubBench(false)) });
    log("hub benchmark on the simulated platform (6 requests waiting per I/O context)…");
    hub.push({ label: SIMULATED_HUB, ...(await runHubBench(false, true)) });
  }

  writeResults({ genOpts, stats, importSummary, results, hub, seconds, ab: ab && abLines(ab.results, abInfo(ab.load0)), record, feed });
}

/** The record A/B's section of bench/RESULTS.md (scripts/lib/bench-record-report.ts) with this run's setting. */
function recordLines(results: RecordAbResult[], info: { courses: number; rounds: number; load0: number }): { lines: string[]; results: RecordAbResult[] } {
  const command = `npm run bench${opts["record-only"] ? " -- --record-only" : ""}`;
  const setting = { date: new Date().toISOString(), cpus: os.cpus().length, load: [info.load0, os.loadavg()[0]!] as [number, number], command };
  return { lines: recordSection(results, { ...setting, courses: info.courses, rounds: info.rounds }), results };
}

/** `--record-only`: the record A/B's section of bench/RESULTS.md and its key of bench/results.json, the rest kept. */
function writeRecordOnly(record: { lines: string[]; results: RecordAbResult[] }) {
  const dir = path.join(ROOT, "bench");
  mkdirSync(dir, { recursive: true });
  const md = path.join(dir, "RESULTS.md");
  writeFileSync(
    md,
    replaceSection(existsSync(md) ? readFileSync(md, "utf8") : "# Benchmark results\n", record.lines, RECORD_SECTION_START, RECORD_SECTION_END),
  );
  const jsonPath = path.join(dir, "results.json");
  const json = existsSync(jsonPath) ? JSON.parse(readFileSync(jsonPath, "utf8")) : {};
  writeFileSync(jsonPath, `${JSON.stringify({ ...json, record: recordFigures(record.results) }, null, 2)}\n`);
  log("wrote the record A/B section of bench/RESULTS.md and the record key of bench/results.json");
}

/** The A/B section of bench/RESULTS.md (scripts/lib/bench-ab-report.ts) with this run's setting. */
function abLines(results: AbQueryResult[], info: { courses: number; rounds: number; load0: number }): { lines: string[]; results: AbQueryResult[] } {
  const server = "the benchmark entry under Miniflare directly (scripts/lib/bench-ab.ts says why)";
  const command = opts["ab-only"] ? "npm run bench -- --ab-only" : "npm run bench";
  const setting = { date: new Date().toISOString(), cpus: os.cpus().length, load: [info.load0, os.loadavg()[0]!] as [number, number], server, command };
  return { lines: abSection(results, { ...setting, courses: info.courses, rounds: info.rounds }), results };
}

/** `--ab-only`: the A/B's section of bench/RESULTS.md and its key of bench/results.json, the rest kept. */
function writeAbOnly(results: AbQueryResult[], info: { courses: number; rounds: number; load0: number }) {
  const dir = path.join(ROOT, "bench");
  mkdirSync(dir, { recursive: true });
  const { lines } = abLines(results, info);
  const md = path.join(dir, "RESULTS.md");
  writeFileSync(md, replaceAbSection(existsSync(md) ? readFileSync(md, "utf8") : "# Benchmark results\n", lines));
  const jsonPath = path.join(dir, "results.json");
  const json = existsSync(jsonPath) ? JSON.parse(readFileSync(jsonPath, "utf8")) : {};
  writeFileSync(jsonPath, `${JSON.stringify({ ...json, ab: abSummary(results) }, null, 2)}\n`);
  log("wrote the A/B section of bench/RESULTS.md and the ab key of bench/results.json");
}

function writeResults(r: {
  genOpts: Record<string, number>;
  stats: ReturnType<typeof datasetStats>;
  importSummary?: ImportSummary;
  results: QueryResult[];
  hub: { label: string; output: string; code: number }[];
  seconds: number;
  ab?: { lines: string[]; results: AbQueryResult[] };
  record?: { lines: string[]; results: RecordAbResult[] };
  feed?: FeedFigures;
}) {
  const dir = path.join(ROOT, "bench");
  mkdirSync(dir, { recursive: true });
  const cpus = os.cpus();
  const machine = { cpus: cpus.length, model: cpus[0]?.model ?? "?", node: process.version, date: new Date().toISOString() };
  const json = {
    machine,
    dataset: { ...r.genOpts, ...r.stats },
    import: r.importSummary,
    queries: r.results,
    hub: r.hub.map((h) => ({ label: h.label, exit: h.code, output: h.output })),
    ab: r.ab && abSummary(r.ab.results),
    record: r.record && recordFigures(r.record.results),
    feed: r.feed,
  };
  writeFileSync(path.join(dir, "results.json"), `${JSON.stringify(json, null, 2)}\n`);

  const listings = r.results.filter((q) => !q.name.startsWith("floor"));
  const lines = [
    "# Benchmark results",
    "",
    `Run with \`npm run bench\` on ${machine.date.slice(0, 10)}: ${machine.cpus} CPUs (${machine.model}), Node ${machine.node}, wrangler dev (workerd, local D1) on 127.0.0.1; autocannon on the same machine, ${r.seconds} s per run.`,
    "",
    `Dataset: ${r.stats.courses.toLocaleString("en")} courses (${r.genOpts.courses!.toLocaleString("en")} in \`sch_demo\`), ${r.stats.enrolments.toLocaleString("en")} course↔student rows, ${r.stats.rows.toLocaleString("en")} rows in all, ${r.genOpts.schools} schools.`,
    "",
  ];
  if (r.importSummary) {
    const perMin = r.importSummary.rowsPerSecond * 60;
    lines.push(
      `Import: ${r.importSummary.rows.toLocaleString("en")} rows in ${fmt(r.importSummary.seconds)} s = **${Math.round(perMin).toLocaleString("en")} rows/min** (target ≥ 1,000,000: ${perMin >= 1e6 ? "met" : "NOT met"}); ${r.importSummary.chunks} wrangler calls.`,
      "",
    );
  }
  lines.push(
    "## Listing (sch_demo)",
    "",
    "Columns: end to end through `wrangler dev` (autocannon, 1 and 16 connections) and its ratio to the floor's p50; `D1 ms` is the Worker's `Server-Timing` db (median of 40 sequential requests); `SQLite ms` is the same statements (key lookup + page, same SQL and parameters from the query builder) run by SQLite alone through node:sqlite on the same database file (median of 50); `MF` is the same Worker under Miniflare directly, without wrangler dev's proxy (1 connection).",
    "",
    "| query | p50 ms (1 conn) | × floor | p99 ms | req/s (1) | req/s (16) | p50 ms (16) | p99 ms (16) | D1 ms (median) | SQLite ms (median) | SQLite ms (p99) | MF p50 ms | MF × floor | MF p99 ms | MF D1 ms | D1 round trips | rows |",
    "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
  );
  for (const q of r.results) {
    const m = q.miniflare;
    lines.push(
      `| ${q.name} | ${fmt(q.c1.p50)} | ${fmt(q.ratioToFloor, 2)} | ${fmt(q.c1.p99)} | ${fmt(q.c1.rps, 0)} | ${fmt(q.c16.rps, 0)} | ${fmt(q.c16.p50)} | ${fmt(q.c16.p99)} | ${fmt(q.dbMsMedian, 2)} | ${fmt(q.sqlite.medianMs, 2)} | ${fmt(q.sqlite.p99Ms, 2)} | ${fmt(m?.c1.p50 ?? NaN)} | ${fmt(m?.ratioToFloor ?? NaN, 2)} | ${fmt(m?.c1.p99 ?? NaN)} | ${fmt(m?.dbMsMedian ?? NaN, 2)} | ${q.roundTrips.join("/")} | ${q.resultCount} |`,
    );
  }
  const ratioOk = listings.filter((q) => q.ratioToFloor <= 1.5).length;
  const tripsOk = listings.filter((q) => q.roundTrips.length === 1 && q.roundTrips[0] === 1).length;
  const dbOk = listings.filter((q) => q.dbMsMedian < 5).length;
  const sqliteOk = listings.filter((q) => q.sqlite.medianMs <= 2).length;
  const mfOk = listings.filter((q) => (q.miniflare?.ratioToFloor ?? Infinity) <= 1.5).length;
  lines.push(
    "",
    `Targets over ${listings.length} listing queries: p50 ≤ 1.5 × floor: ${ratioOk}/${listings.length} (under Miniflare directly: ${mfOk}/${listings.length}); SQLite alone ≤ 2 ms: ${sqliteOk}/${listings.length}; exactly 1 D1 round trip: ${tripsOk}/${listings.length}; D1 time < 5 ms: ${dbOk}/${listings.length}.`,
    "",
  );
  if (r.record) lines.push(...r.record.lines, "");
  if (r.feed) lines.push("## Events feed (sch_demo)", "", ...feedLines(r.feed), "");
  if (r.ab) lines.push(...r.ab.lines, "");
  for (const h of r.hub) {
    const wanted = h.output
      .split("\n")
      .filter((l) =>
        /^(deliveries|signatures|publish|end to end|dispatch|healthy|saturation|lag|DELETE|I\/O|CPU|Worker CPU|fan-out|calls between|storage|target|WARNING|machine|PASS|FAIL|\d+ receivers)/.test(
          l,
        ),
      );
    const what =
      h.label === SIMULATED_HUB
        ? "4 receivers answering in 50 ms and one that never answers; 1,000 events at once, then 50 events/s for 10 s (scripts/bench-hub.ts --simulated):"
        : "1,000 events × 5 registrations to a receiver on 127.0.0.1 (scripts/bench-hub.ts):";
    lines.push(`## Hub: ${h.label}`, "", what, "", "```", ...wanted, "```", "");
  }
  const notes = path.join(dir, "NOTES.md");
  if (existsSync(notes)) lines.push(readFileSync(notes, "utf8"));
  writeFileSync(path.join(dir, "RESULTS.md"), `${lines.join("\n")}\n`);
  log(`wrote bench/RESULTS.md and bench/results.json`);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
