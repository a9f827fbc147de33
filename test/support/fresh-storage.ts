/**
 * A test file's empty storage in a runtime that the files of a vitest worker share
 * (vitest.config.ts: `isolate: false`): test/support/setup.ts runs it before each file.
 */
import { applyD1Migrations, env, reset } from "cloudflare:test";
import { expect } from "vitest";
import { forgetHealthProbe } from "../../src/db/health";
import { shardBindings } from "../../src/db/shard-names";
import { usePlatform } from "../../src/webhooks/platform/platform";
import { guardRows, runtimeD1 } from "./d1-limits";
import { checkStatement } from "./production-limits";

/** The names of the D1 bindings the Worker and the tests use: `DIRECTORY`, then every `SHARD_<n>`. */
export const d1Bindings = (): string[] => ["DIRECTORY", ...shardBindings(env)];

/** The test file `freshStorage` last ran for (vitest's `testPath`), or null before it ran. */
let lastFile: string | null = null;

/** The test file `freshStorage` last ran for: setup.ts runs it before each file. */
export const freshStorageRanFor = (): string | null => lastFile;

/**
 * Deletes every D1 database (the directory, the shards, and the simulated replica, which
 * read-replica.test.ts migrates itself), Durable Object and alarm of the runtime and aborts
 * every object (`reset()`); forgets what the Worker's modules hold for the objects and probes
 * of a file (a simulated platform left installed, the health probe); then migrates the
 * directory and every shard from their own folders (migrations/directory, migrations/shard),
 * each statement first checked against production's limits (throws the error production
 * gives), and installs the triggers that refuse a stored row over 2,000,000 bytes.
 */
export async function freshStorage(): Promise<void> {
  await reset();
  usePlatform(null);
  forgetHealthProbe();
  const testEnv = env as unknown as Record<string, D1Database>;
  for (const b of d1Bindings()) {
    const migrations = b === "DIRECTORY" ? env.TEST_DIRECTORY_MIGRATIONS : env.TEST_SHARD_MIGRATIONS;
    for (const m of migrations) for (const q of m.queries) checkStatement("d1", q, []);
    // applyD1Migrations takes only the runtime's own binding, not the limited one.
    const db = runtimeD1(testEnv[b]!);
    await applyD1Migrations(db, migrations);
    await guardRows(db);
  }
  lastFile = expect.getState().testPath ?? null;
}
