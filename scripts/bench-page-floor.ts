/**
 * `npm run bench:page-floor [-- --data DIR] [--rounds N] [--warm-up N]` — how close any stored
 * form of the course records can bring the all-includes page to the floor: beside the floor
 * and the listing (plain and all includes), the listing's read without its other steps and
 * the records read from tables that hold them ready (src/bench/page-floor.ts), through the
 * same `wrangler dev` and benchmark entry. A
 * fresh state gets 3 schools, 30,000 courses in `sch_demo` (as in the measurement);
 * `--data` reuses one (its shard gains the two benchmark tables). Requests interleaved one by
 * one, the order rotating each round; prints p50/p90 (ms), D1 ms, bytes and both ratios to the
 * floor. bench/RESULTS.md § "The page's floor" reads it.
 */
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { DatabaseSync } from "node:sqlite";
import { parseArgs } from "node:util";
import { ALL_INCLUDES_QUERY, COURSE_RECORDS_TABLE, PAGE_RECORDS_TABLE } from "../src/bench/page-floor";
import { generateDataset } from "./dataset/build";
import { importData } from "./import";
import { quantile } from "./lib/bench-ab-report";
import { queryLocalD1 } from "./lib/d1-file";
import { startDevServer } from "./lib/dev-server";
import { localShardFile, statementsOf } from "./lib/sqlite-alone";
import { pairedRatio, timedGet } from "./lib/timed-get";
import { applyMigrations, BENCH_ENTRY } from "./lib/wrangler";

const { values: opts } = parseArgs({
  options: {
    data: { type: "string" },
    rounds: { type: "string", default: "300" },
    "warm-up": { type: "string", default: "20" },
  },
});

const SCHOOL = "sch_demo";
const ALL_INCLUDES_PAGE = `/v3/courses?${ALL_INCLUDES_QUERY}`;

/**
 * Writes the two tables of src/bench/page-floor.ts into the shard file of `SCHOOL`: the
 * all-includes first page's records as the listing's own statement builds them, and every
 * course's all-includes record (the same statement, unpaged). Returns the page records' bytes and the number of courses stored.
 */
function writeStoredRecords(persistTo: string): { pageBytes: number; courses: number } {
  const db = new DatabaseSync(localShardFile(persistTo, SCHOOL));
  try {
    const page = statementsOf(SCHOOL, "GET", ALL_INCLUDES_PAGE)[1]!;
    const bind = page.params as (string | number)[];
    // The record is the statement's last column; the page's extra row (hasMore) is left out.
    const records = (db.prepare(page.sql).all(...bind) as Record<string, unknown>[]).slice(0, 100).map((r) => String(Object.values(r).at(-1)));
    db.exec(`DROP TABLE IF EXISTS ${PAGE_RECORDS_TABLE}; CREATE TABLE ${PAGE_RECORDS_TABLE} (i INTEGER PRIMARY KEY, rec TEXT NOT NULL)`);
    const insert = db.prepare(`INSERT INTO ${PAGE_RECORDS_TABLE} (i, rec) VALUES (?, ?)`);
    for (const [i, rec] of records.entries()) insert.run(i, rec);
    // The same statement without its ORDER BY and LIMIT, selecting every course's key beside its record.
    const unpaged = page.sql.replace(/^select /, 'select "courses"."school_id" AS k_school, "courses"."id" AS k_id, ').replace(/ order by .*$/, "");
    db.exec(
      `DROP TABLE IF EXISTS ${COURSE_RECORDS_TABLE}; CREATE TABLE ${COURSE_RECORDS_TABLE} (school_id TEXT NOT NULL, course_id TEXT NOT NULL, rec TEXT NOT NULL, PRIMARY KEY (school_id, course_id))`,
    );
    const rows = db.prepare(unpaged).all(bind[0]!) as Record<string, unknown>[];
    const insertCourse = db.prepare(`INSERT INTO ${COURSE_RECORDS_TABLE} (school_id, course_id, rec) VALUES (?, ?, ?)`);
    db.exec("BEGIN");
    for (const r of rows) insertCourse.run(String(r.k_school), String(r.k_id), String(Object.values(r).at(-1)));
    db.exec("COMMIT");
    return { pageBytes: records.reduce((a, r) => a + Buffer.byteLength(r), 0), courses: rows.length };
  } finally {
    db.close();
  }
}

