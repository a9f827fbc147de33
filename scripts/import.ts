/**
 * `npm run import -- FILE.json [--local | --remote] [--persist-to DIR] [--chunk-mb N] [--keep-sql DIR] [--quiet]`
 *
 * Loads an import file (docs/operations.md § Data import (operators)) into the D1 databases
 * of wrangler.toml (the directory DIRECTORY and the shards SHARD_<n>), local by default:
 * validates the whole file (`validateImport`, src/db/import.ts) and its keys against the
 * directory (`keyOwnershipProblems`), writing nothing on a problem; places each school
 * (src/db/placement.ts, or `--shard`) and writes schools and keys to the directory; then
 * renders each shard's upserts (`shardSteps`, src/db/import-rows.ts) into SQL chunk files of
 * about `--chunk-mb` MB, one `wrangler d1 execute SHARD_k` per chunk (one D1 batch each:
 * written whole or not at all; a rerun is safe). Exit: 0 done, 1 wrangler failed, 2 bad input.
 */
import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { type ImportFile, type ImportProblem, validateImport } from "../src/db/import";
import { isImportBoundRefusal } from "../src/db/import-quota";
import { openReferences, referenceProblems, storedReferences } from "../src/db/import-references";
import { directorySteps, hashedKeys, type ImportPublish, importedKeys, keyOwnershipProblems, shardSteps, storedKeyOwners } from "../src/db/import-rows";
import { type ImportStep, renderLiteral, rowCount } from "../src/db/import-sql";
import { estimateBytes, knownSchools, partOn, placeSchools, type ShardSize, schoolsOf, shardSize } from "../src/db/placement";
import { importEvents } from "../src/events/import-events";
import { IMPORT_EVENT_BYTES_PER_DAY } from "../src/lib/limits";
import { parseCli, TARGET_OPTIONS, targetOf } from "./lib/args";
import { queryLocalD1 } from "./lib/d1-file";
import { printable } from "./lib/printable";
import { formatInt, Progress } from "./lib/progress";
import { DIRECTORY_BINDING, d1Query, migrationHint, runWrangler, shardBindingsOfConfig, targetArgs, userPath } from "./lib/wrangler";

/** Default size of one SQL chunk file, in MB (measured: see `--chunk-mb`). */
export const DEFAULT_CHUNK_MB = 24;
/** Rough start-up and shut-down time of one `wrangler d1 execute`, in seconds (progress estimate only). */
const WRANGLER_START_SECONDS = 1.5;
/** Courses per `importSteps` call (one relation-list DELETE per table and batch). */
const BATCH_COURSES = 500;

/** Options of {@link importData}. */
export interface ImportOptions {
  /** `local` (default) or `remote` database. */
  target?: "local" | "remote";
  /** Local persistence directory (wrangler `--persist-to`); local only. Default .wrangler/state. */
  persistTo?: string;
  /** Target size of one SQL chunk file in MB (characters / 2^20); default {@link DEFAULT_CHUNK_MB}. */
  chunkMb?: number;
  /** Longest INSERT in characters; default {@link DEFAULT_STATEMENT_CHARS}. */
  statementChars?: number;
  /** Keep the chunk files in this directory instead of a temp dir removed at the end. */
  keepSqlDir?: string;
  /** Draw the progress bar on stderr (default true). */
  progress?: boolean;
  /** ms since the epoch, for the stamps the file leaves out (see `shardSteps`). Default: now. */
  now?: number;
  /**
   * `performance.now()` when the user's command started, for the summary's `wallSeconds`
   * (the CLI passes 0: the process's own start). Default: when `importData` or
   * `importJsonFile` is called.
   */
  startedAt?: number;
  /** The shard every new school of the file goes to (`--shard SHARD_k`); by default each goes to the shard with the fewest bytes. */
  shard?: string;
}

/** What an import did. */
export interface ImportSummary {
  /** Rows inserted or upserted, all tables (relations and API keys included). */
  rows: number;
  /** Courses in the file. */
  courses: number;
  /** SQL statements executed. */
  statements: number;
  /** wrangler invocations (chunk files). */
  chunks: number;
  /** Bytes (characters) of SQL sent. */
  sqlChars: number;
  /** Writing: wall-clock seconds from the first statement built to the last chunk done (what the progress bar shows). */
  seconds: number;
  /** rows / seconds. */
  rowsPerSecond: number;
  /** Seconds spent reading, parsing and validating the file and checking its keys against the database. */
  validateSeconds: number;
  /** Seconds spent placing the schools (the directory's and the shards' reads). */
  placeSeconds: number;
  /** Wall-clock seconds from `startedAt` to the last chunk done: what the user waited. */
  wallSeconds: number;
}

