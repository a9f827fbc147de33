import { applyD1Migrations, env } from "cloudflare:test";

// Storage is isolated per test file; migrations are idempotent (d1_migrations table).
await applyD1Migrations(env.DB, env.TEST_MIGRATIONS);
