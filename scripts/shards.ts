/**
 * `npm run shards -- migrate | status [--json] | move SCHOOL_ID --to SHARD_k [--abort] | export --school ID [--out FILE]` [--local | --remote] [--persist-to DIR]: the operators' view of the D1
 * shards (docs/operations.md § Database shards): `migrate` applies the migrations; `status` prints each
 * shard's schools, courses, bytes and share of 10 GB, each school's shard and state, and
 * warns of a school holding more than 10 % of its shard (`SCHOOL_SHARE_WARNING`); `move` runs
 * src/db/move.ts (resumes an interrupted move; `--abort` undoes one not switched); `export`
 * writes one school's import file (src/db/export.ts). Locally `status` reads the SQLite files,
 * `move` and `export` go through Miniflare (scripts/lib/d1-local.ts; a move wants the dev
 * server stopped); remotely all use the D1 HTTP API (scripts/lib/d1-http.ts).
 * Exit status (operations.md): 0 done, 1 a step failed (run it again), 2 bad usage, unknown
 * school or shard, a move under way elsewhere, or missing credentials.
 */

import { once } from "node:events";
import { createWriteStream } from "node:fs";
import { rm } from "node:fs/promises";
import type { Writable } from "node:stream";
import { type ExportCounts, ExportRefused, exportSchool } from "../src/db/export";
import { renderLiteral } from "../src/db/import-sql";
import type { MoveDatabases } from "../src/db/move";
import { estimateBytes, estimateSchoolBytes, SCHOOL_SHARE_WARNING, type SchoolSize, type ShardSize, schoolSize, shardSize } from "../src/db/placement";
import { ID_RE } from "../src/lib/ids";
import { type D1Target, parseD1Cli, usageError } from "./lib/args";
import { runIfMain } from "./lib/cli";
import { d1ApiOfEnv, openRemoteD1 } from "./lib/d1-http";
import { openLocalD1, readLocalD1 } from "./lib/d1-local";
import { printable, printableJson } from "./lib/printable";
import { formatInt, table } from "./lib/progress";
import { applyMigrations, directoryAndShards, migrationHint, userPath } from "./lib/wrangler";

/** A D1 database's size limit (Cloudflare D1 limits), in bytes. */
const DATABASE_MAX_BYTES = 10 * 1000 ** 3;

const USAGE = `usage: npm run shards -- <command> [--local | --remote] [--persist-to DIR] [--json]

commands:
  migrate   apply the D1 migrations to the directory and every shard of wrangler.toml
  status    per shard: schools, courses, bytes, share of 10 GB; per school: its shard and state
  move SCHOOL_ID --to SHARD_k
            move a school to another shard (or finish a move interrupted before); writes of the
            school answer 503 SCHOOL_MOVING meanwhile, reads keep working. Local: stop the dev server first
  move SCHOOL_ID --abort
            undo a move that has not switched yet
  export --school ID [--out FILE]
            write the school's data (courses, relations, API key hashes) as an import file, to FILE or stdout

options:
  --local           the local D1 databases of wrangler dev (default)
  --remote          the remote D1 databases of wrangler.toml (migrate: through wrangler; status and
                    move: the D1 HTTP API, with CLOUDFLARE_API_TOKEN and CLOUDFLARE_ACCOUNT_ID set)
  --persist-to DIR  local persistence directory (wrangler --persist-to; default .wrangler/state)
  --json            status as one JSON document
  --school ID       export: the school to export
  --out FILE        export: the file to write (default: stdout)`;

/** One shard's line of `status`. */
export interface ShardStatus {
  binding: string;
  schools: number;
  courses: number;
  bytes: number;
  /** bytes / 10 GB. */
  share: number;
}

/** One school's line of `status`. */
export interface SchoolStatus {
  id: string;
  name: string;
  shard: string;
  state: "active" | "moving";
}

/** A school that holds more than `SCHOOL_SHARE_WARNING` of its shard's 10 GB (estimated). */
export interface ShareWarning {
  schoolId: string;
  shard: string;
  /** Estimated bytes (`estimateSchoolBytes`): at least this much. */
  bytes: number;
  /** bytes / 10 GB. */
  share: number;
}

/** The directory and the shards of `where`, and how to let them go. */
interface Opened {
  dbs: MoveDatabases;
  dispose(): Promise<void> | void;
}

/**
 * Opens the directory and every shard of wrangler.toml: locally on the files of `wrangler
 * dev` (scripts/lib/d1-local.ts), read-only on the files themselves when `readOnly`, else
 * through Miniflare; remotely over the D1 HTTP API
 * (scripts/lib/d1-http.ts). @returns them, or why `--remote` cannot run (a missing variable).
 */