/** The file is not valid: nothing was written. `problems` holds every problem with its JSON path. */
export class ImportValidationError extends Error {
  constructor(readonly problems: ImportProblem[]) {
    super(`import file has ${problems.length} problem(s)`);
    this.name = "ImportValidationError";
  }
}

/** A wrangler call failed. Chunks before `chunk` (1-based) are written; `chunk` was rolled back (local). */
export class ImportExecutionError extends Error {
  constructor(
    message: string,
    readonly chunk: number,
    readonly output: string,
  ) {
    super(message);
    this.name = "ImportExecutionError";
  }
}

/**
 * Longest INSERT, in characters. wrangler (local) sends every statement of a file to
 * workerd in its own round trip (~2 ms), and splits the file with a scanner whose cost grows
 * with the square of a statement's length, so there is a sweet spot (measured: see the report
 * of the import benchmark); it also stays under remote D1's 100 KB statement limit.
 */
export const DEFAULT_STATEMENT_CHARS = 16_000;

/**
 * Rows the import of a validated file writes, computed like its steps (lists deduplicated),
 * without building them: what the progress bar counts to and the summary's `rows`. A school
 * is two rows: the directory's `schools` and its shard's `held_schools` (src/db/import-rows.ts).
 */
export function countRows(file: ImportFile): number {
  let n = 2 * file.schools.length + file.trainings.length + file.groups.length + file.surveyTemplates.length;
  n += file.students.length + file.professors.length + file.courses.length;
  for (const s of file.schools) n += s.apiKeys.length + s.apiKeyHashes.length + (s.changeSeq === undefined ? 0 : 1);
  for (const c of file.courses) {
    n += new Set(c.groupIds).size + new Set(c.studentIds).size + new Set(c.surveyTemplateIds).size + c.professors.length;
  }
  return n;
}

interface Chunk {
  sql: string;
  rows: number;
  statements: number;
}

const tick = () => new Promise<void>((resolve) => setImmediate(resolve));

/**
 * The SQL of one shard's part of the import, cut into chunks of about `chunkChars`
 * characters. Cuts fall only between course batches, so a course's upsert and its relation
 * lists are in one chunk.
 */
async function* sqlChunks(file: ImportFile, now: number, publish: ImportPublish, chunkChars: number, statementChars: number): AsyncGenerator<Chunk> {
  const empty: ImportFile = { schools: [], trainings: [], groups: [], students: [], professors: [], surveyTemplates: [], courses: [] };
  let parts: string[] = [];
  let chars = 0;
  let rows = 0;
  let statements = 0;
  const add = (steps: ImportStep[]) => {
    rows += rowCount(steps);
    for (const sql of renderLiteral(steps, statementChars)) {
      parts.push(sql);
      chars += sql.length + 1;
      statements++;
    }
  };
  add(shardSteps({ ...file, courses: [] }, now));
  for (let i = 0; i < file.courses.length; i += BATCH_COURSES) {
    if (chars >= chunkChars) {
      yield { sql: parts.join("\n"), rows, statements };
      parts = [];
      chars = rows = statements = 0;
    }
    add(shardSteps({ ...empty, courses: file.courses.slice(i, i + BATCH_COURSES) }, now, publish));
    await tick(); // let wrangler's output flow while we build
  }
  // Refresh the query planner's statistics (sqlite_stat1): without them SQLite assumes an
  // index equality on school_id selects ~10 rows and picks poor plans on large schools.
  parts.push("ANALYZE;");
  yield { sql: parts.join("\n"), rows, statements: statements + 1 };
}

/**
 * Validates and imports decoded import-file data into D1 through wrangler.
 *
 * @param data the decoded JSON of an import file (docs/operations.md § "Data import (operators)").
 * @returns counts and timings; `seconds` covers building the SQL and running wrangler,
 *   `wallSeconds` the whole call (from `opts.startedAt`).
 * @throws ImportValidationError when the data is invalid or lists a key of another school
 *   (nothing written).
 * @throws ImportExecutionError when a wrangler call fails (earlier chunks stay written).
 */
export function importData(data: unknown, opts: ImportOptions = {}): Promise<ImportSummary> {
  return checkAndImport(data, opts, performance.now());
}

