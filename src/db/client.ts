import type { SQL } from "drizzle-orm";
import { type DrizzleD1Database, drizzle } from "drizzle-orm/d1";
import { SQLiteSyncDialect } from "drizzle-orm/sqlite-core";
import { shardBindings } from "./shard-names";

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

type D1Seam = (d1: D1Database) => D1Database;
let d1Seam: D1Seam | null = null;
/** Each env's wrapped copy. */
const seamed = new WeakMap<object, object>();

/**
 * Installs a wrapper of every D1 binding the Worker reads from now on, once: tests install one
 * that refuses what production's D1 refuses and the local runtime accepts
 * (test/support/d1-limits.ts); production never calls it.
 *
 * @throws when a seam is installed already: none can be replaced nor removed, so that no test
 *   file runs the Worker without it.
 */
export function useD1Seam(next: D1Seam): void {
  if (d1Seam !== null) throw new Error("The D1 seam is installed once (test/support/setup.ts): it cannot be replaced nor removed.");
  d1Seam = next;
}

/**
 * `env` as the Worker's handlers use it: itself, or (with a seam installed) a copy whose D1
 * bindings — `DIRECTORY` and every `SHARD_<n>` — are wrapped by the seam, built once per `env`.
 */
export function withD1Seam<E extends object>(env: E): E {
  const seam = d1Seam;
  if (seam === null) return env;
  const known = seamed.get(env);
  if (known) return known as E;
  const bindings = ["DIRECTORY", ...shardBindings(env)].filter((b) => b in env);
  const out = { ...env, ...Object.fromEntries(bindings.map((b) => [b, seam((env as Record<string, D1Database>)[b]!)])) } as E;
  seamed.set(env, out);
  return out;
}

/** What a request's database work needs: reads may go to a replica, writes to the primary. */
export type SessionKind = "read" | "write";

/**
 * One D1 session of a request (docs/architecture.md: reads `withSession(bookmark ?? "first-unconstrained")`,
 * writes `withSession(bookmark ?? "first-primary")`), with a drizzle client over it.
 *
 * `d1` is the session typed as a `D1Database`: drizzle-orm (0.45) has no session type of
 * its own, and its D1 driver only calls `prepare` and `batch`, which `D1DatabaseSession`
 * has with the same signatures. The cast is made here and nowhere else; `exec`, `dump` and
 * `withSession` (which a session lacks) must not be called on it.
 */
export interface DbSession {
  /** The session, for raw statements (`prepare`, `batch` only). */
  d1: D1Database;
  /** drizzle over the session. */
  db: DrizzleD1Database;
  /** The session's bookmark after its queries (`x-d1-bookmark`); null before any query. */
  bookmark(): string | null;
}

/**
 * Opens a D1 session: `kind` "read" starts on any replica (`first-unconstrained`), "write"
 * on the primary (`first-primary`); a client's `bookmark` (validated by
 * src/http/headers.ts) replaces either, so the session sees at least that state. Writes
 * always run on the primary, whatever the start (Cloudflare D1 read replication docs).
 */
export function openSession(d1: D1Database, kind: SessionKind, bookmark?: string): DbSession {
  const session = d1.withSession(bookmark ?? (kind === "read" ? "first-unconstrained" : "first-primary"));
  const asDatabase = session as unknown as D1Database;
  return { d1: asDatabase, db: drizzle(asDatabase), bookmark: () => session.getBookmark() };
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
