/**
 * The per-query limits production enforces and the local runtime does not, as one checker shared
 * by the D1 seam (d1-limits.ts), the Durable Object SQL seam (sql-limits.ts) and the stand-in of
 * the D1 HTTP API (scripts/lib/d1-api-stub.ts). Each check throws the error production gives, with
 * `(simulated production limit: …)` appended so a failing test says where it came from.
 *
 * Statements are read by a tokenizer that knows SQLite's quotes, comments and parentheses, so a
 * function call's arguments are counted as SQLite counts them (nested calls and subqueries apart).
 * The verdict of each distinct SQL text is computed once and cached. A string SQLite builds while
 * running and never returns nor stores (`length(x || x)`) is not seen: the runtime refuses
 * `PRAGMA` changes of its own limits (SQLITE_AUTH) and exposes no `sqlite3_limit`.
 */
import { utf8Bytes } from "../../src/lib/batches";

/**
 * The limits, identical for D1 (https://developers.cloudflare.com/d1/platform/limits/) and a Durable
 * Object's SQLite (https://developers.cloudflare.com/durable-objects/platform/limits/ § SQL storage
 * limits). Bytes are UTF-8; "2 MB" is taken as D1's 2,000,000 bytes.
 */
const PRODUCTION_LIMITS = {
  /** "Maximum bound parameters per query: 100". */
  boundParameters: 100,
  /** "Maximum SQL statement length: 100,000 bytes" (D1; "100 KB" for Durable Objects). */
  sqlBytes: 100_000,
  /** "Maximum string, BLOB or table row size: 2,000,000 bytes". */
  valueBytes: 2_000_000,
  /** "Maximum arguments per SQL function: 32". */
  functionArguments: 32,
  /** "Maximum characters (bytes) in a LIKE or GLOB pattern: 50 bytes". */
  likePatternBytes: 50,
  /**
   * A SQLite-backed Durable Object's key-value storage: "Key and value combined cannot exceed
   * 2 MB" (Durable Objects limits § SQLite-backed Durable Objects general limits).
   */
  kvPairBytes: 2_000_000,
  /**
   * D1's "Maximum query result size: 50 MB" (D1 limits page, footnote 5); counted as the bytes of
   * the values of one statement's rows (as `valueBytes` counts them), 50,000,000.
   */
  resultBytes: 50_000_000,
  /**
   * A Durable Object's key-value calls with many keys (`get`/`delete` of an array, `put` of an
   * object): at most 128 keys each (Durable Objects storage API: "up to 128 keys").
   */
  keysPerCall: 128,
} as const;

/** Where an error comes from: D1 prefixes its SQLite errors with `D1_ERROR: `. */
export type Flavor = "d1" | "durable-object";

const fail = (flavor: Flavor, message: string, why: string): never => {
  throw new Error(`${flavor === "d1" ? "D1_ERROR: " : ""}${message} (simulated production limit: ${why})`);
};

/** The UTF-8 size of a value as SQLite stores it (numbers and NULL count 8, a BLOB its bytes). */
function valueBytes(value: unknown): number {
  if (typeof value === "string") return value.length * 3 <= PRODUCTION_LIMITS.valueBytes ? value.length : utf8Bytes(value);
  if (value instanceof ArrayBuffer || ArrayBuffer.isView(value)) return value.byteLength;
  // D1 reads a BLOB back as an array of byte values.
  if (Array.isArray(value)) return value.length;
  return 8;
}

/** Throws `SQLITE_TOOBIG` when one value is over 2,000,000 bytes. */
function checkValue(flavor: Flavor, value: unknown, where: string): void {
  const size = valueBytes(value);
  if (size > PRODUCTION_LIMITS.valueBytes) fail(flavor, "string or blob too big: SQLITE_TOOBIG", `${where} is ${size} bytes > ${PRODUCTION_LIMITS.valueBytes}`);
}

/**
 * Checks every value of every result row, and each row as a whole: a value read back stands for
 * a string SQLite built while running (`group_concat`, `||`), and SQLite builds a record of the
 * whole row when it sorts or stores it; production refuses either over 2,000,000 bytes.
 */