/** `importData`, its read+validate time counted from `t0` (`performance.now()`; the file's reading, for `importJsonFile`). */
async function checkAndImport(data: unknown, opts: ImportOptions, t0: number): Promise<ImportSummary> {
  const checked = validateImport(data, { remote: opts.target === "remote" });
  if (!checked.ok) throw new ImportValidationError(checked.problems);
  await checkStoredKeys(checked.file, opts);
  const validateSeconds = (performance.now() - t0) / 1000;
  return { ...(await importValidated(checked.file, opts)), validateSeconds, wallSeconds: (performance.now() - (opts.startedAt ?? t0)) / 1000 };
}

/**
 * Runs a read of the import's checks on `binding` (the directory by default): locally on the
 * database file itself (scripts/lib/d1-file.ts: no wrangler start-up, seconds each), remotely
 * through `wrangler d1 execute`.
 */
function read<T>(sql: string, opts: ImportOptions, binding = DIRECTORY_BINDING): Promise<T[]> {
  const target = opts.target ?? "local";
  return target === "local" ? queryLocalD1<T>(sql, opts.persistTo, binding) : d1Query<T>(sql, target, opts.persistTo, binding);
}

/**
 * The check of the file against the database, before anything is written (docs/operations.md § "Data import (operators)"): a key the database already stores for another school refuses the whole file.
 * One read per 500 keys (`read`); none for a file without keys.
 *
 * @throws ImportValidationError naming each such key's JSON path.
 * @throws Error when wrangler fails (with its output).
 */
async function checkStoredKeys(file: ImportFile, opts: ImportOptions): Promise<void> {
  const keys = [...(await importedKeys(file)), ...hashedKeys(file)];
  const stored: { key_hash: string; school_id: string }[] = [];
  for (const sql of renderLiteral(storedKeyOwners(keys.map((k) => k.hash)), Number.POSITIVE_INFINITY)) {
    stored.push(...(await read<{ key_hash: string; school_id: string }>(sql, opts)));
  }
  const problems = keyOwnershipProblems(keys, stored);
  if (problems.length > 0) throw new ImportValidationError(problems);
}

/**
 * The check of the courses' references against the database, before anything is written
 * (docs/operations.md § "Data import (operators)"): an id a course names that is neither in
 * the file nor on its school's shard refuses the whole file. One read (`read`) per school,
 * table and 500 such ids; none when the file defines every id it names.
 *
 * @throws ImportValidationError naming each such reference's course, id and JSON path.
 * @throws Error when wrangler fails (with its output).
 */
async function checkStoredReferences(file: ImportFile, placed: ReadonlyMap<string, string>, opts: ImportOptions): Promise<void> {
  const refs = openReferences(file);
  const stored: { tbl: string; school_id: string; id: string }[] = [];
  for (const shard of new Set(refs.map((r) => placed.get(r.schoolId)!))) {
    const steps = storedReferences(refs.filter((r) => placed.get(r.schoolId) === shard));
    for (const sql of renderLiteral(steps, Number.POSITIVE_INFINITY)) {
      stored.push(...(await read<{ tbl: string; school_id: string; id: string }>(sql, opts, shard)));
    }
  }
  const problems = referenceProblems(refs, stored);
  if (problems.length > 0) throw new ImportValidationError(problems);
}

/**
 * Where each school of `file` goes (docs/reference.md § Database shards): the directory's
 * known schools keep their shard, new ones go to the shard with the fewest bytes (estimated
 * from each shard's row counts), or all to `opts.shard`. One read (`read`) of the directory,
 * and one per shard when a new school is placed by size.
 *
 * @throws ImportValidationError when `opts.shard` is not a shard of wrangler.toml, a
 *   school of the file is being moved, or rows name a school neither the file nor the
 *   directory holds (`unlistedSchools`; nothing written).
 */
