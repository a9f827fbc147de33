/**
 * D1's production limits, enforced around the local D1 binding (the local runtime enforces
 * only some of them). Source: https://developers.cloudflare.com/d1/platform/limits/
 *
 * | limit (production)                          | local runtime        | here                 |
 * |---------------------------------------------|----------------------|----------------------|
 * | 100 bound parameters per query              | not enforced         | checked before a run |
 * | 100,000 bytes of SQL per statement          | enforced (TOOBIG)    | checked before a run |
 * | 1,000,000 bytes per string, BLOB or row     | not enforced         | every bound value, every value and row read back |
 * | 50 bytes per LIKE / GLOB pattern            | enforced             | left to the runtime  |
 *
 * A value read back stands for the strings SQLite builds while it runs the statement
 * (`json_group_array(...)` of an include, for example): production refuses to build one over
 * the limit, so a result value over it would have failed there.
 *
 * `limitedD1(env.SHARD_0)` returns a D1Database that runs every statement on `env.SHARD_0` and throws
 * what production would (`D1_ERROR: … SQLITE_TOOBIG` / `SQLITE_RANGE`) when one is crossed.
 */

/** D1's limits (bytes are UTF-8). */
export const D1_LIMITS = {
  boundParameters: 100,
  sqlBytes: 100_000,
  valueBytes: 1_000_000,
} as const;

const encoder = new TextEncoder();

/** UTF-8 length of `s` (an unpaired surrogate counts 3 bytes, as its replacement would). */
function bytes(s: string): number {
  let n = s.length;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x80) continue;
    n += c < 0x800 ? 1 : 2;
    // A surrogate pair is one code point of 4 bytes: its second half adds nothing more.
    if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length && (s.charCodeAt(i + 1) & 0xfc00) === 0xdc00) i++;
  }
  return n;
}

/** Throws like production D1 when a value is over the string/BLOB limit. */
function checkValue(value: unknown, where: string): void {
  // D1 reads a BLOB back as an array of byte values.
  const size =
    typeof value === "string"
      ? bytes(value)
      : value instanceof ArrayBuffer || ArrayBuffer.isView(value)
        ? value.byteLength
        : Array.isArray(value)
          ? value.length
          : 0;
  if (size > D1_LIMITS.valueBytes) {
    throw new Error(`D1_ERROR: string or blob too big: SQLITE_TOOBIG (simulated production limit: ${where} is ${size} bytes > ${D1_LIMITS.valueBytes})`);
  }
}

function checkStatement(sql: string, params: unknown[]): void {
  if (params.length > D1_LIMITS.boundParameters) {
    throw new Error(
      `D1_ERROR: too many SQL variables: SQLITE_RANGE (simulated production limit: ${params.length} bound parameters > ${D1_LIMITS.boundParameters})`,
    );
  }
  const sqlBytes = encoder.encode(sql).byteLength;
  if (sqlBytes > D1_LIMITS.sqlBytes) throw new Error(`D1_ERROR: statement too long: SQLITE_TOOBIG (simulated production limit: ${sqlBytes} bytes of SQL)`);
  params.forEach((p, i) => {
    checkValue(p, `bound parameter ${i + 1}`);
  });
}

/**
 * Checks every value of every result row, and each row as a whole: SQLite builds a record
 * of the whole row when it sorts it or stores it, and refuses one over the limit too.
 */
function checkRows(rows: unknown): void {
  if (!Array.isArray(rows)) return;
  for (const row of rows) {
    const values: [string, unknown][] = Array.isArray(row) ? row.map((v, i) => [String(i + 1), v]) : row && typeof row === "object" ? Object.entries(row) : [];
    let total = 0;
    for (const [k, v] of values) {
      checkValue(v, `result column ${k}`);
      total += typeof v === "string" ? bytes(v) : Array.isArray(v) ? v.length : 8;
    }
    if (total > D1_LIMITS.valueBytes) {
      throw new Error(`D1_ERROR: string or blob too big: SQLITE_TOOBIG (simulated production limit: a result row of ${total} bytes > ${D1_LIMITS.valueBytes})`);
    }
  }
}

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
    checkStatement(this.sql, this.params);
    const row = column === undefined ? await this.inner.first<T>() : await this.inner.first<T>(column);
    if (column === undefined) checkRows([row]);
    else checkValue(row, `result column ${column}`);
    return row;
  }

  async all<T = unknown>(): Promise<D1Result<T>> {
    checkStatement(this.sql, this.params);
    const result = await this.inner.all<T>();
    checkRows(result.results);
    return result;
  }

  async run<T = unknown>(): Promise<D1Result<T>> {
    checkStatement(this.sql, this.params);
    const result = await this.inner.run<T>();
    checkRows(result.results);
    return result;
  }

  async raw<T = unknown[]>(options?: { columnNames?: boolean }): Promise<T[]> {
    checkStatement(this.sql, this.params);
    const rows = options?.columnNames ? await this.inner.raw<T>({ columnNames: true }) : await this.inner.raw<T>();
    checkRows(rows);
    return rows as T[];
  }
}

/**
 * `db` with D1's production limits enforced (see the module comment). `prepare` and `batch`
 * are checked; anything else (`exec`, `dump`, `withSession`) passes through unchecked.
 */
export function limitedD1(db: D1Database): D1Database {
  return new Proxy(db, {
    get(target, prop) {
      if (prop === "prepare") return (sql: string) => new LimitedStatement(target.prepare(sql), sql);
      if (prop === "batch") {
        return async (statements: LimitedStatement[]) => {
          for (const s of statements) checkStatement(s.sql, s.params);
          const results = await target.batch(statements.map((s) => s.inner));
          for (const r of results) checkRows(r.results);
          return results;
        };
      }
      const value = Reflect.get(target, prop, target);
      return typeof value === "function" ? value.bind(target) : value;
    },
  }) as D1Database;
}
