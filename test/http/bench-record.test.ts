/**
 * The benchmark's course record A/B: variant C's flat concat() record (src/bench/concat-record.ts)
 * is record.ts's record flattened — the same JSON, with the argument counts production refuses —
 * sent on every statement of C's D1 bindings and sessions; and the report's verdict and place
 * in bench/RESULTS.md (scripts/lib/bench-record-report.ts).
 */
import { SQLiteAsyncDialect } from "drizzle-orm/sqlite-core";
import { describe, expect, it } from "vitest";
import type { AbTimings } from "../../scripts/lib/bench-ab-report";
import {
  RECORD_SECTION_END,
  RECORD_SECTION_START,
  type RecordAbResult,
  recordQueries,
  recordSection,
  recordVerdict,
} from "../../scripts/lib/bench-record-report";
import { callArgs, flatRecord, flatRecordD1 } from "../../src/bench/concat-record";
import { courseRecordJson } from "../../src/courses/record";

const dialect = new SQLiteAsyncDialect();
const COMBINATIONS = Array.from({ length: 16 }, (_, m) => ({
  students: (m & 1) !== 0,
  teachers: (m & 2) !== 0,
  surveyTemplates: (m & 4) !== 0,
  training: (m & 8) !== 0,
}));
/** Arguments of the call opening `sql` (`concat(`). */
const argsOf = (sql: string) => callArgs(sql, sql.indexOf("(")).args.length;

describe("variant C's flat concat() record", () => {
  // Its JSON is record.ts's (concat() is associative and skips NULLs alike, nested or flat); no
  // test runs it, since the tests' D1 refuses what production refuses (test/support/setup.ts).
  it("takes 30 arguments, 2 more per include (38 with all four), where record.ts's outer call takes at most 32", () => {
    for (const inc of COMBINATIONS) {
      const nested = dialect.sqlToQuery(courseRecordJson(inc)).sql;
      const includes = Object.values(inc).filter(Boolean).length;
      expect(argsOf(flatRecord(nested))).toBe(30 + 2 * includes);
      expect(argsOf(nested)).toBe(Math.min(32, 30 + 2 * includes));
      expect(flatRecord(nested) === nested).toBe(includes < 2);
    }
  });

  it("is what C's bindings and their sessions prepare; other statements pass unchanged", () => {
    const seen: string[] = [];
    const target = { prepare: (sql: string) => seen.push(sql) };
    const d1 = flatRecordD1({ ...target, withSession: () => ({ ...target, getBookmark: () => null }) } as unknown as D1Database);
    const all = { students: true, teachers: true, surveyTemplates: true, training: true };
    const page = `SELECT ${dialect.sqlToQuery(courseRecordJson(all)).sql} FROM courses`;
    d1.prepare(page);
    d1.withSession("first-unconstrained").prepare(page);
    d1.prepare("SELECT 1");
    expect(seen.slice(0, 2).map((s) => argsOf(s.slice("SELECT ".length)))).toEqual([38, 38]);
    expect(seen[2]).toBe("SELECT 1");
  });
});

/** Results whose p50s are `a` and `c` ms for each query (one sample each). */
const result = (name: string, a: number, c: number, sameStatement = false, paired?: number): RecordAbResult => {
  const t = (ms: number): AbTimings => ({
    latencies: [ms],
    serverTotals: [ms],
    counts: { d1Calls: [2], roundTrips: [1], rateLimitCalls: [0], bookmark: true, policy: false },
  });
  return { name, request: "GET /", a: t(a), c: t(c), pairedRatios: [paired ?? a / c], sameStatement };
};

describe("the record A/B's report", () => {
  it("runs each course query without includes again with all four, GET and search alike", () => {
    const all = "includeStudents=true&includeTeachers=true&includeSurveyTemplates=true&includeTraining=true";
    const queries = recordQueries([
      { name: "floor", path: "/__bench/floor" },
      { name: "no filter", path: "/v3/courses" },
      { name: "page 50", path: "/v3/courses?page=50" },
      { name: "includes", path: `/v3/courses?${all}` },
      { name: "search", path: "/v3/courses:search", method: "POST", body: { studentId: ["stu_1"] } },
    ]);
    expect(queries.map((q) => [q.name, q.path, q.body])).toEqual([
      ["floor", "/__bench/floor", undefined],
      ["no filter", "/v3/courses", undefined],
      ["no filter + all includes", `/v3/courses?${all}`, undefined],
      ["page 50", "/v3/courses?page=50", undefined],
      ["page 50 + all includes", `/v3/courses?page=50&${all}`, undefined],
      ["includes", `/v3/courses?${all}`, undefined],
      ["search", "/v3/courses:search", { studentId: ["stu_1"] }],
      [
        "search + all includes",
        "/v3/courses:search",
        { studentId: ["stu_1"], includeStudents: true, includeTeachers: true, includeSurveyTemplates: true, includeTraining: true },
      ],
    ]);
  });

  const floor = result("floor (SELECT 1)", 10, 10);
  it("meets its targets when no query whose statements differ is more than 5 % slower in A, round by round, and all four includes stay within 1.5 × the floor", () => {
    const met = recordVerdict([
      floor,
      result("no filter", 12, 10, true),
      result("students", 11, 10, false, 1.04),
      result("all four includes, limit=100", 15, 16),
    ]);
    expect(met).toEqual({ ratioMet: true, worstRatio: 1.04, worstName: "students", noise: 1.2, includesFloor: 1.5, includesMet: true });
    const missed = recordVerdict([floor, result("students", 10.6, 10), result("all four includes, limit=100", 16, 20)]);
    expect([missed.ratioMet, missed.includesMet, missed.worstName]).toEqual([false, false, "students"]);
  });

  it("is a section between its markers", () => {
    const lines = recordSection([floor, result("all four includes, limit=100", 15, 16)], {
      date: "2026-12-01T00:00:00.000Z",
      cpus: 2,
      load: [1, 2],
      courses: 30_000,
      rounds: 1,
      command: "npm run bench -- --record-only",
    });
    expect([lines[0], lines.at(-1)]).toEqual([RECORD_SECTION_START, RECORD_SECTION_END]);
    expect(lines).toContain("| all four includes, limit=100 | differs | 15.00 | 16.00 | 0.938 | 0.938 | 1.50 | 1.60 | 15.00 | 16.00 | 1 / 1 |");
  });
});