async function placement(file: ImportFile, opts: ImportOptions): Promise<Map<string, string>> {
  const [sql] = renderLiteral([knownSchools(schoolsOf(file))], Number.POSITIVE_INFINITY);
  const known = await read<{ id: string; shard: string; state: string }>(sql!, opts);
  // Rows written to a school's old shard during its move would be left behind by the switch.
  const moving = known.filter((r) => r.state !== "active");
  if (moving.length > 0) {
    throw new ImportValidationError(
      moving.map((r) => ({
        path: "$",
        message: `school "${r.id}" is being moved to another shard: finish the move first (npm run shards -- move ${r.id} --to …)`,
      })),
    );
  }
  const knownShards = new Map(known.map((r) => [r.id, r.shard]));
  const unknown = unlistedSchools(file, new Set(knownShards.keys()));
  if (unknown.length > 0) throw new ImportValidationError(unknown);
  // Sizes matter only when a new school is placed by them.
  const bySize = opts.shard === undefined && schoolsOf(file).some((id) => !knownShards.has(id));
  const bytes = new Map<string, number>();
  const [sizeSql] = renderLiteral([shardSize], Number.POSITIVE_INFINITY);
  for (const b of shardBindingsOfConfig()) {
    const [size] = bySize ? await read<ShardSize>(sizeSql!, opts, b) : [];
    bytes.set(b, size ? estimateBytes(size) : 0);
  }
  try {
    return placeSchools(file, { known: knownShards, bytes }, opts.shard);
  } catch (err) {
    throw new ImportValidationError([{ path: "--shard", message: (err as Error).message }]);
  }
}

/** The lists of an import file whose rows name their school (`schoolId`), in file order. */
const SCHOOL_ROWS = ["trainings", "groups", "students", "professors", "surveyTemplates", "courses"] as const;

/**
 * The schools rows of `file` name that neither its `schools` nor the directory (`known`)
 * hold: each would have rows on a shard and no directory entry, so the file is refused. One
 * problem per such school, at the first row naming it (a courses-only file of a school
 * already imported is fine).
 */
function unlistedSchools(file: ImportFile, known: ReadonlySet<string>): ImportProblem[] {
  const listed = new Set(file.schools.map((s) => s.id));
  const problems: ImportProblem[] = [];
  for (const kind of SCHOOL_ROWS) {
    file[kind].forEach((row: { schoolId: string }, i: number) => {
      if (listed.has(row.schoolId) || known.has(row.schoolId)) return;
      listed.add(row.schoolId); // reported once
      problems.push({
        path: `${kind}[${i}].schoolId`,
        message: `school "${row.schoolId}" is neither in the file's "schools" nor in the directory: add it to "schools" ({ "id", "name", "apiKeys" }) or import it first`,
      });
    });
  }
  return problems;
}

/**
 * What to do when a chunk was refused by the import bound of event bytes
 * (docs/operations.md § "Data import (operators)"): wait for the next UTC day and run the
 * import again; `''` for any other failure.
 */
function importBoundHint(output: string): string {
  if (!isImportBoundRefusal(new Error(output))) return "";
  return (
    `\nA school of this chunk has reached the import bound of ${formatInt(IMPORT_EVENT_BYTES_PER_DAY)} bytes of events for today (UTC): ` +
    "the chunks before it are written and their events published; run the import again after 00:00 UTC to finish it."
  );
}

/** Runs one SQL file on `binding` with wrangler. @throws ImportExecutionError when wrangler fails. */
async function executeFile(binding: string, file: string, n: number, opts: ImportOptions): Promise<void> {
  const target = opts.target ?? "local";
  const res = await runWrangler(["d1", "execute", binding, ...targetArgs(target, opts.persistTo), "--file", file, "--yes"]);
  if (res.code !== 0) {
    const output = `${res.stdout}${res.stderr}`.trim();
    const hint = migrationHint(output, target, opts.persistTo) + importBoundHint(output);
    throw new ImportExecutionError(
      `wrangler d1 execute ${binding} failed on chunk ${n} (exit ${res.code}); ${n === 1 ? "no earlier chunk" : `chunks 1..${n - 1}`} written` +
        `${target === "local" ? `, chunk ${n} rolled back` : ""}. The import is idempotent: fix the cause and run it again.${hint}`,
      n,
      output,
    );
  }
}

