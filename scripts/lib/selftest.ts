/**
 * What the CLI self-tests share (`npm run test:import`, `npm run test:keys`, …): TAP-like
 * `ok` / `not ok` lines, the run of an operator script as a child process (or in this
 * process, counting the processes it starts), the summary with the exit status, and a
 * migrated local state copied from one template.
 */
import childProcess, { type ChildProcess, spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { cp, mkdtemp, readFile, rename, rm, writeFile } from "node:fs/promises";
import { createRequire, syncBuiltinESMExports } from "node:module";
import os from "node:os";
import path from "node:path";
import { alive } from "./local-api";
import { completion, d1DatabaseIdsOfConfig, d1MigrationsOfConfig, ROOT, runWrangler, targetArgs, type WranglerResult } from "./wrangler";

let failures = 0;

/** Prints `ok - name`, or `not ok - name` with `detail` indented below, and counts failures. */
export function check(ok: boolean, name: string, detail = ""): void {
  if (!ok) failures++;
  console.log(`${ok ? "ok" : "not ok"} - ${name}${!ok && detail ? `\n  ${detail.replace(/\n/g, "\n  ")}` : ""}`);
}

/**
 * Runs `tsx scripts/<script> <args>` from the repository root (relative paths resolve there),
 * with `env` over this process's environment; resolves with its exit code and output.
 */
export function runScript(script: string, args: string[], env: Record<string, string> = {}): Promise<WranglerResult> {
  return startScript(script, args, env).result;
}

/** `runScript`, with the child process too (to signal it while it runs). */
export function startScript(script: string, args: string[], env: Record<string, string> = {}): { child: ChildProcess; result: Promise<WranglerResult> } {
  const tsx = createRequire(path.join(ROOT, "package.json")).resolve("tsx/cli");
  const child = spawn(process.execPath, [tsx, path.join(ROOT, "scripts", script), ...args], {
    cwd: ROOT,
    stdio: ["ignore", "pipe", "pipe"],
    env: { ...process.env, ...env, INIT_CWD: ROOT },
  });
  return { child, result: completion(child) };
}

/**
 * Runs a self-test's `main` (an unexpected error is one more failure), prints the summary
 * line (`# <name> self-test passed`) and sets the exit status: 1 when a check failed.
 */
export async function runSelfTest(name: string, main: () => Promise<void>): Promise<void> {
  try {
    await main();
  } catch (err) {
    failures++;
    console.log(`not ok - unexpected error: ${(err as Error).stack ?? String(err)}`);
  }
  console.log(failures === 0 ? `# ${name} self-test passed` : `# ${name} self-test: ${failures} failure(s)`);
  process.exitCode = failures === 0 ? 0 : 1;
}

/**
 * Runs a CLI's `main(argv)` in this process, collecting what it prints with `console.log`
 * (`stdout`) and `console.error` (`stderr`) and counting the child processes it starts
 * through node:child_process `spawn` (how wrangler and Miniflare's workerd are started): a
 * local read that starts none answers without their seconds of start-up, and a usage error
 * is checked without a process of its own (tsx's start-up, 1–2 s of CPU).
 */
export async function runCounted(
  main: (argv: string[]) => Promise<number>,
  argv: string[],
): Promise<{ code: number; stdout: string; stderr: string; spawned: number }> {
  const original = childProcess.spawn;
  const { log, error } = console;
  let spawned = 0;
  let stdout = "";
  let stderr = "";
  childProcess.spawn = ((...args: Parameters<typeof original>) => {
    spawned++;
    return original(...args);
  }) as typeof original;
  syncBuiltinESMExports(); // the `import { spawn }` of every module sees the counter too
  console.log = (...args: unknown[]) => {
    stdout += `${args.join(" ")}\n`;
  };
  console.error = (...args: unknown[]) => {
    stderr += `${args.join(" ")}\n`;
  };
  try {
    return { code: await main(argv), stdout, stderr, spawned };
  } finally {
    childProcess.spawn = original;
    syncBuiltinESMExports();
    console.log = log;
    console.error = error;
  }
}

/**
 * What a migrated local state depends on, as a hex SHA-256: every binding's local id, its
 * migrations table and the names and contents of its migration files, and wrangler's version
 * (which writes the files).
 */
async function templateKey(): Promise<string> {
  const hash = createHash("sha256");
  const ids = await d1DatabaseIdsOfConfig("local");
  for (const [binding, { dir, table }] of Object.entries(await d1MigrationsOfConfig())) {
    hash.update(`${binding}\0${ids[binding]}\0${table}\0`);
    const files = readdirSync(dir)
      .filter((f) => f.endsWith(".sql"))
      .sort();
    for (const f of files)
      hash
        .update(`${f}\0`)
        .update(readFileSync(path.join(dir, f)))
        .update("\0");
  }
  const wrangler = createRequire(path.join(ROOT, "package.json")).resolve("wrangler/package.json");
  hash.update((JSON.parse(readFileSync(wrangler, "utf8")) as { version: string }).version);
  return hash.digest("hex");
}

/**
 * The path of a local state whose D1 databases have every migration applied: a template that
 * `wrangler d1 migrations apply` migrated once (a wrangler run per database, one after another:
 * about 35 s) and that the self-tests share, under the system's temporary directory, named by
 * {@link templateKey}. The first caller builds it, holding a lock file (its pid) that the
 * others wait on (docs/development.md § "Suite time"); a lock whose process is gone is taken
 * over. `npm test` builds it beside the static checks (`npm run test:state`).
 *
 * @throws Error when wrangler fails to migrate the template (with its output).
 */
export async function migratedTemplate(): Promise<string> {
  const template = path.join(os.tmpdir(), `school-edge-selftest-state-${(await templateKey()).slice(0, 16)}`);
  const lock = `${template}.lock`;
  while (!existsSync(template)) {
    const held = await writeFile(lock, String(process.pid), { flag: "wx" }).then(
      () => true,
      (err: NodeJS.ErrnoException) => {
        if (err.code === "EEXIST") return false;
        throw err;
      },
    );
    if (!held) {
      const holder = Number(await readFile(lock, "utf8").catch(() => ""));
      // A lock just made may not hold its pid yet (0): its maker is alive.
      if (holder > 0 && !alive(holder)) await rm(lock, { force: true });
      else await new Promise((resolve) => setTimeout(resolve, 250));
      continue;
    }
    try {
      if (existsSync(template)) break;
      const building = await mkdtemp(`${template}-building-`);
      try {
        // One wrangler per database, one after another: side by side, their workerd processes
        // met on the local state's shared SQLite files (SQLITE_BUSY: database is locked).
        for (const binding of Object.keys(await d1MigrationsOfConfig())) {
          const r = await runWrangler(["d1", "migrations", "apply", binding, ...targetArgs("local", building)]);
          if (r.code !== 0) throw new Error(`wrangler d1 migrations apply ${binding} failed (exit ${r.code}):\n${r.stdout}${r.stderr}`);
        }
        await rename(building, template);
      } finally {
        await rm(building, { recursive: true, force: true });
      }
    } finally {
      await rm(lock, { force: true });
    }
  }
  return template;
}

/**
 * Fills `persistTo` (which must not exist yet) with a copy of the migrated template
 * ({@link migratedTemplate}).
 *
 * @throws Error when wrangler fails to migrate the template (with its output).
 */
export async function migratedState(persistTo: string): Promise<void> {
  await cp(await migratedTemplate(), persistTo, { recursive: true, errorOnExist: true, force: false });
}
