/**
 * The physical limit beside each benchmark figure: the same statements the Worker sends to
 * D1, built by the same query builder with the same parameters, run by SQLite alone
 * (node:sqlite, Node ≥ 22.5) on the local D1 file the Worker serves.
 */
import { readdirSync } from "node:fs";
import path from "node:path";
import { DatabaseSync, type SQLInputValue } from "node:sqlite";
import { drizzle } from "drizzle-orm/d1";
import { parseListQuery, parseSearchBody } from "../../src/courses/filters";
import { selectCoursePage } from "../../src/courses/query";
import { heldQuery } from "../../src/db/shards";

/** One statement as D1 receives it. */
export interface Statement {
  sql: string;
  params: unknown[];
}

/**
 * The local D1 file of the shard that holds `schoolId`, under a `--persist-to` directory
 * (`<dir>/v3/d1/miniflare-D1DatabaseObject/<hash>.sqlite`: the one whose `held_schools`
 * names the school).
 *
 * @throws Error when no local shard holds it.
 */
export function localShardFile(persistTo: string, schoolId: string): string {
  const dir = path.join(persistTo, "v3", "d1", "miniflare-D1DatabaseObject");
  for (const f of readdirSync(dir).filter((f) => f.endsWith(".sqlite") && f !== "metadata.sqlite")) {
    const db = new DatabaseSync(path.join(dir, f), { readOnly: true });
    try {
      const held =
        db.prepare("SELECT name FROM sqlite_master WHERE name = 'held_schools'").get() &&
        db.prepare("SELECT 1 FROM held_schools WHERE school_id = ?").get(schoolId);
      if (held) return path.join(dir, f);
    } finally {
      db.close();
    }
  }
  throw new Error(`no local shard in ${dir} holds school ${schoolId}`);
}

/**
 * The shard's statements of one request of the benchmark mix, as the Worker builds them:
 * the held check and the page statement of `readCoursePage` (src/courses/read.ts) for
 * `GET /v3/courses?…` and `POST /v3/courses:search`, `SELECT 1` for the floor.
 */
export function statementsOf(schoolId: string, method: string, urlPath: string, body?: unknown): Statement[] {
  if (urlPath.startsWith("/__bench/floor")) return [{ sql: "SELECT 1 AS one", params: [] }];
  const url = new URL(urlPath, "http://bench");
  const q = method === "POST" ? parseSearchBody(body) : parseListQuery(url.searchParams);
  // toSQL() only: the binding is never called.
  const db = drizzle({} as D1Database);
  return [heldQuery(db, schoolId).toSQL(), selectCoursePage(db, { schoolId }, q).toSQL()];
}

/** Timings of statements run by SQLite alone, in ms (performance.now, µs resolution). */
export interface SqliteTiming {
  medianMs: number;
  p99Ms: number;
  /** Rows of the last statement. */
  rows: number;
}

/**
 * Runs `stmts` in sequence `runs` times on `file` (read-only) after 3 warm-up runs; each
 * sample is the time of the whole sequence (prepare included, as D1 prepares per call).
 */
export function timeInSqlite(file: string, stmts: Statement[], runs = 50): SqliteTiming {
  const db = new DatabaseSync(file, { readOnly: true });
  try {
    const bind = (p: unknown[]) => p.map((v) => (typeof v === "boolean" ? (v ? 1 : 0) : v)) as SQLInputValue[];
    let rows = 0;
    const once = () => {
      for (const s of stmts) rows = db.prepare(s.sql).all(...bind(s.params)).length;
    };
    for (let i = 0; i < 3; i++) once();
    const samples: number[] = [];
    for (let i = 0; i < runs; i++) {
      const t0 = performance.now();
      once();
      samples.push(performance.now() - t0);
    }
    samples.sort((a, b) => a - b);
    return { medianMs: samples[Math.floor((samples.length - 1) / 2)]!, p99Ms: samples[Math.min(samples.length - 1, Math.floor(0.99 * samples.length))]!, rows };
  } finally {
    db.close();
  }
}
