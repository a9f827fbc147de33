/**
 * D1's production limits (test/support/production-limits.ts: 100 bound parameters, 100,000 bytes of
 * SQL, 2,000,000 bytes per value or row, 32 arguments per SQL function, 50-byte LIKE/GLOB patterns),
 * enforced around a D1 binding on every path: `prepare` (`first`/`all`/`run`/`raw`), `batch`,
 * `exec`, `dump` and `withSession` (the session is limited too). A statement over a limit throws
 * before it runs, with the error production gives (`D1_ERROR: … SQLITE_TOOBIG`/`SQLITE_RANGE`/
 * `SQLITE_ERROR`); every value and row read back is checked too (the whole row of `first(column)`,
 * and 50 MB per statement's result). Each query counts toward its invocation's limit
 * (invocations.ts). setup.ts installs it on every D1 binding of the Worker's env and of the tests'
 * env (`useD1Seam`); stored rows are guarded by the triggers of `guardRows`, installed again after
 * any statement that creates or alters a table (`exec` included).
 */
import { chargeD1Query } from "./invocations";
import { changesSchema, checkRows, checkStatement, GUARDED_COLUMNS_SQL, guardTriggers, SEAM_TRIGGERS_SQL, splitStatements } from "./production-limits";

/** A database or a session: what the guards need to list tables and install triggers. */
type Db = Pick<D1Database, "prepare" | "batch">;

/**
 * Runs `run` (statements that create or alter a table when `schema`) on `db`: the guards step aside
 * for the change (SQLite refuses to drop or rename a column a trigger names), and every table
 * is guarded again after it.
 */
async function withGuards<T>(db: Db, schema: boolean, run: () => Promise<T>): Promise<T> {
  if (!schema) return run();
  const { results } = await db.prepare(SEAM_TRIGGERS_SQL).all<{ name: string }>();
  if (results.length > 0) await db.batch(results.map(({ name }) => db.prepare(`DROP TRIGGER "${name}"`)));
  try {
    return await run();
  } finally {
    await guardRows(db);
  }
}

/** A prepared statement that checks the limits around each run. */
class LimitedStatement {
  constructor(
    readonly db: Db,
    readonly inner: D1PreparedStatement,
    readonly sql: string,
    readonly params: unknown[] = [],
  ) {}

  bind(...values: unknown[]): LimitedStatement {
    return new LimitedStatement(this.db, this.inner.bind(...values), this.sql, values);
  }

  /** Checks the statement, counts the query, runs `run` (guarding a new table's rows). */
  private checked<R>(method: string, run: () => Promise<R>): Promise<R> {
    checkStatement("d1", this.sql, this.params);
    chargeD1Query(method);
    return withGuards(this.db, changesSchema(this.sql), run);
  }

  async first<T = unknown>(column?: string): Promise<T | null> {
    // The whole row is what D1 builds and sends, whichever column is kept.
    const row = await this.checked("first", () => this.inner.first<Record<string, unknown>>());
    checkRows("d1", [row]);
    if (column === undefined || row === null) return row as T | null;
    // A column the row lacks: the runtime's own answer (its error).
    if (!(column in row)) return this.inner.first<T>(column);
    return row[column] as T;
  }

  async all<T = unknown>(): Promise<D1Result<T>> {
    const result = await this.checked("all", () => this.inner.all<T>());
    checkRows("d1", result.results);
    return result;
  }

  async run<T = unknown>(): Promise<D1Result<T>> {
    const result = await this.checked("run", () => this.inner.run<T>());
    checkRows("d1", result.results);
    return result;
  }

  async raw<T = unknown[]>(options?: { columnNames?: boolean }): Promise<T[]> {
    const rows = await this.checked("raw", (): Promise<unknown[]> => (options?.columnNames ? this.inner.raw<T>({ columnNames: true }) : this.inner.raw<T>()));
    checkRows("d1", options?.columnNames ? rows.slice(1) : rows);
    return rows as T[];
  }
}

/** Marks what is limited already, so that a binding wrapped twice is checked once. */
const LIMITED = Symbol("limitedD1");
/** What a limited binding answers with the runtime's own binding behind it (`runtimeD1`). */
const RUNTIME = Symbol("runtimeD1");

/** `db` (a binding or a session) with D1's production limits enforced (see the module comment). */
function limited<D extends object>(db: D): D {
  if ((db as { [LIMITED]?: true })[LIMITED]) return db;
  return new Proxy(db, {
    get(target, prop) {
      const t = target as unknown as D1Database;
      if (prop === LIMITED) return true;
      if (prop === RUNTIME) return target;
      if (prop === "prepare") return (sql: string) => new LimitedStatement(t, t.prepare(sql), sql);
      if (prop === "batch") {
        return async (statements: LimitedStatement[]) => {
          for (const s of statements) checkStatement("d1", s.sql, s.params);
          chargeD1Query("batch");
          const results = await withGuards(
            t,
            statements.some((s) => changesSchema(s.sql)),
            () => t.batch(statements.map((s) => s.inner)),
          );
          for (const r of results) checkRows("d1", r.results);
          return results;
        };
      }
      if (prop === "exec") {
        return async (sql: string) => {
          for (const statement of splitStatements(sql)) checkStatement("d1", statement, []);
          chargeD1Query("exec");
          return withGuards(t, changesSchema(sql), () => t.exec(sql));
        };
      }
      // Production D1 (the SQLite storage backend) has no dump; export goes through wrangler.
      if (prop === "dump")
        return () => Promise.reject(new Error("D1_DUMP_ERROR: dump is not supported by D1's storage backend (simulated production: use `wrangler d1 export`)"));
      if (prop === "withSession") return (...args: Parameters<D1Database["withSession"]>) => limited(t.withSession(...args));
      const value = Reflect.get(target, prop, target);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}

/** `db` with D1's production limits enforced on every path (see the module comment). */
export function limitedD1(db: D1Database): D1Database {
  return limited(db);
}

/**
 * The runtime's own binding (or session) behind `db`, which `limitedD1` wrapped, or `db` itself
 * when it is not wrapped: what `applyD1Migrations` takes (it refuses any other object).
 */
export function runtimeD1(db: D1Database): D1Database {
  return (db as { [RUNTIME]?: D1Database })[RUNTIME] ?? db;
}

/**
 * Installs in `db` the triggers that refuse a stored row over 2,000,000 bytes, on every table
 * (test/support/production-limits.ts `rowSizeTriggers`); run after the migrations.
 */
export async function guardRows(db: Db): Promise<void> {
  const { results } = await db.prepare(GUARDED_COLUMNS_SQL).all<{ tbl: string; col: string }>();
  await db.batch(guardTriggers(results).map((s) => db.prepare(s)));
}
