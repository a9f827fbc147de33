/**
 * A Durable Object SQLite's production limits, enforced around an object's `SqlStorage`:
 * the local runtime accepts a bound value of 8,000,000 bytes (it refuses 9,000,000), production
 * refuses anything over 2 MB. Source: https://developers.cloudflare.com/durable-objects/platform/limits/
 * ("Maximum string, BLOB or table row size: 2 MB", "Maximum SQL statement length: 100 KB",
 * "Maximum bound parameters per query: 100"). setup.ts installs it for every webhook object
 * (`useSqlSeam`); a statement over a limit throws before it runs, as production's would.
 */
import { utf8Bytes } from "../../src/lib/batches";

/** The limits enforced (bytes are UTF-8; 2 MB taken as 2,000,000 bytes, D1's figure). */
const SQL_LIMITS = {
  boundParameters: 100,
  sqlBytes: 100_000,
  valueBytes: 2_000_000,
} as const;

/** UTF-8 bytes of `s`, counted only when its length leaves the answer open. */
function over(s: string, limit: number): number | null {
  if (s.length * 3 <= limit) return null;
  if (s.length > limit) return s.length;
  const n = utf8Bytes(s);
  return n > limit ? n : null;
}

function check(query: string, bindings: unknown[]): void {
  if (bindings.length > SQL_LIMITS.boundParameters) {
    throw new Error(`too many SQL variables: SQLITE_RANGE (simulated production limit: ${bindings.length} bound parameters > ${SQL_LIMITS.boundParameters})`);
  }
  const sqlBytes = over(query, SQL_LIMITS.sqlBytes);
  if (sqlBytes !== null) throw new Error(`statement too long: SQLITE_TOOBIG (simulated production limit: ${sqlBytes} bytes of SQL > ${SQL_LIMITS.sqlBytes})`);
  bindings.forEach((value, i) => {
    const size =
      typeof value === "string" ? over(value, SQL_LIMITS.valueBytes) : value instanceof ArrayBuffer || ArrayBuffer.isView(value) ? value.byteLength : null;
    if (size !== null && size > SQL_LIMITS.valueBytes) {
      throw new Error(
        `string or blob too big: SQLITE_TOOBIG (simulated production limit: bound parameter ${i + 1} is ${size} bytes > ${SQL_LIMITS.valueBytes})`,
      );
    }
  });
}

/** `sql` with production's limits checked before each `exec` (everything else passes through). */
export function limitedSql(sql: SqlStorage): SqlStorage {
  return new Proxy(sql, {
    get(target, prop) {
      if (prop === "exec") {
        return (query: string, ...bindings: unknown[]) => {
          check(query, bindings);
          return target.exec(query, ...bindings);
        };
      }
      const value = Reflect.get(target, prop, target);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}