async function open(where: D1Target, readOnly = false): Promise<Opened | string> {
  let opened: { databases: Record<string, D1Database>; dispose(): Promise<void> | void };
  if (where.target === "remote") {
    const api = d1ApiOfEnv();
    if (typeof api === "string") return api;
    opened = await openRemoteD1(api);
  } else {
    // A read needs no workerd: the files themselves, in milliseconds (Miniflare starts in seconds).
    opened = readOnly ? await readLocalD1(where.persistTo) : await openLocalD1(where.persistTo);
  }
  return { dbs: directoryAndShards(opened.databases), dispose: opened.dispose };
}

/**
 * Reads every shard's size and every school's place: one statement per database. A shard's
 * bytes are D1's own figure (`meta.size_after`), or estimated from its row counts where the
 * runtime reports none.
 */
export async function readStatus(dbs: MoveDatabases): Promise<{ shards: ShardStatus[]; schools: SchoolStatus[]; warnings: ShareWarning[] }> {
  const [sizeSql] = renderLiteral([shardSize], Number.POSITIVE_INFINITY);
  const shards: ShardStatus[] = [];
  const warnings: ShareWarning[] = [];
  const warnAt = SCHOOL_SHARE_WARNING * DATABASE_MAX_BYTES;
  for (const [binding, d1] of Object.entries(dbs.shards)) {
    const r = await d1.prepare(sizeSql!).all<ShardSize>();
    const size = r.results[0]!;
    const reported = Number((r.meta as { size_after?: number }).size_after);
    const bytes = reported > 0 ? reported : estimateBytes(size);
    shards.push({ binding, schools: size.schools, courses: size.courses, bytes, share: bytes / DATABASE_MAX_BYTES });
    // Each school's rows, counted up to what passes the warning's share: bounded per school.
    const held = await d1.prepare("SELECT school_id FROM held_schools WHERE state IN ('active', 'fenced') ORDER BY school_id").all<{ school_id: string }>();
    for (const { school_id } of held.results) {
      const [sql] = renderLiteral([schoolSize(school_id, warnAt + 1)], Number.POSITIVE_INFINITY);
      const school = (await d1.prepare(sql!).all<SchoolSize>()).results[0]!;
      const estimated = estimateSchoolBytes(school);
      if (estimated > warnAt) warnings.push({ schoolId: school_id, shard: binding, bytes: estimated, share: estimated / DATABASE_MAX_BYTES });
    }
  }
  const { results: schools } = await dbs.directory.prepare("SELECT id, name, shard, state FROM schools ORDER BY shard, id").all<SchoolStatus>();
  return { shards, schools, warnings };
}

async function status(json: boolean, where: D1Target): Promise<number> {
  const opened = await open(where, true);
  if (typeof opened === "string") return refuse(opened);
  let s: Awaited<ReturnType<typeof readStatus>>;
  try {
    s = await readStatus(opened.dbs);
  } catch (err) {
    console.error(`${(err as Error).message}${migrationHint((err as Error).message, where.target, where.persistTo)}`);
    return 1;
  } finally {
    await opened.dispose();
  }
  if (json) {
    console.log(printableJson(s));
    return 0;
  }
  console.log(
    table(
      ["shard", "schools", "courses", "bytes", "share of 10 GB"],
      s.shards.map((r) => [r.binding, formatInt(r.schools), formatInt(r.courses), formatInt(r.bytes), `${(r.share * 100).toFixed(4)} %`]),
    ),
  );
  console.log("");
  console.log(
    table(
      ["school", "name", "shard", "state"],
      // Names come from imported files: escaped, never interpreted by the terminal.
      s.schools.map((r) => [r.id, printable(r.name), r.shard, r.state]),
    ),
  );
  for (const w of s.warnings) {
    console.log(
      `\nwarning: school ${w.schoolId} holds ${(w.share * 100).toFixed(0)} % or more of ${w.shard}'s 10 GB (about ${formatInt(w.bytes)} bytes; ` +
        `more than ${SCHOOL_SHARE_WARNING * 100} %): move it to an emptier shard (npm run shards -- move ${w.schoolId} --to SHARD_k)`,
    );
  }
  return 0;
}

