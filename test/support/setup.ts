import { applyD1Migrations, env } from "cloudflare:test";
import { useSessionSeam } from "../../src/db/client";
import { shardBindings } from "../../src/db/shard-names";
import { shardFor } from "../../src/db/shards";
import { useSqlSeam } from "../../src/webhooks/platform/platform";
import { limitedD1 } from "./d1-limits";
import { limitedSql } from "./sql-limits";

// Storage is isolated per test file; migrations are idempotent (d1_migrations table). The
// directory and every shard, from their own folders (migrations/directory, migrations/shard).
await applyD1Migrations(env.DIRECTORY, env.TEST_DIRECTORY_MIGRATIONS);
for (const b of shardBindings(env)) await applyD1Migrations(shardFor(env, b), env.TEST_SHARD_MIGRATIONS);

// Production's size limits, which the local runtime does not enforce, on every D1 session the
// Worker opens and every webhook object's SQL (d1-limits.ts, sql-limits.ts).
useSessionSeam(limitedD1);
useSqlSeam(limitedSql);
