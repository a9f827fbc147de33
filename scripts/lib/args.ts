/**
 * Command-line arguments of the operator scripts.
 */
import { type ParseArgsConfig, parseArgs } from "node:util";

/**
 * Parses a CLI's arguments with `node:util`'s `parseArgs`. A usage error (an unknown option,
 * a missing value) is printed on stderr with the CLI's usage; `--help` (an option the config
 * declares) prints the usage on stdout.
 *
 * @returns the parsed arguments, or the exit status to end with: 2 after a usage error, 0
 *   after `--help`.
 */
export function parseCli<T extends ParseArgsConfig>(config: T, usage: string): ReturnType<typeof parseArgs<T>> | number {
  let parsed: ReturnType<typeof parseArgs<T>>;
  try {
    parsed = parseArgs(config);
  } catch (err) {
    console.error(`${(err as Error).message}\n${usage}`);
    return 2;
  }
  if ((parsed.values as { help?: boolean }).help) {
    console.log(usage);
    return 0;
  }
  return parsed;
}
