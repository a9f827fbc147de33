import { applyD1Migrations, env } from "cloudflare:test";
import { useSessionSeam } from "../../src/db/client";
import { useSqlSeam } from "../../src/webhooks/platform/platform";
import { limitedD1 } from "./d1-limits";
import { limitedSql } from "./sql-limits";

// Storage is isolated per test file; migrations are idempotent (d1_migrations table).
await applyD1Migrations(env.DB, env.TEST_MIGRATIONS);

// Production's size limits, which the local runtime does not enforce, on every D1 session the
// Worker opens and every webhook object's SQL (d1-limits.ts, sql-limits.ts).
useSessionSeam(limitedD1);
useSqlSeam(limitedSql);
