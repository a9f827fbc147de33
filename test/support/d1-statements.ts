/**
 * A D1 binding that records every statement sent through it — alone, in a batch or in a
 * session (`withSession`) — with the bytes of its bound values, so that a test can say what
 * a request sent to the database (docs/reference.md § Conventions: an unknown credential
 * costs at most one small read, and no statement carries the body before the credential
 * is known).
 */

import { utf8Bytes } from "../../src/lib/batches";

/** One statement sent: its SQL and the UTF-8 bytes of its bound values (numbers count 8). */
export interface SentStatement {
  sql: string;
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
    this.sent.push({ sql: this.sql, boundBytes: sizeOf(this.values) });
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
