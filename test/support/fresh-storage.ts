/**
 * A test file's empty storage in a runtime that the files of a vitest worker share
 * (vitest.config.ts: `isolate: false`): test/support/setup.ts runs it before each file.
 */
import { applyD1Migrations, env, reset } from "cloudflare:test";
import { shardBindings } from "../../src/db/shard-names";
import { guardRows, runtimeD1 } from "./d1-limits";
import { checkStatement } from "./production-limits";

/** The directory, then every shard: the D1 bindings the Worker and the tests use. */
export const d1Bindings = (): string[] => ["DIRECTORY", ...shardBindings(env)];

/**
 * Deletes every D1 database (the directory, the shards, the simulated replica), Durable Object
 * and alarm of the runtime and aborts every object (`reset()`), then migrates the directory
 * and every shard from their own folders (migrations/directory, migrations/shard), each
 * statement first checked against production's limits (throws the error production gives),
 * and installs the triggers that refuse a stored row over 2,000,000 bytes (`guardRows`).
 */
export async function freshStorage(): Promise<void> {
  await reset();
  const testEnv = env as unknown as Record<string, D1Database>;
  for (const b of d1Bindings()) {
    const migrations = b === "DIRECTORY" ? env.TEST_DIRECTORY_MIGRATIONS : env.TEST_SHARD_MIGRATIONS;
    for (const m of migrations) for (const q of m.queries) checkStatement("d1", q, []);
    // applyD1Migrations takes only the runtime's own binding, not the limited one.
    const db = runtimeD1(testEnv[b]!);
    await applyD1Migrations(db, migrations);
    await guardRows(db);
  }
}
