/**
 * The course record of one flat concat() — two arguments per field plus the braces, 30 without
 * includes and up to 38 with all four — kept ONLY as the benchmark's baseline
 * (`x-bench-variant: c`, src/bench/ab-variants.ts), to compare the record of
 * src/courses/record.ts against it in one run. Production D1 refuses it: at most 32 arguments
 * per SQL function (`D1_ERROR: too many arguments on function concat`). The service never
 * sends it; only the benchmark entry rewrites the page statement into it.
 */
import { SQLiteAsyncDialect } from "drizzle-orm/sqlite-core";
import type { Includes } from "../courses/filters";
import { courseRecordJson } from "../courses/record";

/** The top-level arguments of the SQL call that opens at `open` (the index of its `(`), and the index of its `)`. */
export function callArgs(text: string, open: number): { args: string[]; close: number } {
  const args: string[] = [];
  let depth = 0;
  let start = open + 1;
  for (let i = open + 1; i < text.length; i++) {
    const c = text[i];
    if (c === "'" || c === '"') {
      // A quoted literal or identifier; a doubled quote stays inside it.
      let end = text.indexOf(c, i + 1);
      while (end !== -1 && text[end + 1] === c) end = text.indexOf(c, end + 2);
      if (end === -1) break;
      i = end;
    } else if (c === "(") depth++;
    else if (c === ")" && depth > 0) depth--;
    else if ((c === "," || c === ")") && depth === 0) {
      args.push(text.slice(start, i).trim());
      if (c === ")") return { args, close: i };
      start = i + 1;
    }
  }
  throw new Error("unbalanced SQL call");
}

/**
 * The flat record of a nested one: `concat(concat(head…), rest…)` (src/courses/record.ts
 * `concatOf`) as `concat(head…, rest…)`; a record already flat is returned as it is.
 */
export function flatRecord(nested: string): string {
  const inner = "concat(concat(";
  if (!nested.startsWith(inner)) return nested;
  const head = callArgs(nested, inner.length - 1);
  const rest = callArgs(nested, "concat(".length - 1).args.slice(1);
  return `concat(${[...head.args, ...rest].join(", ")})`;
}

const dialect = new SQLiteAsyncDialect();

/** The 16 include combinations' records as record.ts builds them, each with its flat form, where they differ. */
const FLAT_OF: [string, string][] = Array.from({ length: 16 }, (_, m) => {
  const inc: Includes = { students: (m & 1) !== 0, teachers: (m & 2) !== 0, surveyTemplates: (m & 4) !== 0, training: (m & 8) !== 0 };
  const nested = dialect.sqlToQuery(courseRecordJson(inc)).sql;
  return [nested, flatRecord(nested)] as [string, string];
}).filter(([nested, flat]) => nested !== flat);

/** `sql` with the course record it holds (if any) replaced by its flat concat() form. */
export function withFlatRecord(sql: string): string {
  if (!sql.includes("concat(concat(")) return sql;
  for (const [nested, flat] of FLAT_OF) if (sql.includes(nested)) return sql.replace(nested, flat);
  return sql;
}

/** `prepare` and `batch` of a database or session, statements rewritten by `withFlatRecord`. */
const flatQueries = (target: D1Database | D1DatabaseSession) => ({
  prepare: (sql: string) => target.prepare(withFlatRecord(sql)),
  batch: <T>(statements: D1PreparedStatement[]) => target.batch<T>(statements),
});

/** A view of `d1` (and of every session opened on it) that sends the flat record instead of record.ts's. */
export function flatRecordD1(d1: D1Database): D1Database {
  return {
    ...flatQueries(d1),
    exec: (sql) => d1.exec(sql),
    dump: () => d1.dump(),
    withSession: (constraintOrBookmark) => {
      const session = d1.withSession(constraintOrBookmark);
      return { ...flatQueries(session), getBookmark: () => session.getBookmark() };
    },
  };
}
