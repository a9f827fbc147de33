/**
 * The figures and the bench/RESULTS.md section of the course record's A/B
 * (scripts/lib/bench-record.ts): pure functions, no I/O (test/http/bench-record.test.ts).
 *
 * Targets: no query slower with the record of src/courses/record.ts (A) than with the flat
 * concat() it replaced (C) by more than 5 % (the median over the rounds of A / C ≤ 1.05: each
 * round's pair shares the machine's load, where p50s of a 2-core shared machine drift apart by
 * up to 10 %; judged where the two send different statements: without two includes they send
 * the same one, and their ratio is the run's noise), and the listing with all four includes within 1.5 × the floor (p50 A against
 * the floor's p50).
 */
import type { AbQuery } from "./bench-ab";
import type { AbTimings } from "./bench-ab-report";
import { quantile } from "./bench-ab-report";

/** The largest p50 ratio A / C the target allows. */
const RECORD_TARGET_RATIO = 1.05;
/** The largest ratio to the floor the target allows for all four includes. */
const INCLUDES_TARGET_FLOOR = 1.5;
/** The mix's query with every include (scripts/bench.ts), and its floor. */
const ALL_INCLUDES = "all four includes, limit=100";
const FLOOR = "floor (SELECT 1)";

/** The four include flags, as a query string and as search body fields. */
const INCLUDES = ["includeStudents", "includeTeachers", "includeSurveyTemplates", "includeTraining"] as const;

/**
 * The A/B's queries: each of `mix` as it is, followed, for a course query without includes,
 * by the same with all four (`<name> + all includes`): without two includes or more, the
 * record of A is the flat concat() of C, and their statements are the same.
 */
export function recordQueries(mix: AbQuery[]): AbQuery[] {
  return mix.flatMap((q) => {
    const listing = q.path.startsWith("/v3/courses");
    if (!listing || INCLUDES.some((f) => q.path.includes(f))) return [q];
    const withAll =
      q.method === "POST"
        ? { ...q, body: { ...(q.body as object), ...Object.fromEntries(INCLUDES.map((f) => [f, true])) } }
        : { ...q, path: `${q.path}${q.path.includes("?") ? "&" : "?"}${INCLUDES.map((f) => `${f}=true`).join("&")}` };
    return [q, { ...withAll, name: `${q.name} + all includes` }];
  });
}

/** The markers around the section in bench/RESULTS.md (it is rewritten between them). */
export const RECORD_SECTION_START = "<!-- bench:record -->";
export const RECORD_SECTION_END = "<!-- /bench:record -->";

/** One query of the record's A/B. */
export interface RecordAbResult {
  name: string;
  /** `GET <path>` or `POST <path> (body)`. */
  request: string;
  /** The record of src/courses/record.ts, as deployed. */
  a: AbTimings;
  /** The flat concat() record (src/bench/concat-record.ts): the baseline. */
  c: AbTimings;
  /** Per round (A and C back to back), A / C. */
  pairedRatios: number[];
  /** Whether A and C send the same statements (the record of fewer than two includes is one flat concat() in both). */
  sameStatement: boolean;
}

/** The figures of each query: p50 and p90 of A and C, A / C, the median paired ratio, each p50 against its variant's floor. */
export function recordFigures(results: RecordAbResult[]) {
  const floor = results.find((q) => q.name === FLOOR);
  const floorA = floor ? quantile(floor.a.latencies, 0.5) : NaN;
  const floorC = floor ? quantile(floor.c.latencies, 0.5) : NaN;
  return results.map((q) => {
    const p50A = quantile(q.a.latencies, 0.5);
    const p50C = quantile(q.c.latencies, 0.5);
    return {
      name: q.name,
      request: q.request,
      rounds: q.pairedRatios.length,
      p50A,
      p50C,
      ratio: p50A / p50C,
      pairedRatio: quantile(q.pairedRatios, 0.5),
      floorA: p50A / floorA,
      floorC: p50C / floorC,
      p90A: quantile(q.a.latencies, 0.9),
      p90C: quantile(q.c.latencies, 0.9),
      sameStatement: q.sameStatement,
      roundTrips: { a: q.a.counts.roundTrips, c: q.c.counts.roundTrips },
    };
  });
}

/**
 * The verdict: the paired A / C of every query whose statements differ within
 * `RECORD_TARGET_RATIO`; all four includes' A within `INCLUDES_TARGET_FLOOR` × the floor; and
 * the noise: the paired ratio farthest from 1 among the queries that send the same statement in both.
 */
