/**
 * `npm run lint:openapi` — generates the OpenAPI document from the zod schemas (the
 * `openApiDocument` of src/api.ts that GET /openapi.json serves) into `dist/openapi.json`,
 * then validates it with @apidevtools/swagger-parser (the OpenAPI 3.1 schema, every `$ref`
 * resolvable) and lints it with @redocly/cli `recommended-strict` (warnings as errors; the
 * occurrences ignored, and why: redocly.yaml, .redocly.lint-ignore.yaml).
 *
 * Runs in Node, not in workerd; `npm test` runs it before `vitest run`. Exit status 1 on any
 * problem.
 */
import { spawnSync } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import SwaggerParser from "@apidevtools/swagger-parser";
import { openApiDocument } from "../src/api";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
/** Where the generated document is written (git-ignored), relative to the repository root. */
export const OUTPUT = "dist/openapi.json";

async function main(): Promise<number> {
  const doc = openApiDocument();
  const file = path.join(ROOT, OUTPUT);
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(file, `${JSON.stringify(doc, null, 2)}\n`);
  console.log(
    `generated ${OUTPUT}: ${Object.keys(doc.paths ?? {}).length} paths, ${Object.keys(doc.webhooks ?? {}).length} webhooks, ${Object.keys(doc.components?.schemas ?? {}).length} schemas`,
  );

  try {
    // swagger-parser mutates what it validates: give it a copy.
    await SwaggerParser.validate(structuredClone(doc) as never);
    console.log("swagger-parser: valid OpenAPI 3.1");
  } catch (err) {
    console.error(`swagger-parser: ${(err as Error).message}`);
    return 1;
  }

  const redocly = spawnSync(
    process.execPath,
    [path.join(ROOT, "node_modules/@redocly/cli/bin/cli.js"), "lint", OUTPUT, "--config", "redocly.yaml", "--format", "stylish"],
    // REDOCLY_SUPPRESS_UPDATE_NOTICE / telemetry off: the machine may be offline.
    { cwd: ROOT, stdio: "inherit", env: { ...process.env, REDOCLY_TELEMETRY: "off", REDOCLY_SUPPRESS_UPDATE_NOTICE: "true" } },
  );
  if (redocly.status !== 0) {
    console.error(`redocly lint failed (exit ${redocly.status ?? redocly.signal})`);
    return 1;
  }
  return 0;
}

process.exitCode = await main();
