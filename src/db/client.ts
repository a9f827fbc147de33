import { drizzle, type DrizzleD1Database } from "drizzle-orm/d1";

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
