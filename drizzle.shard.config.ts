import { defineConfig } from "drizzle-kit";

/** Every shard's migrations (bindings SHARD_0, SHARD_1, …): flat NNNN_name.sql files that wrangler and the tests apply. */
export default defineConfig({
  dialect: "sqlite",
  schema: "./src/db/shard-schema.ts",
  out: "./migrations/shard",
  migrations: { prefix: "index" },
});
