/**
 * A D1 binding that records every statement sent through it — alone, in a batch or in a
 * session (`withSession`) — with the bytes of its bound values, so that a test can say what
 * a request sent to the database (docs/reference.md § Conventions: an unknown credential
 * costs at most one small read, and no statement carries the body before the credential
 * is known), or read back the query plan of each (`refusedPlans`).
 */

import { utf8Bytes } from "../../src/lib/batches";

/** One statement sent: its SQL, its bound values and their UTF-8 bytes (numbers count 8). */
export interface SentStatement {
  sql: string;
  values: unknown[];
  boundBytes: number;
}

const sizeOf = (values: unknown[]) => values.reduce<number>((n, v) => n + (typeof v === "string" ? utf8Bytes(v) : 8), 0);

/** A prepared statement that records itself in `sent` when it runs. */
class RecordedStatement {
  constructor(
    readonly inner: D1PreparedStatement,
    readonly sql: string,
    private readonly sent: SentStatement[],
    readonly values: unknown[] = [],
  ) {}

  bind(...values: unknown[]): RecordedStatement {
    return new RecordedStatement(this.inner.bind(...values), this.sql, this.sent, values);
  }

  record(): void {
    this.sent.push({ sql: this.sql, values: this.values, boundBytes: sizeOf(this.values) });
  }

  first<T>(column?: string): Promise<T | null> {
    this.record();
    return column === undefined ? this.inner.first<T>() : this.inner.first<T>(column);
  }

  all<T>(): Promise<D1Result<T>> {
    this.record();
    return this.inner.all<T>();
  }

  run<T>(): Promise<D1Result<T>> {
    this.record();
    return this.inner.run<T>();
  }

  raw<T>(options?: { columnNames?: boolean }): Promise<T[]> {
    this.record();
    return (options?.columnNames ? this.inner.raw<T>({ columnNames: true }) : this.inner.raw<T>()) as Promise<T[]>;
  }
}

/** `db` (a binding or a session) recording into `sent` what runs through it. */
function recording<D extends object>(db: D, sent: SentStatement[]): D {
  return new Proxy(db, {
    get(target, prop) {
      const t = target as unknown as D1Database;
      if (prop === "prepare") return (sql: string) => new RecordedStatement(t.prepare(sql), sql, sent);
      if (prop === "batch") {
        return (statements: RecordedStatement[]) => {
          for (const s of statements) s.record();
          return t.batch(statements.map((s) => s.inner));
        };
      }
      if (prop === "withSession") return (...args: Parameters<D1Database["withSession"]>) => recording(t.withSession(...args), sent);
      const value = Reflect.get(target, prop, target);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}

/** `db` recording every statement sent through it, and the list it records into. */
export function recordingD1(db: D1Database): { db: D1Database; sent: SentStatement[] } {
  const sent: SentStatement[] = [];
  return { db: recording(db, sent), sent };
}

/** A statement whose plan reads a whole table or sorts into a temp B-tree, and those lines of its plan. */
export interface RefusedPlan {
  sql: string;
  lines: string[];
}

/**
 * The statements of `sent` (each distinct text once, with the values it first ran with)
 * whose EXPLAIN QUERY PLAN on `db` shows a SCAN of a table or a temp B-tree
 * (docs/architecture.md § Invariants: no scan of a growing table, no temp B-tree on a
 * growing set). A scan of `json_each` reads the statement's own bound list, not a table.
 */
export async function refusedPlans(db: D1Database, sent: readonly SentStatement[]): Promise<RefusedPlan[]> {
  const seen = new Set<string>();
  const refused: RefusedPlan[] = [];
  for (const s of sent) {
    if (seen.has(s.sql)) continue;
    seen.add(s.sql);
    const { results } = await db
      .prepare(`EXPLAIN QUERY PLAN ${s.sql}`)
      .bind(...s.values)
      .all<{ detail: string }>();
    const lines = results.map((r) => r.detail).filter((d) => /TEMP B-TREE/.test(d) || (/\bSCAN\b/.test(d) && !/\bSCAN (json_each|CONSTANT ROW)\b/.test(d)));
    if (lines.length > 0) refused.push({ sql: s.sql, lines });
  }
  return refused;
}
