/**
 * The course record's A/B of `npm run bench` (alone: `npm run bench -- --record-only`): the
 * listing mix, the floor included, each course query also with all four includes
 * (`recordQueries`, scripts/lib/bench-record-report.ts), served with the record of
 * src/courses/record.ts (A, as deployed) and with the flat concat() record it replaced (C,
 * src/bench/concat-record.ts: production refuses it, it is only the baseline), interleaved
 * request by request on one connection through the same `wrangler dev` as the listing
 * figures, so that their ratios to the floor read alike. Figures and section:
 * scripts/lib/bench-record-report.ts.
 */
import { withFlatRecord } from "../../src/bench/concat-record";
import { type AbQuery, interleave } from "./bench-ab";
import { quantile } from "./bench-ab-report";
import type { RecordAbResult } from "./bench-record-report";
import { statementsOf } from "./sqlite-alone";

/** The orders of A and C, taken in turn. */
const ORDERS: ("a" | "c")[][] = [
  ["a", "c"],
  ["c", "a"],
];

/**
 * Runs the record's A/B of each query in turn against the benchmark entry at `base` (the rate
 * limiter off: it would cost both variants alike).
 *
 * @param opts.rounds timed rounds per query (one request of each variant).
 * @throws Error when a request does not answer 200.
 */
export async function runRecordAb(opts: {
  base: string;
  schoolId: string;
  queries: AbQuery[];
  rounds: number;
  log: (s: string) => void;
}): Promise<RecordAbResult[]> {
  opts.log(`record A/B (record.ts against the flat concat()) on ${opts.base}, ${opts.rounds} rounds per query`);
  const results: RecordAbResult[] = [];
  for (const q of opts.queries) {
    const { timings, perRound } = await interleave(opts.base, q, ORDERS, opts.rounds);
    const r: RecordAbResult = {
      name: q.name,
      request: `${q.method ?? "GET"} ${q.path}${q.body === undefined ? "" : " (body)"}`,
      a: timings.a,
      c: timings.c,
      pairedRatios: perRound.map((ms) => ms.a / ms.c),
      sameStatement: statementsOf(opts.schoolId, q.method ?? "GET", q.path, q.body).every((st) => withFlatRecord(st.sql) === st.sql),
    };
    results.push(r);
    const [pa, pc] = [quantile(r.a.latencies, 0.5), quantile(r.c.latencies, 0.5)];
    opts.log(
      `${q.name.padEnd(38)} p50 A ${pa.toFixed(2)}  C ${pc.toFixed(2)} ms  A / C ${(pa / pc).toFixed(3)}  paired ${quantile(r.pairedRatios, 0.5).toFixed(3)}${r.sameStatement ? "  (same statement)" : ""}`,
    );
  }
  return results;
}