/** Places and writes a validated file; its summary's `validateSeconds` and `wallSeconds` are the caller's to fill. */
async function importValidated(file: ImportFile, opts: ImportOptions): Promise<Omit<ImportSummary, "validateSeconds" | "wallSeconds">> {
  const now = opts.now ?? Date.now();
  const placeStarted = performance.now();
  const placed = await placement(file, opts);
  await checkStoredReferences(file, placed, opts);
  const placeSeconds = (performance.now() - placeStarted) / 1000;
  const dir = opts.keepSqlDir ?? (await mkdtemp(path.join(os.tmpdir(), "d1-import-")));
  if (opts.keepSqlDir) await mkdir(dir, { recursive: true });
  // One clock for the bar and the summary: both print the same time.
  const started = performance.now();
  const bar = opts.progress === false ? undefined : new Progress(countRows(file), "rows", process.stderr, started);
  const sum = { done: 0, statements: 0, sqlChars: 0, n: 0 };
  let seconds = 0;
  try {
    // The directory first: a school is placed before its rows are written, so a rerun after
    // a failure finds it on the same shard.
    const steps = await directorySteps(file, placed, now);
    const sql = renderLiteral(steps, opts.statementChars ?? DEFAULT_STATEMENT_CHARS);
    // A file without schools (courses of schools already imported) has nothing for the directory.
    if (sql.length > 0) {
      const first = path.join(dir, "directory.sql");
      await writeFile(first, sql.join("\n"));
      sum.n++;
      await executeFile(DIRECTORY_BINDING, first, sum.n, opts);
      sum.done += rowCount(steps);
      sum.statements += sql.length;
    }
    // One publisher for the whole import: a school's event ids sort in change order across chunks.
    const publish = importEvents(now);
    for (const shard of new Set(placed.values())) await importShard(shard, partOn(file, placed, shard), now, publish, dir, opts, bar, sum);
  } finally {
    seconds = (performance.now() - started) / 1000;
    bar?.finish(seconds);
    if (!opts.keepSqlDir) await rm(dir, { recursive: true, force: true });
  }
  return {
    rows: sum.done,
    courses: file.courses.length,
    statements: sum.statements,
    chunks: sum.n,
    sqlChars: sum.sqlChars,
    seconds,
    rowsPerSecond: sum.done / seconds,
    placeSeconds,
  };
}

/** Imports the part of the file placed on `shard`, chunk by chunk, building the next chunk while wrangler runs one. */
async function importShard(
  shard: string,
  file: ImportFile,
  now: number,
  publish: ImportPublish,
  dir: string,
  opts: ImportOptions,
  bar: Progress | undefined,
  sum: { done: number; statements: number; sqlChars: number; n: number },
): Promise<void> {
  const chunkChars = Math.max(1, Math.round((opts.chunkMb ?? DEFAULT_CHUNK_MB) * 2 ** 20));
  let charsPerSecond = 1.5 * 2 ** 20; // first guess for the progress estimate, then measured
  const gen = sqlChunks(file, now, publish, chunkChars, opts.statementChars ?? DEFAULT_STATEMENT_CHARS);
  try {
    let next = gen.next();
    for (;;) {
      const r = await next;
      if (r.done) break;
      const chunk = r.value;
      const n = ++sum.n;
      const chunkFile = path.join(dir, `chunk-${String(n).padStart(4, "0")}.sql`);
      await writeFile(chunkFile, chunk.sql);
      bar?.update(sum.done, `${shard} chunk ${n} (${(chunk.sql.length / 2 ** 20).toFixed(1)} MB)`);
      bar?.expect(chunk.rows, WRANGLER_START_SECONDS + chunk.sql.length / charsPerSecond);
      const chunkStarted = performance.now();
      const run = executeFile(shard, chunkFile, n, opts);
      next = gen.next(); // build the next chunk while wrangler runs this one
      next.catch(() => {}); // a build error surfaces at the next `await next`, not as an unhandled rejection
      await run;
      if (!opts.keepSqlDir) await rm(chunkFile, { force: true });
      const chunkSeconds = (performance.now() - chunkStarted) / 1000;
      if (chunkSeconds > WRANGLER_START_SECONDS) charsPerSecond = chunk.sql.length / (chunkSeconds - WRANGLER_START_SECONDS);
      sum.done += chunk.rows;
      sum.statements += chunk.statements;
      sum.sqlChars += chunk.sql.length;
      bar?.update(sum.done, `${shard} chunk ${n} done`);
    }
  } finally {
    await gen.return(undefined);
  }
}

/**
 * Reads, parses, validates and imports an import file.
 *
 * @param file path of the JSON file.
 * @throws ImportValidationError for invalid JSON (path `$`), an invalid file or a key of
 *   another school (nothing written).
 * @throws ImportExecutionError when a wrangler call fails.
 * @throws Error when the file cannot be read.
 */
export async function importJsonFile(file: string, opts: ImportOptions = {}): Promise<ImportSummary> {
  const t0 = performance.now();
  const text = await readFile(file, "utf8");
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (err) {
    throw new ImportValidationError([{ path: "$", message: `invalid JSON: ${(err as Error).message}` }]);
  }
  return checkAndImport(data, opts, t0);
}

