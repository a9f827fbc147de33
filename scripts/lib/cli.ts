/**
 * Runs a script's `main(argv) → exit code` when the module is the process's entry point (not
 * when another script imports it). A thrown error prints its message (and a failed wrangler
 * call's output) on stderr and sets exit code 1.
 */
import path from "node:path";
import { pathToFileURL } from "node:url";

export async function runIfMain(moduleUrl: string, main: (argv: string[]) => Promise<number>): Promise<void> {
  if (!process.argv[1] || moduleUrl !== pathToFileURL(path.resolve(process.argv[1])).href) return;
  try {
    process.exitCode = await main(process.argv.slice(2));
  } catch (err) {
    // A failed wrangler call (scripts/import.ts's ImportExecutionError) carries its output;
    // checked by shape, so that every CLI does not load the import to start.
    const output = typeof (err as { output?: unknown }).output === "string" ? `${(err as { output: string }).output}\n\n` : "";
    console.error(`${output}${(err as Error).message}`);
    process.exitCode = 1;
  }
}