/** `move`: runs or resumes (or with `abort` undoes) a school's move. @returns the exit status. */
async function move(schoolId: string, to: string | undefined, abort: boolean, where: D1Target): Promise<number> {
  if (where.target === "local") {
    console.error(`moving locally: this opens the local D1 files (${where.persistTo ?? ".wrangler/state"}) directly; stop npm start / wrangler dev first`);
  }
  // Loaded here only: drizzle's schema takes seconds to load, which `status` does without.
  const { abortMove, MoveRefused, moveSchool } = await import("../src/db/move");
  const opened = await open(where);
  if (typeof opened === "string") return refuse(opened);
  const { dbs } = opened;
  try {
    if (abort) {
      const r = await abortMove(dbs, schoolId);
      console.log(
        r === "none"
          ? `no move of ${schoolId} under way: nothing to undo`
          : r === "undone"
            ? `move of ${schoolId} undone: it is on its old shard again`
            : `the move of ${schoolId} had switched: finished instead`,
      );
      return 0;
    }
    const r = await moveSchool(dbs, schoolId, to!, { onStep: (step) => console.log(`  ${step}`) });
    if (r.result === "noop") console.log(`${schoolId} is on ${to} already: nothing to do`);
    else
      console.log(
        `${schoolId} moved from ${r.from} to ${r.to}${Object.keys(r.rows).length > 0 ? ` (${formatInt(Object.values(r.rows).reduce((a, b) => a + b, 0))} rows copied)` : ""}`,
      );
    return 0;
  } catch (err) {
    if (err instanceof MoveRefused) {
      console.error(err.message);
      return 2;
    }
    console.error(`${(err as Error).message}\nthe move stopped there; run the same command again to finish it (or with --abort to undo it)`);
    return 1;
  } finally {
    await opened.dispose();
  }
}

/** Writes `text` to `out`, waiting while its buffer is full. */
async function put(out: Writable, text: string): Promise<void> {
  if (!out.write(text)) await once(out, "drain");
}

/**
 * `export`: the school's import file (docs/operations.md § "Taking one school's data out") into
 * `file` (written whole or removed) or stdout; the summary on stderr. @returns the exit status.
 */
async function exportCommand(schoolId: string, file: string | undefined, where: D1Target): Promise<number> {
  const opened = await open(where);
  if (typeof opened === "string") return refuse(opened);
  const started = performance.now();
  const counts: ExportCounts = { courses: 0, keys: 0, statements: 0 };
  const out = file === undefined ? process.stdout : createWriteStream(file);
  try {
    for await (const piece of exportSchool(opened.dbs, schoolId, counts)) await put(out, piece);
    if (out !== process.stdout) {
      out.end();
      await once(out, "finish");
    }
  } catch (err) {
    if (out !== process.stdout) {
      out.destroy();
      await rm(file!, { force: true });
    }
    if (err instanceof ExportRefused) return refuse(err.message);
    console.error(`${(err as Error).message}${migrationHint((err as Error).message, where.target, where.persistTo)}
nothing was written; run the export again`);
    return 1;
  } finally {
    await opened.dispose();
  }
  const seconds = (performance.now() - started) / 1000;
  console.error(
    `exported ${schoolId}: ${formatInt(counts.courses)} courses, ${formatInt(counts.keys)} API key hashes, ${formatInt(counts.statements)} D1 statements, in ${seconds.toFixed(1)} s${file === undefined ? "" : ` to ${file}`}`,
  );
  return 0;
}

/** Prints why a command cannot run (nothing was changed). @returns 2. */
function refuse(problem: string): number {
  console.error(problem);
  return 2;
}

const usage = (problem: string) => usageError(problem, USAGE);

/** CLI entry point. Returns the exit status. */
export async function main(argv: string[]): Promise<number> {
  const args = parseD1Cli(
    argv,
    { to: { type: "string" }, abort: { type: "boolean" }, json: { type: "boolean" }, school: { type: "string" }, out: { type: "string" } },
    USAGE,
    userPath,
  );
  if (typeof args === "number") return args;
  const { values: v, positionals, where } = args;
  const [command, ...rest] = positionals;
  if (command === "move") {
    if (rest.length !== 1 || !ID_RE.test(rest[0]!)) return usage("move needs one SCHOOL_ID");
    if ((v.to === undefined) === (v.abort !== true)) return usage("move needs --to SHARD_k, or --abort");
    return move(rest[0]!, v.to, v.abort === true, where);
  }
  if (command === "export") {
    if (rest.length > 0 || v.school === undefined || !ID_RE.test(v.school)) return usage("export needs --school ID (and no other argument)");
    return exportCommand(v.school, v.out === undefined ? undefined : userPath(v.out), where);
  }
  if (rest.length > 0) return usage(`${command} takes no argument besides its options (got ${rest.join(" ")})`);
  if (command === "migrate") {
    const { bindings } = await applyMigrations(where.target, where.persistTo);
    console.log(`migrated: ${bindings.join(", ")}`);
    return 0;
  }
  if (command === "status") return status(v.json === true, where);
  return usage(command === undefined ? "a command is needed" : `unknown command "${command}"`);
}

await runIfMain(import.meta.url, main);
