/**
 * Runs a script's `main(argv) → exit code` when the module is the process's entry point (not
 * when another script imports it). A thrown error prints its message (and a failed wrangler
 * call's output) on stderr and sets exit code 1.
 */
import path from "node:path";
import { pathToFileURL } from "node:url";
import { ImportExecutionError } from "../import";

export async function runIfMain(moduleUrl: string, main: (argv: string[]) => Promise<number>): Promise<void> {
  if (!process.argv[1] || moduleUrl !== pathToFileURL(path.resolve(process.argv[1])).href) return;
  try {
    process.exitCode = await main(process.argv.slice(2));
  } catch (err) {
    const output = err instanceof ImportExecutionError ? `${err.output}\n\n` : "";
    console.error(`${output}${(err as Error).message}`);
    process.exitCode = 1;
  }
}