export function checkRows(flavor: Flavor, rows: unknown): void {
  if (!Array.isArray(rows)) return;
  let resultBytes = 0;
  for (const row of rows) {
    const values: [string, unknown][] = Array.isArray(row) ? row.map((v, i) => [String(i + 1), v]) : row && typeof row === "object" ? Object.entries(row) : [];
    // A string's UTF-8 bytes are at most 3 a character: counted exactly only when that bound could pass the limit.
    let bound = 0;
    for (const [k, v] of values) {
      checkValue(flavor, v, `result column ${k}`);
      bound += typeof v === "string" ? v.length * 3 : valueBytes(v);
    }
    const total = bound <= PRODUCTION_LIMITS.valueBytes ? 0 : values.reduce((n, [, v]) => n + (typeof v === "string" ? utf8Bytes(v) : valueBytes(v)), 0);
    if (total > PRODUCTION_LIMITS.valueBytes) {
      fail(flavor, "string or blob too big: SQLITE_TOOBIG", `a result row of ${total} bytes > ${PRODUCTION_LIMITS.valueBytes}`);
    }
    resultBytes += values.reduce((n, [, v]) => n + valueBytes(v), 0);
    if (flavor === "d1" && resultBytes > PRODUCTION_LIMITS.resultBytes) {
      fail(flavor, "query result exceeds the maximum size of 50 MB", `the rows of one statement are over ${PRODUCTION_LIMITS.resultBytes} bytes`);
    }
  }
}

/** A token: its kind, its text (a string literal's value; empty for `other`) and its offset. */
interface Token {
  kind: "word" | "string" | "param" | "punct" | "other";
  text: string;
  at: number;
}

/**
 * SQLite's tokens, enough to see the structure: words (bare identifiers and keywords), string
 * literals (quotes doubled inside), bound parameters (`?`, `?NNN`, `:name`, `@name`, `$name`),
 * `(`, `)` and `,`. Quoted identifiers ("…", `…`, […]) and numbers are `other`; comments and
 * white space are skipped.
 */
function tokenize(sql: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  const closing = (quote: string, from: number) => {
    let j = from + 1;
    for (;;) {
      const k = sql.indexOf(quote, j);
      if (k < 0) return sql.length;
      if (quote !== "]" && sql[k + 1] === quote) j = k + 2;
      else return k + 1;
    }
  };
  while (i < sql.length) {
    const c = sql[i]!;
    if (/\s/.test(c)) i++;
    else if (c === "-" && sql[i + 1] === "-") i = sql.includes("\n", i) ? sql.indexOf("\n", i) + 1 : sql.length;
    else if (c === "/" && sql[i + 1] === "*") i = sql.includes("*/", i + 2) ? sql.indexOf("*/", i + 2) + 2 : sql.length;
    else if (c === "'") {
      const end = closing("'", i);
      tokens.push({ kind: "string", text: sql.slice(i + 1, end - 1).replaceAll("''", "'"), at: i });
      i = end;
    } else if (c === '"' || c === "`" || c === "[") {
      const end = closing(c === "[" ? "]" : c, i);
      tokens.push({ kind: "other", text: "", at: i });
      i = end;
    } else if (c === "?" || ((c === ":" || c === "@" || c === "$") && /[\w]/.test(sql[i + 1] ?? ""))) {
      const m = /^[?:@$][\w]*/.exec(sql.slice(i, i + 200))!;
      tokens.push({ kind: "param", text: m[0], at: i });
      i += m[0].length;
    } else if (/[A-Za-z_\u0080-\uFFFF]/.test(c)) {
      const m = /^[A-Za-z_\u0080-\uFFFF][\w$\u0080-\uFFFF]*/.exec(sql.slice(i, i + 500))!;
      tokens.push({ kind: "word", text: m[0], at: i });
      i += m[0].length;
    } else if (c === "(" || c === ")" || c === ",") {
      tokens.push({ kind: "punct", text: c, at: i });
      i++;
    } else {
      tokens.push({ kind: "other", text: "", at: i });
      i++;
    }
  }
  return tokens;
}

