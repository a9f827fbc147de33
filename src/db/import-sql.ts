/**
 * The steps an import (src/db/import-rows.ts) and the API-key commands (src/db/api-keys.ts)
 * are written as — multi-row upserts and plain commands — and their two renderings: `renderBound` (statements with `?`
 * parameters, at most D1's 100 per statement: the tests' D1 batch) and `renderLiteral` (SQL
 * text with the values inlined, for `wrangler d1 execute --file`, each INSERT as long as the
 * caller allows). Neither reads SQL back.
 */

/** A value of a row. */
export type Value = string | number | null;

/** Renders one value into SQL text: a `?` placeholder (recording the value) or a literal. */
export type Placeholder = (v: Value) => string;

/** One multi-row upsert into a table: its rows, and what to do with a row whose key exists. */
interface Upsert {
  kind: "upsert";
  table: string;
  columns: readonly string[];
  rows: Value[][];
  /** The `ON CONFLICT …` clause. */
  conflict: string;
  /** Rows of a scratch table, deleted by a later step of the same import (not counted). */
  scratch?: true;
}

/** A statement that writes no rows of its own (a DELETE), with its values placed by `sql`. */
interface Command {
  kind: "command";
  sql: (value: Placeholder) => string;
}

/** One step of an import. */
export type ImportStep = Upsert | Command;

/** A SQL statement with positional `?` parameters. */
export interface BoundStatement {
  sql: string;
  params: Value[];
}

/** An upsert step of `rows` into `table`'s `columns`, with its `ON CONFLICT …` clause. */
export const upsert = (table: string, columns: readonly string[], rows: Value[][], conflict: string): Upsert => ({
  kind: "upsert",
  table,
  columns,
  rows,
  conflict,
});

/** Rows the steps write (the rows of every upsert). */
export function rowCount(steps: readonly ImportStep[]): number {
  return steps.reduce((n, s) => n + (s.kind === "upsert" && !s.scratch ? s.rows.length : 0), 0);
}

const insertHead = (u: Upsert) => `INSERT INTO ${u.table} (${u.columns.join(", ")}) VALUES `;
const tuple = (row: Value[], v: Placeholder) => `(${row.map(v).join(", ")})`;

/** D1's limit of bound parameters per statement. */
const MAX_PARAMS = 100;

/** The steps as statements with `?` parameters; an upsert is cut so that none has more than 100. */
export function renderBound(steps: readonly ImportStep[]): BoundStatement[] {
  const out: BoundStatement[] = [];
  const bind = (render: (v: Placeholder) => string) => {
    const params: Value[] = [];
    const placeholder: Placeholder = (value) => {
      params.push(value);
      return "?";
    };
    out.push({ sql: render(placeholder), params });
  };
  for (const s of steps) {
    if (s.kind === "command") {
      bind(s.sql);
      continue;
    }
    const per = Math.max(1, Math.floor(MAX_PARAMS / s.columns.length));
    for (let i = 0; i < s.rows.length; i += per) {
      bind(
        (v) =>
          `${insertHead(s)}${s.rows
            .slice(i, i + per)
            .map((r) => tuple(r, v))
            .join(", ")} ${s.conflict}`,
      );
    }
  }
  return out;
}

/** A value as a SQL literal. */
const literal: Placeholder = (v) => (v === null ? "NULL" : typeof v === "number" ? String(v) : `'${v.replace(/'/g, "''")}'`);

/**
 * The steps as SQL text with the values inlined, one `;`-terminated statement per string;
 * an upsert is cut into INSERTs of at most `maxChars` characters (one row at least).
 */
export function renderLiteral(steps: readonly ImportStep[], maxChars: number): string[] {
  const out: string[] = [];
  for (const s of steps) {
    if (s.kind === "command") {
      out.push(`${s.sql(literal)};`);
      continue;
    }
    const head = insertHead(s);
    const tail = ` ${s.conflict};`;
    let tuples: string[] = [];
    let chars = head.length + tail.length;
    for (const row of s.rows) {
      const t = tuple(row, literal);
      if (tuples.length > 0 && chars + t.length + 2 > maxChars) {
        out.push(`${head}${tuples.join(", ")}${tail}`);
        tuples = [];
        chars = head.length + tail.length;
      }
      tuples.push(t);
      chars += t.length + 2;
    }
    if (tuples.length > 0) out.push(`${head}${tuples.join(", ")}${tail}`);
  }
  return out;
}
