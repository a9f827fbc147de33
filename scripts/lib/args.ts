/**
 * Command-line arguments of the operator scripts.
 */
import { type ParseArgsConfig, type ParseArgsOptionsConfig, parseArgs } from "node:util";

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

/** The options every D1 CLI takes: `--local` (default) or `--remote`, and `--persist-to DIR`. */
export const TARGET_OPTIONS = {
  local: { type: "boolean" },
  remote: { type: "boolean" },
  "persist-to": { type: "string" },
} as const;

/** Where a D1 CLI's statements run. */
export interface D1Target {
  target: "local" | "remote";
  /** The local state directory (wrangler `--persist-to`), resolved against the user's directory. */
  persistTo?: string;
}

/**
 * The target of `TARGET_OPTIONS`' values, or the usage problem that makes them invalid.
 *
 * @param resolve resolves a path given on the command line (`userPath`).
 */
export function targetOf(v: { local?: boolean; remote?: boolean; "persist-to"?: string }, resolve: (p: string) => string): D1Target | string {
  if (v.local && v.remote) return "--local and --remote are exclusive";
  if (v.remote && v["persist-to"]) return "--persist-to works only with --local";
  return { target: v.remote ? "remote" : "local", persistTo: v["persist-to"] === undefined ? undefined : resolve(v["persist-to"]) };
}

/** Prints a usage problem and the CLI's usage on stderr. @returns 2, the exit status of bad usage. */
export function usageError(problem: string, usage: string): 2 {
  console.error(`${problem}\n${usage}`);
  return 2;
}

/**
 * Parses the arguments of a D1 CLI with commands (`keys`, `shards`): its `options`, plus
 * `TARGET_OPTIONS` and `--help`, positionals allowed (`parseCli`).
 *
 * @returns the parsed arguments and their target, or the exit status to end with (2 after a
 *   usage error, an invalid target included, with the usage; 0 after `--help`).
 */
export function parseD1Cli<O extends ParseArgsOptionsConfig>(argv: string[], options: O, usage: string, resolve: (p: string) => string) {
  const args = parseCli(
    { args: argv, allowPositionals: true, options: { ...options, ...TARGET_OPTIONS, help: { type: "boolean", short: "h" } } } as const,
    usage,
  );
  if (typeof args === "number") return args;
  const where = targetOf(args.values as Parameters<typeof targetOf>[0], resolve);
  return typeof where === "string" ? usageError(where, usage) : { ...args, where };
}
