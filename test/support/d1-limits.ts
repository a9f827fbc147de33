/**
 * D1's production limits (test/support/production-limits.ts: 100 bound parameters, 100,000 bytes of
 * SQL, 2,000,000 bytes per value or row, 32 arguments per SQL function, 50-byte LIKE/GLOB patterns),
 * enforced around a D1 binding on every path: `prepare` (`first`/`all`/`run`/`raw`), `batch`,
 * `exec`, `dump` and `withSession` (the session is limited too). A statement over a limit throws
 * before it runs, with the error production gives (`D1_ERROR: … SQLITE_TOOBIG`/`SQLITE_RANGE`/
 * `SQLITE_ERROR`); every value and row read back is checked too. setup.ts installs it on every D1
 * binding of the Worker's env and of the tests' env (`useD1Seam`); stored rows are guarded by
 * the triggers of `guardRows`.
 */
import { checkRows, checkStatement, checkValue, GUARDED_COLUMNS_SQL, guardTriggers, splitStatements } from "./production-limits";

/** A prepared statement that checks the limits around each run. */
class LimitedStatement {
  constructor(
    readonly inner: D1PreparedStatement,
    readonly sql: string,
    readonly params: unknown[] = [],
  ) {}

  bind(...values: unknown[]): LimitedStatement {
    return new LimitedStatement(this.inner.bind(...values), this.sql, values);
  }

  async first<T = unknown>(column?: string): Promise<T | null> {
    checkStatement("d1", this.sql, this.params);
    const row = column === undefined ? await this.inner.first<T>() : await this.inner.first<T>(column);
    if (column === undefined) checkRows("d1", [row]);
    else checkValue("d1", row, `result column ${column}`);
    return row;
  }

  async all<T = unknown>(): Promise<D1Result<T>> {
    checkStatement("d1", this.sql, this.params);
    const result = await this.inner.all<T>();
    checkRows("d1", result.results);
    return result;
  }

  async run<T = unknown>(): Promise<D1Result<T>> {
    checkStatement("d1", this.sql, this.params);
    const result = await this.inner.run<T>();
    checkRows("d1", result.results);
    return result;
  }

  async raw<T = unknown[]>(options?: { columnNames?: boolean }): Promise<T[]> {
    checkStatement("d1", this.sql, this.params);
    const rows = options?.columnNames ? await this.inner.raw<T>({ columnNames: true }) : await this.inner.raw<T>();
    checkRows("d1", options?.columnNames ? rows.slice(1) : rows);
    return rows as T[];
  }
}

/** Marks what is limited already, so that a binding wrapped twice is checked once. */
const LIMITED = Symbol("limitedD1");

/** `db` (a binding or a session) with D1's production limits enforced (see the module comment). */
function limited<D extends object>(db: D): D {
  if ((db as { [LIMITED]?: true })[LIMITED]) return db;
  return new Proxy(db, {
    get(target, prop) {
      const t = target as unknown as D1Database;
      if (prop === LIMITED) return true;
      if (prop === "prepare") return (sql: string) => new LimitedStatement(t.prepare(sql), sql);
      if (prop === "batch") {
        return async (statements: LimitedStatement[]) => {
          for (const s of statements) checkStatement("d1", s.sql, s.params);
          const results = await t.batch(statements.map((s) => s.inner));
          for (const r of results) checkRows("d1", r.results);
          return results;
        };
      }
      if (prop === "exec") {
        return async (sql: string) => {
          for (const statement of splitStatements(sql)) checkStatement("d1", statement, []);
          return t.exec(sql);
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
 * Installs in `db` the triggers that refuse a stored row over 2,000,000 bytes, on every table
 * (test/support/production-limits.ts `rowSizeTriggers`); run after the migrations.
 */
export async function guardRows(db: D1Database): Promise<void> {
  const { results } = await db.prepare(GUARDED_COLUMNS_SQL).all<{ tbl: string; col: string }>();
  await db.batch(guardTriggers(results).map((s) => db.prepare(s)));
}