export function recordVerdict(results: RecordAbResult[]): {
  ratioMet: boolean;
  worstRatio: number;
  worstName: string;
  noise: number;
  includesFloor: number;
  includesMet: boolean;
} {
  const figures = recordFigures(results).filter((f) => f.name !== FLOOR);
  const differing = figures.filter((f) => !f.sameStatement);
  const worst = differing.reduce((w, f) => (f.pairedRatio > w.pairedRatio ? f : w), { name: "—", pairedRatio: -Infinity });
  const includesFloor = figures.find((f) => f.name === ALL_INCLUDES)?.floorA ?? Number.NaN;
  return {
    ratioMet: differing.length > 0 && differing.every((f) => f.pairedRatio <= RECORD_TARGET_RATIO),
    worstRatio: worst.pairedRatio,
    worstName: worst.name,
    noise: figures.filter((f) => f.sameStatement).reduce((n, f) => (Math.abs(f.pairedRatio - 1) > Math.abs(n - 1) ? f.pairedRatio : n), 1),
    includesFloor,
    includesMet: includesFloor <= INCLUDES_TARGET_FLOOR,
  };
}

/** What the section says about the run. */
export interface RecordRunInfo {
  date: string;
  cpus: number;
  /** 1-minute load average when the A/B started and ended. */
  load: [number, number];
  courses: number;
  rounds: number;
  /** The command of the run. */
  command: string;
}

const fmt = (n: number, d = 2) => (Number.isFinite(n) ? n.toFixed(d) : "—");

/** The section of bench/RESULTS.md, markers included: the setting, one row per query, the targets and whether the run met them. */
export function recordSection(results: RecordAbResult[], info: RecordRunInfo): string[] {
  const v = recordVerdict(results);
  const lines = [
    RECORD_SECTION_START,
    "## Course record, A/B",
    "",
    `Run with \`${info.command}\` on ${info.date.slice(0, 10)}: ${info.cpus} CPUs, load average ${fmt(info.load[0])} at the start and ${fmt(info.load[1])} at the end; ${info.courses.toLocaleString("en")} courses in \`sch_demo\`; the benchmark entry under \`wrangler dev\` (rate limiter off), 1 connection.`,
    "",
    `**A** is the course record as deployed (src/courses/record.ts: no SQL function call over 32 arguments, the longest records as a concat() nested in one). **C** is the same Worker, same isolate, sending the record of one flat concat() it replaced (30 arguments, 34–38 with two includes or more: production D1 refuses those), chosen per request by the benchmark entry (\`x-bench-variant: c\`, src/bench/concat-record.ts). Each query: ${info.rounds} rounds of sequential requests, A and C back to back, the order alternating, after a warm-up. A / C = p50 A ÷ p50 C; paired = median over the rounds of A ÷ C (the target's measure: each round's two requests share the machine's load); × floor = each variant's p50 ÷ the floor's p50 in the same variant. Without two includes or more, A and C send the same statement (“same”): their ratio there is this run's noise.`,
    "",
    "| query | statement | p50 A ms | p50 C ms | A / C | paired A / C | A × floor | C × floor | p90 A ms | p90 C ms | round trips A / C |",
    "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
  ];
  for (const f of recordFigures(results)) {
    lines.push(
      `| ${f.name} | ${f.sameStatement ? "same" : "differs"} | ${fmt(f.p50A)} | ${fmt(f.p50C)} | ${fmt(f.ratio, 3)} | ${fmt(f.pairedRatio, 3)} | ${fmt(f.floorA)} | ${fmt(f.floorC)} | ${fmt(f.p90A)} | ${fmt(f.p90C)} | ${f.roundTrips.a.join("/")} / ${f.roundTrips.c.join("/")} |`,
    );
  }
  lines.push(
    "",
    `Targets: no query slower in A than in C by more than ${Math.round((RECORD_TARGET_RATIO - 1) * 100)} % where their statements differ (largest paired A / C ${fmt(v.worstRatio, 3)}, ${v.worstName}; the same statement in both: ${fmt(v.noise, 3)} at the farthest from 1 in this run) — ${v.ratioMet ? "**met**" : "**NOT met**"}; all four includes within ${INCLUDES_TARGET_FLOOR} × the floor in A (${fmt(v.includesFloor)} ×) — ${v.includesMet ? "**met**" : "**NOT met**"}.`,
    RECORD_SECTION_END,
  );
  return lines;
}
