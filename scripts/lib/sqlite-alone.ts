/**
 * The physical limit beside each benchmark figure: the same statements the Worker sends to
 * D1, built by the same query builder with the same parameters, run by SQLite alone
 * (node:sqlite, Node ≥ 22.5) on the local D1 file the Worker serves.
 */
import { readdirSync } from "node:fs";
import path from "node:path";
import { DatabaseSync, type SQLInputValue } from "node:sqlite";
import { and, eq, isNull } from "drizzle-orm";
import { drizzle } from "drizzle-orm/d1";
import { parseListQuery, parseSearchBody } from "../../src/courses/filters";
import { selectCoursePage } from "../../src/courses/query";
import { apiKeys } from "../../src/db/schema";
import { sha256Hex } from "../../src/lib/crypto";

/** One statement as D1 receives it. */
export interface Statement {
  sql: string;
  params: unknown[];
}

/**
 * The local D1 database file under a `--persist-to` directory
 * (`<dir>/v3/d1/miniflare-D1DatabaseObject/<hash>.sqlite`, the only one there).
 *
 * @throws Error when there is none or more than one.
 */
export function localD1File(persistTo: string): string {
  const dir = path.join(persistTo, "v3", "d1", "miniflare-D1DatabaseObject");
  const files = readdirSync(dir).filter((f) => f.endsWith(".sqlite") && f !== "metadata.sqlite");
  if (files.length !== 1) throw new Error(`expected one D1 database in ${dir}, found ${files.join(", ") || "none"}`);
  return path.join(dir, files[0]!);
}

/**
 * The statements of one request of the benchmark mix, as the Worker builds them: the key
 * lookup and the page statement of `readCoursePage` (src/courses/read.ts) for
 * `GET /v3/courses?…` and `POST /v3/courses:search`, `SELECT 1` for the floor.
 */
export async function statementsOf(apiKey: string, method: string, urlPath: string, body?: unknown): Promise<Statement[]> {
  if (urlPath.startsWith("/__bench/floor")) return [{ sql: "SELECT 1 AS one", params: [] }];
  const keyHash = await sha256Hex(apiKey);
  const url = new URL(urlPath, "http://bench");
  const q = method === "POST" ? parseSearchBody(body) : parseListQuery(url.searchParams);
  // toSQL() only: the binding is never called.
  const db = drizzle({} as D1Database);
  const key = db
    .select({ schoolId: apiKeys.schoolId })
    .from(apiKeys)
    .where(and(eq(apiKeys.keyHash, keyHash), isNull(apiKeys.revokedAt)))
    .toSQL();
  const page = selectCoursePage(db, { keyHash }, q).toSQL();
  return [key, page];
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
