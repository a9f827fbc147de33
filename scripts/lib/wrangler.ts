/**
 * Running the project's own wrangler (node_modules/wrangler) from the operator scripts.
 *
 * Wrangler is started as `node <wrangler.js> …` rather than through `npx`, which saves the
 * npx start-up on every call; the arguments are the same as `npx wrangler …`.
 */
import { type ChildProcess, type StdioOptions, spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { shardBindings } from "../../src/db/shard-names";

/** The repository root (where wrangler.toml lives); wrangler always runs there. */
export const ROOT = path.resolve(import.meta.dirname, "..", "..");

/** The benchmark entry: the Worker plus its `/__bench/*` routes (see src/bench/entry.ts). */
export const BENCH_ENTRY = "src/bench/entry.ts";

/** The directory's D1 binding (schools and their shards, API keys, portal sessions). */
export const DIRECTORY_BINDING = "DIRECTORY";

/**
 * The shard bindings wrangler.toml declares (`[[d1_databases]]` whose `binding` is
 * `SHARD_<n>`), in their numbers' order: what `npm run shards` and the import act on.
 */
export function shardBindingsOfConfig(): string[] {
  const toml = readFileSync(path.join(ROOT, "wrangler.toml"), "utf8");
  const names = [...toml.matchAll(/^\s*binding\s*=\s*"([^"]+)"/gm)].map((m) => m[1]!);
  return shardBindings(Object.fromEntries(names.map((n) => [n, true])));
}

/**
 * The directory and the shards among opened D1 databases (binding → database), shards in
 * their numbers' order: the shape `src/db/move.ts` takes.
 *
 * @throws Error when there is no `DIRECTORY` among them.
 */
export function directoryAndShards<T>(databases: Record<string, T>): { directory: T; shards: Record<string, T> } {
  const directory = databases[DIRECTORY_BINDING];
  if (directory === undefined) throw new Error(`wrangler.toml declares no ${DIRECTORY_BINDING} D1 binding`);
  return { directory, shards: Object.fromEntries(shardBindings(databases).map((b) => [b, databases[b]!])) };
}

/** One top-level `[[d1_databases]]` table of wrangler.toml: its string keys (`binding`, `database_id`, …). */
type D1DatabaseConfig = Partial<Record<"binding" | "database_id" | "preview_database_id" | "migrations_dir" | "migrations_table", string>>;

/**
 * wrangler.toml's top-level `[[d1_databases]]` tables (not an `[env.*]` one), each as its
 * `key = "string"` lines (the form this file uses; an inline `d1_databases = [...]` is refused). Read with a few lines rather than wrangler's config reader, whose
 * import alone takes 2–13 s (docs/development.md § "Operator CLIs": a local listing answers
 * in well under 3 s); the keys read are plain strings in this file.
 *
 * @throws Error when a table has no `binding`.
 */
function d1DatabasesOfToml(toml = readFileSync(path.join(ROOT, "wrangler.toml"), "utf8")): D1DatabaseConfig[] {
  const tables: D1DatabaseConfig[] = [];
  let current: D1DatabaseConfig | undefined;
  for (const line of toml.split("\n")) {
    const header = /^\s*\[/.test(line);
    if (header) current = /^\s*\[\[\s*d1_databases\s*\]\]\s*(#.*)?$/.test(line) ? {} : undefined;
    if (current && header) tables.push(current);
    const kv = current && /^\s*([A-Za-z_]+)\s*=\s*(?:"([^"\\]*)"|'([^']*)')\s*(#.*)?$/.exec(line);
    if (kv) current![kv[1] as keyof D1DatabaseConfig] = kv[2] ?? kv[3]!;
  }
  if (/^\s*d1_databases\s*=/m.test(toml)) throw new Error("wrangler.toml: write d1_databases as [[d1_databases]] tables (the scripts read that form)");
  for (const t of tables) if (t.binding === undefined) throw new Error("wrangler.toml: a [[d1_databases]] table has no binding");
  return tables;
}

/**
 * wrangler.toml's D1 databases: binding → id. `remote`: its `database_id` (the database's
 * UUID on Cloudflare); `local`: the id `wrangler dev` keys its local file by
 * (`preview_database_id`, else `database_id`, else the binding).
 */
export async function d1DatabaseIdsOfConfig(target: "local" | "remote"): Promise<Record<string, string>> {
  return Object.fromEntries(
    d1DatabasesOfToml().map((d) => [d.binding!, (target === "local" ? (d.preview_database_id ?? d.database_id) : d.database_id) ?? d.binding!]),
  );
}

/** Where wrangler keeps a D1 binding's migrations: its folder and the table of applied ones. */
export interface MigrationsOfBinding {
  /** Absolute path of the binding's `migrations_dir` (wrangler's default `migrations`). */
  dir: string;
  /** The binding's `migrations_table` (wrangler's default `d1_migrations`). */
  table: string;
}

/** wrangler.toml's D1 bindings: binding → where its migrations live (wrangler's defaults filled in). */
export async function d1MigrationsOfConfig(): Promise<Record<string, MigrationsOfBinding>> {
  return Object.fromEntries(
    d1DatabasesOfToml().map((d) => [d.binding!, { dir: path.resolve(ROOT, d.migrations_dir ?? "migrations"), table: d.migrations_table ?? "d1_migrations" }]),
  );
}

/**
 * The directory the user ran the command from. `npm run` changes the working directory to
 * the package root but keeps the original in INIT_CWD, so relative file arguments of
 * `npm run import -- data.json` are resolved against it.
 */
const USER_CWD = process.env.INIT_CWD ?? process.cwd();

/** Resolves a path given on the command line against {@link USER_CWD}. */
export function userPath(p: string): string {
  return path.resolve(USER_CWD, p);
}

/**
 * Absolute path of the CLI script `name` of package `pkg` (its package.json `bin`), as
 * installed for the package at `from` (default the repository root). Found from package.json
 * because packages' `exports` seldom expose their bin scripts.
 *
 * @throws Error when the package is not installed or has no such bin.
 */
export function packageBin(pkg: string, name = pkg, from = ROOT): string {
  const pkgJson = createRequire(path.join(from, "package.json")).resolve(`${pkg}/package.json`);
  const { bin } = JSON.parse(readFileSync(pkgJson, "utf8")) as { bin?: Record<string, string> };
  const script = bin?.[name];
  if (script === undefined) throw new Error(`${pkg} has no bin script ${name}`);
  return path.resolve(path.dirname(pkgJson), script);
}

let bin: string | undefined;

/**
 * Absolute path of wrangler's CLI script (`bin/wrangler.js`).
 *
 * @throws Error when wrangler is not installed.
 */
export function wranglerBin(): string {
  bin ??= packageBin("wrangler");
  return bin;
}

/**
 * The environment of wrangler child processes: the caller's, with these defaults unless the
 * user set them, so that local runs need no network: the banner and its npm update check
 * hidden (WRANGLER_HIDE_BANNER), usage metrics off (WRANGLER_SEND_METRICS), and no download
 * of the `Request.cf` placeholder from workers.cloudflare.com (CLOUDFLARE_CF_FETCH_ENABLED;
 * the API does not read `request.cf`).
 */
export function wranglerEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  return {
    ...process.env,
    WRANGLER_HIDE_BANNER: process.env.WRANGLER_HIDE_BANNER ?? "true",
    WRANGLER_SEND_METRICS: process.env.WRANGLER_SEND_METRICS ?? "false",
    CLOUDFLARE_CF_FETCH_ENABLED: process.env.CLOUDFLARE_CF_FETCH_ENABLED ?? "false",
    ...extra,
  };
}

/** Starts `wrangler <args>` in {@link ROOT}. stdin is closed, so wrangler never prompts. */
export function spawnWrangler(args: string[], stdio: StdioOptions = ["ignore", "pipe", "pipe"], env = wranglerEnv()): ChildProcess {
  return spawn(process.execPath, [wranglerBin(), ...args], { cwd: ROOT, stdio, env });
}

/** Result of {@link runWrangler} and {@link completion}: exit code (1 when killed by a signal) and captured output. */
export interface WranglerResult {
  code: number;
  stdout: string;
  stderr: string;
}

/**
 * Runs `wrangler <args>` to completion, capturing stdout and stderr (or streaming them to
 * ours with `inherit: true`). Never rejects for a non-zero exit: check `code`.
 *
 * @throws Error only when the process cannot be started.
 */
export function runWrangler(args: string[], opts: { inherit?: boolean } = {}): Promise<WranglerResult> {
  return completion(spawnWrangler(args, opts.inherit ? ["ignore", "inherit", "inherit"] : ["ignore", "pipe", "pipe"]));
}

/**
 * Waits for a child process to end, collecting what it writes to piped stdout and stderr
 * (UTF-8). Never rejects for a non-zero exit: check `code` (1 when killed by a signal).
 *
 * @throws Error only when the process cannot be started.
 */
export function completion(child: ChildProcess): Promise<WranglerResult> {
  return new Promise((resolve, reject) => {
    let stdout = "";
    let stderr = "";
    child.stdout?.setEncoding("utf8").on("data", (d: string) => {
      stdout += d;
    });
    child.stderr?.setEncoding("utf8").on("data", (d: string) => {
      stderr += d;
    });
    child.on("error", reject);
    child.on("close", (code) => resolve({ code: code ?? 1, stdout, stderr }));
  });
}

/** `--local` (with `--persist-to DIR` when given) or `--remote`. */
export function targetArgs(target: "local" | "remote", persistTo?: string): string[] {
  if (target === "remote") return ["--remote"];
  return persistTo ? ["--local", "--persist-to", persistTo] : ["--local"];
}

/**
 * What to do when wrangler's `output` says the database lacks a table or column (its
 * migrations are not applied): a line that starts with a newline, or `""`.
 */
export function migrationHint(output: string, target: "local" | "remote", persistTo?: string): string {
  return /no such (table|column)/i.test(output)
    ? `\nhint: apply the migrations first: npm run shards -- migrate ${targetArgs(target, persistTo).join(" ")}`
    : "";
}

/**
 * Runs one SQL query with `wrangler d1 execute BINDING --command … --json` (the directory
 * by default) and returns the rows of its (last) statement.
 *
 * @throws Error with wrangler's output (and `migrationHint`) when wrangler fails or prints no JSON.
 */
export async function d1Query<T = Record<string, unknown>>(
  sql: string,
  target: "local" | "remote" = "local",
  persistTo?: string,
  binding = DIRECTORY_BINDING,
): Promise<T[]> {
  return (await d1Statements<T>(sql, target, persistTo, binding)).at(-1) ?? [];
}

/** A local database file another process holds locked (`wrangler dev`, a wrangler still closing it). */
const LOCKED_RE = /SQLITE_BUSY|database is locked/;

/** The waits before each new attempt of a batch refused as locked, in ms. */
const LOCKED_RETRY_MS = [250, 500, 1000, 2000];

/**
 * Runs `sql`, one or more statements separated by `;`, with one `wrangler d1 execute BINDING
 * --command … --json` (the directory by default; D1 runs them as one batch: all commit or
 * none) and returns the rows of each statement, in order. A batch refused because the local
 * file is locked committed nothing: it is sent again after each wait of `LOCKED_RETRY_MS`.
 *
 * @throws Error as `d1Query`.
 */
export async function d1Statements<T = Record<string, unknown>>(
  sql: string,
  target: "local" | "remote" = "local",
  persistTo?: string,
  binding = DIRECTORY_BINDING,
): Promise<T[][]> {
  const args = ["d1", "execute", binding, ...targetArgs(target, persistTo), "--command", sql, "--json", "--yes"];
  let r = await runWrangler(args);
  for (const wait of LOCKED_RETRY_MS) {
    if (r.code === 0 || !LOCKED_RE.test(`${r.stdout}${r.stderr}`)) break;
    await new Promise((done) => setTimeout(done, wait));
    r = await runWrangler(args);
  }
  if (r.code !== 0)
    throw new Error(`wrangler d1 execute failed (exit ${r.code}):\n${r.stdout}${r.stderr}${migrationHint(`${r.stdout}${r.stderr}`, target, persistTo)}`);
  const start = r.stdout.indexOf("[");
  let parsed: { results: T[] }[];
  try {
    parsed = JSON.parse(r.stdout.slice(start));
  } catch {
    throw new Error(`wrangler d1 execute printed no JSON:\n${r.stdout}${r.stderr}`);
  }
  return parsed.map((p) => p.results ?? []);
}

/**
 * Applies the pending D1 migrations to the directory and every shard of wrangler.toml
 * (`wrangler d1 migrations apply BINDING` each, from its own `migrations_dir`),
 * non-interactively (stdin closed: wrangler skips its confirmation), streaming wrangler's
 * output unless `quiet`.
 *
 * @returns the bindings migrated, in order, the file names of the migrations applied (read
 *   from wrangler's closing tables, so `[]` when not quiet) and wrangler's captured output
 *   (empty when not quiet).
 * @throws Error when wrangler exits non-zero (with its output when quiet); the bindings
 *   before it are migrated.
 */
export async function applyMigrations(
  target: "local" | "remote" = "local",
  persistTo?: string,
  opts: { quiet?: boolean } = {},
): Promise<{ bindings: string[]; applied: string[]; output: string }> {
  const bindings = [DIRECTORY_BINDING, ...shardBindingsOfConfig()];
  const applied: string[] = [];
  let output = "";
  for (const b of bindings) {
    const r = await runWrangler(["d1", "migrations", "apply", b, ...targetArgs(target, persistTo)], { inherit: !opts.quiet });
    if (r.code !== 0) throw new Error(`wrangler d1 migrations apply ${b} failed (exit ${r.code})${opts.quiet ? `:\n${r.stdout}${r.stderr}` : ""}`);
    // Wrangler redraws its table after each migration: a name is applied once it shows ✅.
    applied.push(...new Set([...r.stdout.matchAll(/│ (\S+\.sql)\s+│ ✅/g)].map((m) => `${b}/${m[1]!}`)));
    output += `${r.stdout}${r.stderr}`;
  }
  return { bindings, applied, output };
}
