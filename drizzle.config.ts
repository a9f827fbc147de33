import { defineConfig } from "drizzle-kit";

/** drizzle-kit generates flat NNNN_name.sql migrations that wrangler and the tests apply. */
export default defineConfig({
  dialect: "sqlite",
  schema: "./src/db/schema.ts",
  out: "./migrations",
  migrations: { prefix: "index" },
});
