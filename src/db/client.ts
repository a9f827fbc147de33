import type { SQL } from "drizzle-orm";
import { type DrizzleD1Database, drizzle } from "drizzle-orm/d1";
import { SQLiteSyncDialect } from "drizzle-orm/sqlite-core";

const cache = new WeakMap<D1Database, DrizzleD1Database>();

/** The drizzle client of a D1 binding (one per binding, built once per isolate). */
export function getDb(d1: D1Database): DrizzleD1Database {
  let db = cache.get(d1);
  if (!db) {
    db = drizzle(d1);
    cache.set(d1, db);
  }
  return db;
}

const dialect = new SQLiteSyncDialect();

/**
 * A D1 prepared statement from a drizzle `sql` fragment, for raw statements in a
 * `d1.batch([...])` (drizzle's own batch takes query builders, not raw `sql`).
 */
export function prepare(d1: D1Database, query: SQL): D1PreparedStatement {
  const { sql, params } = dialect.sqlToQuery(query);
  return d1.prepare(sql).bind(...params);
}
