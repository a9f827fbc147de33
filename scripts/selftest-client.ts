/**
 * Self-test of the OpenAPI document as an integrator uses it (`npm run test:client`, about 30 s):
 * (a) `openapi-typescript` (test/client/package.json pins it with the TypeScript 5 it runs on)
 *     generates `api.d.ts` from the document that GET /openapi.json serves;
 * (b) test/client/integrator.ts compiles against it with `tsc --strict` (query parameters
 *     take numbers and booleans, the id-list filters arrays; every defaulted field of a
 *     request body or query may be left out; the second DELETE's 404 body is typed
 *     WEBHOOK_NOT_FOUND; `WebhookDelivery` is exactly the union of the `webhooks` bodies);
 * (c) the program runs through `openapi-fetch` against `wrangler dev` on a small imported
 *     dataset: the wire accepts what the typed client sends.
 * Prints `ok`/`not ok` lines; exit status 1 when a check fails.
 */
import { spawnSync } from "node:child_process";
import { copyFile, mkdtemp, rm, symlink, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { openApiDocument } from "../src/api";
import { DEMO_API_KEY, generateDataset } from "./dataset/build";
import { writeDataset } from "./generate";
import { type DevServer, startDevServer } from "./lib/dev-server";
import { check, migratedState, runScript, runSelfTest } from "./lib/selftest";
import { packageBin, ROOT } from "./lib/wrangler";

const CLIENT_DIR = path.join(ROOT, "test", "client");

/** Runs `node <script> <args>` in `cwd`; its exit code and output. */
function node(script: string, args: string[], cwd: string): { code: number; output: string } {
  const r = spawnSync(process.execPath, [script, ...args], { cwd, encoding: "utf8" });
  return { code: r.status ?? 1, output: `${r.stdout}${r.stderr}` };
}

async function main(): Promise<void> {
  const dir = await mkdtemp(path.join(os.tmpdir(), "client-selftest-"));
  let server: DevServer | undefined;
  try {
    // (a) Generate the types, as an integrator would from /openapi.json.
    await writeFile(path.join(dir, "openapi.json"), JSON.stringify(openApiDocument()));
    const generator = packageBin("openapi-typescript", "openapi-typescript", CLIENT_DIR);
    // Its default options, as an integrator runs it: a defaulted request field must come out
    // optional (src/openapi/document.ts, inlineRequestDefaults).
    const generated = node(generator, ["openapi.json", "--output", "api.d.ts"], dir);
    check(generated.code === 0, "openapi-typescript generates api.d.ts from the document", generated.output);

    // (b) Compile the integrator's program, strict, against the generated types.
    await copyFile(path.join(CLIENT_DIR, "integrator.ts"), path.join(dir, "integrator.ts"));
    await symlink(path.join(ROOT, "node_modules"), path.join(dir, "node_modules"), "dir");
    const compilerOptions = { strict: true, noEmit: true, target: "es2022", module: "preserve", lib: ["es2022", "dom"], types: [] };
    await writeFile(path.join(dir, "tsconfig.json"), JSON.stringify({ compilerOptions, files: ["integrator.ts"] }));
    const compiled = node(packageBin("typescript", "tsc"), ["--project", "tsconfig.json"], dir);
    check(compiled.code === 0, "the integrator's program compiles with tsc --strict", compiled.output);

    // (c) Run it against wrangler dev, on a small dataset whose school has the demo key.
    const persist = path.join(dir, "state");
    await migratedState(persist);
    const file = path.join(dir, "data.json");
    await writeDataset(generateDataset({ courses: 12, students: 20, studentsPerCourse: 4, schools: 1 }), file);
    const imported = await runScript("import.ts", [file, "--persist-to", persist, "--quiet"]);
    if (imported.code !== 0) throw new Error(`import failed:\n${imported.stdout}${imported.stderr}`);
    server = await startDevServer({ persistTo: persist, quiet: true, vars: { WEBHOOK_ALLOW_INSECURE_URLS: "true" } });
    const program = (await import(pathToFileURL(path.join(dir, "integrator.ts")).href)) as { run(base: string, key: string): Promise<string[]> };
    const seen = await program.run(server.base, DEMO_API_KEY);
    check(seen.length === 7, "the program runs the flow against wrangler dev", seen.join("\n"));
    for (const line of seen) console.log(`# ${line}`);
  } finally {
    await server?.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

await runSelfTest("client", main);
