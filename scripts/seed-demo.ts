/**
 * `npm run seed:demo [-- --persist-to DIR] [--out FILE.json]`
 *
 * Applies the local D1 migrations, generates the demo dataset (scripts/generate.ts defaults:
 * `sch_demo` with 3,000 courses and `sch_other` with 50) into .wrangler/demo-data.json and
 * imports it into the local D1 database. Idempotent: running it again rewrites the same rows.
 * Prints the demo API key.
 */
import path from "node:path";
import { parseArgs } from "node:util";
import { DEMO_API_KEY, generateDataset, OTHER_API_KEY } from "./dataset/build";
import { writeDataset } from "./generate";
import { type ImportSummary, ImportValidationError, importJsonFile } from "./import";
import { runIfMain } from "./lib/cli";
import { formatInt } from "./lib/progress";
import { applyMigrations, ROOT, userPath } from "./lib/wrangler";

/** Where the demo dataset is written by default (gitignored). */
export const DEMO_DATA_FILE = path.join(ROOT, ".wrangler", "demo-data.json");

/** Options of {@link seedDemo}. */
export interface SeedOptions {
  /** Local persistence directory (wrangler `--persist-to`); default .wrangler/state. */
  persistTo?: string;
  /** Where to write the dataset; default {@link DEMO_DATA_FILE}. */
  file?: string;
  /** Skip `wrangler d1 migrations apply` (the caller just ran it). */
  skipMigrations?: boolean;
  /** Draw the import progress bar (default true). */
  progress?: boolean;
}

/**
 * Generates the demo dataset and imports it into the local D1 database.
 *
 * @returns the dataset file, the import summary (its `wallSeconds`: this whole call, the
 *   migrations and the generation included) and the demo API key ({@link DEMO_API_KEY}).
 * @throws Error when the migrations or the import fail (ImportExecutionError for wrangler).
 */
export async function seedDemo(opts: SeedOptions = {}): Promise<{ file: string; summary: ImportSummary; apiKey: string }> {
  const startedAt = performance.now();
  if (!opts.skipMigrations) await applyMigrations("local", opts.persistTo);
  const file = opts.file ?? DEMO_DATA_FILE;
  await writeDataset(generateDataset(), file);
  try {
    const summary = await importJsonFile(file, { target: "local", persistTo: opts.persistTo, progress: opts.progress, startedAt });
    return { file, summary, apiKey: DEMO_API_KEY };
  } catch (err) {
    // The generator's own output is invalid: a bug, report it readably.
    if (err instanceof ImportValidationError) {
      throw new Error(`generated demo data is invalid:\n${err.problems.map((p) => `  ${p.path}: ${p.message}`).join("\n")}`);
    }
    throw err;
  }
}

async function main(argv: string[]): Promise<number> {
  const { values } = parseArgs({ args: argv, options: { "persist-to": { type: "string" }, out: { type: "string" } } });
  const persistTo = values["persist-to"] === undefined ? undefined : userPath(values["persist-to"]);
  const file = values.out === undefined ? undefined : userPath(values.out);
  const { file: written, summary: s, apiKey } = await seedDemo({ persistTo, file });
  console.log(
    `demo data (${written}) imported: ${formatInt(s.rows)} rows, ${formatInt(s.courses)} courses in ${(performance.now() / 1000).toFixed(1)} s ` +
      `since the command started (writing ${s.seconds.toFixed(1)} s, ${formatInt(s.rowsPerSecond)} rows/s)`,
  );
  console.log(`demo API key (sch_demo):   ${apiKey}`);
  console.log(`other school (sch_other):  ${OTHER_API_KEY}`);
  return 0;
}

await runIfMain(import.meta.url, main);
