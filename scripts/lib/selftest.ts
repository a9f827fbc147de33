/**
 * What the CLI self-tests share (`npm run test:import`, `npm run test:keys`): TAP-like
 * `ok` / `not ok` lines, the run of an operator script as a child process (or in this
 * process, counting the processes it starts), and the summary with the exit status.
 */
import childProcess, { type ChildProcess, spawn } from "node:child_process";
import { createRequire, syncBuiltinESMExports } from "node:module";
import path from "node:path";
import { completion, ROOT, type WranglerResult } from "./wrangler";

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
 * and counting the child processes it starts through node:child_process `spawn` (how
 * wrangler and Miniflare's workerd are started): a local read that starts none answers
 * without their seconds of start-up.
 */
export async function runCounted(main: (argv: string[]) => Promise<number>, argv: string[]): Promise<{ code: number; stdout: string; spawned: number }> {
  const original = childProcess.spawn;
  const log = console.log;
  let spawned = 0;
  let stdout = "";
  childProcess.spawn = ((...args: Parameters<typeof original>) => {
    spawned++;
    return original(...args);
  }) as typeof original;
  syncBuiltinESMExports(); // the `import { spawn }` of every module sees the counter too
  console.log = (...args: unknown[]) => {
    stdout += `${args.join(" ")}\n`;
  };
  try {
    return { code: await main(argv), stdout, spawned };
  } finally {
    childProcess.spawn = original;
    syncBuiltinESMExports();
    console.log = log;
  }
}