/**
 * SQLite keywords that can stand before `(` without making a function call. Keywords that are
 * also functions (`replace`, `like`, `glob`, `match`, `regexp`, `if`) are left out on purpose.
 */
const NOT_A_FUNCTION = new Set(
  (
    "all and as between by case cast check collate conflict constraint default distinct do else end escape except exists filter " +
    "foreign from group having in index intersect into is join key limit materialized not notnull null offset on or order over " +
    "partition primary recursive references returning select set table then trigger union unique update using values view when where with"
  ).split(" "),
);

/** Words after which `name (` is a name with a list (a table, index, CTE or view), not a call. */
const NAMES_A_LIST = new Set(["into", "table", "exists", "references", "view", "index", "trigger"]);

/** What one SQL text holds that the limits care about (computed once per distinct text). */
interface Analysis {
  /** The first function call over the argument limit: its name, offset and argument count. */
  overArguments?: { name: string; at: number; count: number };
  /** LIKE/GLOB patterns: a literal's text, or a bound parameter's 0-based index. */
  patterns: ({ literal: string } | { param: number })[];
  /** Whether a statement of the text creates or alters a table (anywhere in it, not only first). */
  schemaChange: boolean;
}

const analyses = new Map<string, Analysis>();

function analyse(sql: string): Analysis {
  const cached = analyses.get(sql);
  if (cached) return cached;
  const tokens = tokenize(sql);
  const words = tokens.map((t) => (t.kind === "word" ? t.text.toLowerCase() : ""));
  const analysis: Analysis = {
    patterns: [],
    schemaChange: words.some(
      (w, i) =>
        (w === "alter" && words[i + 1] === "table") ||
        (w === "create" && (words[i + 1] === "table" || (/^temp(orary)?$/.test(words[i + 1]!) && words[i + 2] === "table"))),
    ),
  };
  // `ordered`: past an aggregate's ORDER BY, whose terms are not arguments.
  const frames: { fn?: { name: string; at: number }; commas: number; empty: boolean; ordered: boolean }[] = [];
  // Positional `?` parameters count in order; `?NNN` names its number.
  const paramIndex = new Map<number, number>();
  let next = 0;
  tokens.forEach((t, i) => {
    if (t.kind === "param") {
      const n = t.text.length > 1 && t.text[0] === "?" ? Number(t.text.slice(1)) - 1 : next;
      next = n + 1;
      paramIndex.set(i, n);
    }
  });
  const createIndex = /^\s*create\s+(unique\s+)?index/i.test(sql);
  tokens.forEach((t, i) => {
    const top = frames[frames.length - 1];
    if (top && !(t.kind === "punct" && t.text === ")")) top.empty = false;
    if (t.kind === "punct" && t.text === "(") {
      const prev = tokens[i - 1];
      const before = tokens[i - 2];
      const word = prev?.kind === "word" ? prev.text.toLowerCase() : undefined;
      const isCall =
        word !== undefined &&
        !NOT_A_FUNCTION.has(word) &&
        !(before?.kind === "word" && NAMES_A_LIST.has(before.text.toLowerCase())) &&
        !(createIndex && before?.kind === "word" && before.text.toLowerCase() === "on");
      frames.push({ fn: isCall ? { name: prev!.text, at: prev!.at } : undefined, commas: 0, empty: true, ordered: false });
    } else if (t.kind === "punct" && t.text === ",") {
      if (top && !top.ordered) top.commas++;
    } else if (t.kind === "word" && t.text.toLowerCase() === "order" && top?.fn) {
      top.ordered = true;
    } else if (t.kind === "punct" && t.text === ")") {
      const frame = frames.pop();
      // A CTE's column list (`name(a, b) AS (`, `AS [NOT] MATERIALIZED (`) is not a call either.
      const after = tokens
        .slice(i + 1, i + 3)
        .map((a) => a.text.toLowerCase())
        .join(" ");
      const cte = /^as (\(|not|materialized)$/.test(after);
      const count = frame === undefined || frame.empty ? 0 : frame.commas + 1;
      if (frame?.fn && !cte && count > PRODUCTION_LIMITS.functionArguments && analysis.overArguments === undefined) {
        analysis.overArguments = { ...frame.fn, count };
      }
    } else if (t.kind === "word" && /^(like|glob)$/i.test(t.text) && tokens[i + 1]?.text !== "(") {
      // `x LIKE pattern`: the operand right after the operator, when it is a literal or a parameter.
      const operand = tokens[i + 1];
      if (operand?.kind === "string") analysis.patterns.push({ literal: operand.text });
      else if (operand?.kind === "param") analysis.patterns.push({ param: paramIndex.get(i + 1)! });
    } else if (t.kind === "word" && /^(like|glob)$/i.test(t.text)) {
      // `like(pattern, x)`: the first argument.
      const operand = tokens[i + 2];
      if (operand?.kind === "string" && tokens[i + 3]?.text === ",") analysis.patterns.push({ literal: operand.text });
      else if (operand?.kind === "param" && tokens[i + 3]?.text === ",") analysis.patterns.push({ param: paramIndex.get(i + 2)! });
    }
  });
  if (analyses.size > 10_000) analyses.clear();
  analyses.set(sql, analysis);
  return analysis;
}

/**
 * Throws what production throws for a statement that breaks a per-query limit, before it runs:
 * more than 100 bound parameters, more than 100,000 bytes of SQL, a bound value over 2,000,000
 * bytes, a function call with more than 32 arguments, a LIKE or GLOB pattern over 50 bytes (a
 * literal or a bound parameter; a pattern computed by an expression is left to the runtime, whose
 * SQLite has the same 50-byte limit).
 */
export function checkStatement(flavor: Flavor, sql: string, params: readonly unknown[]): void {
  if (params.length > PRODUCTION_LIMITS.boundParameters) {
    fail(flavor, "too many SQL variables: SQLITE_RANGE", `${params.length} bound parameters > ${PRODUCTION_LIMITS.boundParameters}`);
  }
  const sqlBytes = sql.length * 3 <= PRODUCTION_LIMITS.sqlBytes ? sql.length : utf8Bytes(sql);
  if (sqlBytes > PRODUCTION_LIMITS.sqlBytes) fail(flavor, "statement too long: SQLITE_TOOBIG", `${sqlBytes} bytes of SQL > ${PRODUCTION_LIMITS.sqlBytes}`);
  params.forEach((p, i) => {
    checkValue(flavor, p, `bound parameter ${i + 1}`);
  });
  const { overArguments, patterns } = analyse(sql);
  if (overArguments) {
    const { name, at, count } = overArguments;
    fail(flavor, `too many arguments on function ${name} at offset ${at}: SQLITE_ERROR`, `${count} arguments > ${PRODUCTION_LIMITS.functionArguments}`);
  }
  for (const p of patterns) {
    const pattern = "literal" in p ? p.literal : params[p.param];
    const bytes = typeof pattern === "string" ? utf8Bytes(pattern) : 0;
    if (bytes > PRODUCTION_LIMITS.likePatternBytes) {
      fail(flavor, "LIKE or GLOB pattern too complex: SQLITE_ERROR", `a pattern of ${bytes} bytes > ${PRODUCTION_LIMITS.likePatternBytes}`);
    }
  }
}

/** Whether `sql` creates or alters a table in any of its statements (its new rows need guards). */
export function changesSchema(sql: string): boolean {
  return analyse(sql).schemaChange;
}

/** The statements of a D1 `exec` string: split at `;` outside quotes and comments. */
export function splitStatements(sql: string): string[] {
  const out: string[] = [];
  let start = 0;
  let i = 0;
  while (i < sql.length) {
    const c = sql[i]!;
    if (c === "'" || c === '"' || c === "`") {
      const end = sql.indexOf(c, i + 1);
      i = end < 0 ? sql.length : end + 1;
    } else if (c === "-" && sql[i + 1] === "-") i = sql.includes("\n", i) ? sql.indexOf("\n", i) + 1 : sql.length;
    else if (c === "/" && sql[i + 1] === "*") i = sql.includes("*/", i + 2) ? sql.indexOf("*/", i + 2) + 2 : sql.length;
    else if (c === ";") {
      out.push(sql.slice(start, i));
      start = ++i;
    } else i++;
  }
  out.push(sql.slice(start));
  return out.filter((s) => s.trim() !== "");
}

/**
 * Triggers that refuse, like production, a stored row over 2,000,000 bytes in `table` (whose
 * columns are `columns`): the local SQLite accepts rows far larger. `octet_length` counts a
 * text's UTF-8 bytes and a BLOB's bytes; numbers and NULL count 8.
 */
function rowSizeTriggers(table: string, columns: readonly string[]): string[] {
  const q = (name: string) => `"${name.replaceAll('"', '""')}"`;
  // `+` is an operator: the sum of any number of columns stays within the argument limit.
  const size = columns.map((c) => `coalesce(octet_length(NEW.${q(c)}), 8)`).join(" + ");
  const raise = `SELECT RAISE(ABORT, 'string or blob too big: SQLITE_TOOBIG (simulated production limit: a row of ${table} over ${PRODUCTION_LIMITS.valueBytes} bytes)')`;
  return (["INSERT", "UPDATE"] as const).map(
    (op) =>
      `CREATE TRIGGER IF NOT EXISTS ${q(`seam_row_size_${op.toLowerCase()}_${table}`)} AFTER ${op} ON ${q(table)} WHEN ${size} > ${PRODUCTION_LIMITS.valueBytes} BEGIN ${raise}; END`,
  );
}

/** The SQL listing the tables whose stored rows `rowSizeTriggers` should guard (name, column). */
export const GUARDED_COLUMNS_SQL = `SELECT m.name AS tbl, c.name AS col FROM sqlite_master m JOIN pragma_table_info(m.name) c
  WHERE m.type = 'table' AND m.name NOT LIKE 'sqlite\\_%' ESCAPE '\\' AND m.name NOT LIKE '\\_cf\\_%' ESCAPE '\\' AND m.name <> 'd1_migrations'
    AND m.sql NOT LIKE 'CREATE VIRTUAL%'
    AND NOT EXISTS (SELECT 1 FROM sqlite_master v WHERE v.sql LIKE 'CREATE VIRTUAL%' AND substr(m.name, 1, length(v.name) + 1) = v.name || '_')
  ORDER BY m.name, c.cid`;

/** The names of the triggers `rowSizeTriggers` made. */
export const SEAM_TRIGGERS_SQL = "SELECT name FROM sqlite_master WHERE type = 'trigger' AND name LIKE 'seam\\_row\\_size\\_%' ESCAPE '\\'";

/** Groups `GUARDED_COLUMNS_SQL`'s rows into the guard triggers of every table (see `rowSizeTriggers`). */
export function guardTriggers(rows: readonly { tbl: string; col: string }[]): string[] {
  const byTable = new Map<string, string[]>();
  for (const { tbl, col } of rows) byTable.set(tbl, [...(byTable.get(tbl) ?? []), col]);
  return [...byTable].flatMap(([t, cols]) => rowSizeTriggers(t, cols));
}

/** Whether V8 holds `n` as a small integer (31 bits with pointer compression, as in workerd). */
const isSmi = (n: number) => Number.isInteger(n) && n >= -(2 ** 30) && n < 2 ** 30 && !Object.is(n, -0);

/** The bytes of an unsigned LEB128 varint (V8's length and count fields). */
const varint = (n: number) => (n < 0x80 ? 1 : n < 0x4000 ? 2 : n < 0x20_0000 ? 3 : n < 0x1000_0000 ? 4 : 5);

/**
 * The bytes of `value` as V8's ValueSerializer (format 15, the structured clone a Durable Object
 * stores; `node:v8`'s `serialize` is not implemented in workerd) writes it: the 2-byte header, then
 * a tag byte and its fields per value. Exact for the types listed below; an object of another
 * class counts as its JSON text. A string is one byte a character when every character is
 * Latin-1 (V8's one-byte strings), else two (UTF-16; a padding byte may align it).
 */
function serializedBytes(value: unknown): number {
  let at = 2;
  const seen = new Set<object>();
  const write = (v: unknown): void => {
    if (v === null || v === undefined || typeof v === "boolean") at += 1;
    else if (typeof v === "number") at += isSmi(v) ? 1 + varint(Math.abs(v) * 2) : 9;
    else if (typeof v === "bigint") at += 1 + varint(16) + 8 * Math.max(1, Math.ceil(v.toString(16).replace("-", "").length / 16));
    else if (typeof v === "string") {
      // biome-ignore lint/suspicious/noControlCharactersInRegex: Latin-1 is the range V8 stores one byte a character.
      const oneByte = /^[\u0000-\u00ff]*$/.test(v);
      const bytes = oneByte ? v.length : 2 * v.length;
      if (!oneByte && (at + 1 + varint(bytes)) % 2 === 1) at += 1;
      at += 1 + varint(bytes) + bytes;
    } else if (typeof v === "object") {
      if (seen.has(v)) {
        at += 1 + varint(seen.size);
        return;
      }
      seen.add(v);
      if (v instanceof Date) at += 9;
      else if (v instanceof ArrayBuffer) at += 1 + varint(v.byteLength) + v.byteLength;
      else if (ArrayBuffer.isView(v)) at += 1 + varint(v.buffer.byteLength) + v.buffer.byteLength + 3 + varint(v.byteOffset) + varint(v.byteLength);
      else if (Array.isArray(v)) {
        at += 1 + varint(v.length);
        // An array of numbers not all small integers holds doubles (PACKED_DOUBLE_ELEMENTS): 9 bytes each.
        const doubles = v.length > 0 && v.every((item) => typeof item === "number") && v.some((item) => !isSmi(item as number));
        if (doubles) at += 9 * v.length;
        else for (const item of v) write(item);
        at += 1 + varint(0) + varint(v.length);
      } else if (v instanceof Map) {
        at += 1;
        for (const [k, item] of v) {
          write(k);
          write(item);
        }
        at += 1 + varint(2 * v.size);
      } else if (v instanceof Set) {
        at += 1;
        for (const item of v) write(item);
        at += 1 + varint(v.size);
      } else if (Object.getPrototypeOf(v) === Object.prototype || Object.getPrototypeOf(v) === null) {
        const entries = Object.entries(v);
        at += 1;
        for (const [k, item] of entries) {
          const index = /^(0|[1-9]\d{0,8})$/.test(k) ? Number(k) : null;
          if (index === null) write(k);
          else write(index);
          write(item);
        }
        at += 1 + varint(entries.length);
      } else at += utf8Bytes(JSON.stringify(v) ?? "");
    }
  };
  write(value);
  return at;
}

/** The size of a key-value pair as a Durable Object stores it: the key's UTF-8 bytes and the value's serialized bytes. */
function kvPairBytes(key: string, value: unknown): number {
  return utf8Bytes(key) + serializedBytes(value);
}

/** Throws like production when a key-value pair is over 2 MB. */
export function checkKvPut(key: string, value: unknown): void {
  const bytes = kvPairBytes(key, value);
  if (bytes > PRODUCTION_LIMITS.kvPairBytes) {
    throw new RangeError(
      `Key and value combined cannot exceed 2 MB (simulated production limit: "${key.slice(0, 40)}" is ${bytes} bytes > ${PRODUCTION_LIMITS.kvPairBytes})`,
    );
  }
}

/** Throws like production when one key-value call names more than 128 keys. */
export function checkKvKeys(count: number): void {
  if (count > PRODUCTION_LIMITS.keysPerCall) {
    throw new RangeError(
      `Maximum number of key value pairs is ${PRODUCTION_LIMITS.keysPerCall}. ${count} pairs were provided. (simulated production limit: ${count} keys in one call > ${PRODUCTION_LIMITS.keysPerCall})`,
    );
  }
}
