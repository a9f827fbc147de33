import { applyD1Migrations, env } from "cloudflare:test";
import { shardBindings } from "../../src/db/shard-names";
import { shardFor } from "../../src/db/shards";

// Storage is isolated per test file; migrations are idempotent (d1_migrations table). The
// directory and every shard, from their own folders (migrations/directory, migrations/shard).
await applyD1Migrations(env.DIRECTORY, env.TEST_DIRECTORY_MIGRATIONS);
for (const b of shardBindings(env)) await applyD1Migrations(shardFor(env, b), env.TEST_SHARD_MIGRATIONS);