async function main() {
  const fresh = opts.data === undefined;
  const persistTo = opts.data ?? mkdtempSync(path.join(os.tmpdir(), "school-page-floor-"));
  try {
    if (fresh) {
      console.error("importing 30,000 courses into a fresh local D1…");
      await applyMigrations("local", persistTo, { quiet: true });
      await importData(generateDataset({ schools: 3, courses: 30_000, studentsPerCourse: 10 }), { persistTo });
    }
    const sizes = writeStoredRecords(persistTo);
    const [place] = await queryLocalD1<{ shard: string }>(`SELECT shard FROM schools WHERE id = '${SCHOOL}'`, persistTo);
    if (place === undefined) throw new Error(`the directory of ${persistTo} has no school ${SCHOOL}`);
    const { shard } = place;
    const floorOf = (form: string) => `/__bench/page-floor?shard=${shard}&school=${SCHOOL}&form=${form}`;
    const queries = [
      { name: "floor (SELECT 1)", path: "/__bench/floor" },
      { name: "listing, no includes, limit=100", path: "/v3/courses?limit=100" },
      { name: "listing, all four includes, limit=100", path: ALL_INCLUDES_PAGE },
      { name: "all includes: the listing's page statement alone, raw", path: floorOf("statement") },
      { name: "all includes: the listing's batch through drizzle, no key check or session", path: floorOf("read") },
      { name: "stored: the page's 100 records, 100 rows", path: floorOf("rows") },
      { name: "stored: the page's 100 records, one value", path: floorOf("value") },
      { name: "stored: each course's record, walked in listing order", path: floorOf("courses") },
      { name: "stored: the page's 100 records, answer their count", path: floorOf("count") },
    ];
    const dev = await startDevServer({ persistTo, entry: BENCH_ENTRY, quiet: true, timeoutMs: 180_000, vars: { RATE_LIMIT_ENABLED: "false" } });
    const load = () => os.loadavg()[0]!.toFixed(2);
    try {
      const cells = queries.map(() => ({ ms: [] as number[], db: [] as number[], bytes: 0 }));
      const loadBefore = load();
      const warm = Number(opts["warm-up"]);
      const rounds = Number(opts.rounds);
      for (let r = 0; r < warm + rounds; r++)
        for (let k = 0; k < queries.length; k++) {
          const i = (k + r) % queries.length;
          const s = await timedGet(dev.base, queries[i]!.path);
          if (r < warm) continue;
          cells[i]!.ms.push(s.ms);
          cells[i]!.db.push(s.db);
          cells[i]!.bytes = s.bytes;
        }
      console.log(
        `load average (1 min) before ${loadBefore}, after ${load()}; ${rounds} rounds (+${warm} warm-up); the page's records ${sizes.pageBytes} bytes, ${sizes.courses} courses stored`,
      );
      console.log("| query | p50 ms | p90 ms | D1 ms (median) | body bytes | p50 / floor | paired / floor |");
      console.log("|---|---:|---:|---:|---:|---:|---:|");
      const floor = cells[0]!.ms;
      queries.forEach((q, i) => {
        const c = cells[i]!;
        const cols = [quantile(c.ms, 0.5).toFixed(1), quantile(c.ms, 0.9).toFixed(1), String(quantile(c.db, 0.5)), String(c.bytes)];
        cols.push(`${(quantile(c.ms, 0.5) / quantile(floor, 0.5)).toFixed(2)}×`, `${pairedRatio(c.ms, floor).toFixed(2)}×`);
        console.log(`| ${q.name} | ${cols.join(" | ")} |`);
      });
    } finally {
      await dev.stop();
    }
  } finally {
    if (fresh) rmSync(persistTo, { recursive: true, force: true });
  }
}

await main();