const USAGE = `usage: npm run import -- FILE.json [--local | --remote] [--persist-to DIR] [--shard SHARD_k] [--chunk-mb N] [--statement-kb N] [--keep-sql DIR] [--quiet]

  --local           write to the local D1 database of wrangler dev (default)
  --remote          write to the remote D1 database of wrangler.toml
  --persist-to DIR  local persistence directory (wrangler --persist-to; default .wrangler/state)
  --chunk-mb N      size of one SQL file handed to wrangler, in MB (default ${DEFAULT_CHUNK_MB})
  --statement-kb N  longest INSERT statement, in thousands of characters (default ${DEFAULT_STATEMENT_CHARS / 1000})
  --shard SHARD_k   place every new school of the file on this shard (default: each on the shard with the fewest bytes)
  --keep-sql DIR    keep the generated SQL chunk files in DIR
  --quiet           no progress bar`;

/**
 * The CLI's summary: the whole time the user waited (`wallSeconds`, from the process's start)
 * first, then its parts: start-up (Node and the modules, until `main` ran at `mainStarted` ms),
 * read+validate, placement and writing (the progress bar's time, whose rate it gives).
 */
function summaryLine(s: ImportSummary, target: string, mainStarted: number): string {
  return (
    `imported ${formatInt(s.rows)} rows (${formatInt(s.courses)} courses) into ${target} D1 in ${s.wallSeconds.toFixed(1)} s: ` +
    `start-up ${(mainStarted / 1000).toFixed(1)} s, read+validate ${s.validateSeconds.toFixed(1)} s, placement ${s.placeSeconds.toFixed(1)} s, ` +
    `writing ${s.seconds.toFixed(1)} s (${formatInt(s.rowsPerSecond)} rows/s, ${formatInt(s.rowsPerSecond * 60)} rows/min); ` +
    `${formatInt(s.statements)} statements, ${s.chunks} wrangler call(s), ${(s.sqlChars / 2 ** 20).toFixed(1)} MB of SQL`
  );
}

/** CLI entry point. Returns the exit status. */
export async function main(argv: string[]): Promise<number> {
  const mainStarted = performance.now();
  const args = parseCli(
    {
      args: argv,
      allowPositionals: true,
      options: {
        ...TARGET_OPTIONS,
        "chunk-mb": { type: "string" },
        "keep-sql": { type: "string" },
        "statement-kb": { type: "string" },
        shard: { type: "string" },
        quiet: { type: "boolean" },
        help: { type: "boolean", short: "h" },
      },
    },
    USAGE,
  );
  if (typeof args === "number") return args;
  const { values: v, positionals } = args;
  if (positionals.length !== 1) {
    console.error(USAGE);
    return 2;
  }
  const where = targetOf(v, userPath);
  if (typeof where === "string") {
    console.error(where);
    return 2;
  }
  const chunkMb = v["chunk-mb"] === undefined ? DEFAULT_CHUNK_MB : Number(v["chunk-mb"]);
  if (!(chunkMb > 0)) {
    console.error("--chunk-mb must be a positive number");
    return 2;
  }
  const statementKb = v["statement-kb"] === undefined ? DEFAULT_STATEMENT_CHARS / 1000 : Number(v["statement-kb"]);
  if (!(statementKb > 0)) {
    console.error("--statement-kb must be a positive number");
    return 2;
  }
  const file = userPath(positionals[0]!);
  try {
    const s = await importJsonFile(file, {
      ...where,
      chunkMb,
      statementChars: Math.round(statementKb * 1000),
      keepSqlDir: v["keep-sql"] === undefined ? undefined : userPath(v["keep-sql"]),
      shard: v.shard,
      progress: !v.quiet,
      startedAt: 0, // the process's start: its start-up counts too
    });
    console.log(summaryLine(s, where.target, mainStarted));
    return 0;
  } catch (err) {
    if (err instanceof ImportValidationError) {
      console.error(`${file}: ${err.problems.length} problem(s), nothing imported:`);
      // A path names the file's own fields, which may hold anything: escaped.
      for (const p of err.problems) console.error(`  ${printable(p.path)}: ${printable(p.message)}`);
      return 2;
    }
    if (err instanceof ImportExecutionError) {
      console.error(`${err.output}\n\n${err.message}`);
      return 1;
    }
    console.error((err as Error).message);
    return (err as NodeJS.ErrnoException).code === "ENOENT" ? 2 : 1;
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(path.resolve(process.argv[1])).href) {
  process.exitCode = await main(process.argv.slice(2));
}
