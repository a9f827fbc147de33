import { defineConfig } from "drizzle-kit";

/** The directory's migrations (binding DIRECTORY): flat NNNN_name.sql files that wrangler and the tests apply. */
export default defineConfig({
  dialect: "sqlite",
  schema: "./src/db/directory-schema.ts",
  out: "./migrations/directory",
  migrations: { prefix: "index" },
});
