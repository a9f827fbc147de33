/**
 * `npm start [-- --persist-to DIR] [--port N] [-- <more wrangler dev flags>]`
 *
 * One command from a fresh clone (after `npm ci`) to a running local API:
 * 1. applies the local D1 migrations to the directory and both shards (`npm run shards --
 *    migrate`'s `applyMigrations`, non-interactive);
 * 2. when the local directory has no school, loads the demo data (scripts/seed-demo.ts),
 *    which the import spreads over the shards;
 * 3. prints the demo API key, a ready-to-paste curl and the URLs of the reference
 *    (`/docs`, `/openapi.json`) and of the webhook portal (`/portal`);
 * 4. runs `wrangler dev --ip 127.0.0.1 --port 8787 --var WEBHOOK_ALLOW_INSECURE_URLS:true` with
 *    stdio inherited, forwarding SIGINT/SIGTERM, and exits with its status (wrangler's custom
 *    build, wrangler.toml `[build]`, first copies the Scalar bundle that /docs loads and
 *    builds the portal).
 */
import { parseArgs } from "node:util";
import { DEMO_API_KEY, OTHER_API_KEY } from "./dataset/build";
import { runIfMain } from "./lib/cli";
import { formatInt } from "./lib/progress";
import { applyMigrations, d1Query, spawnWrangler, userPath } from "./lib/wrangler";
import { seedDemo } from "./seed-demo";

/** Default port of the local API. */
export const DEFAULT_PORT = 8787;

/** The curl printed at start-up: five demo courses with their teachers. */
export function demoCurl(port = DEFAULT_PORT, key = DEMO_API_KEY): string {
  return `curl -H "Authorization: Bearer ${key}" "http://127.0.0.1:${port}/v3/courses?limit=5&includeTeachers=true"`;
}

async function main(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: { "persist-to": { type: "string" }, port: { type: "string" } },
  });
  const persistTo = values["persist-to"] === undefined ? undefined : userPath(values["persist-to"]);
  const port = values.port === undefined ? DEFAULT_PORT : Number(values.port);
  if (!Number.isInteger(port) || port <= 0 || port > 65535) throw new Error("--port must be a TCP port number");

  console.log("applying local D1 migrations (the directory and every shard)…");
  await applyMigrations("local", persistTo);
  const [row] = await d1Query<{ n: number }>("SELECT count(*) AS n FROM schools", "local", persistTo);
  const schools = Number(row?.n ?? 0);
  if (schools === 0) {
    console.log("the local directory has no school: loading the demo data…");
    const { summary: s } = await seedDemo({ persistTo, skipMigrations: true });
    console.log(`demo data loaded: ${formatInt(s.rows)} rows in ${s.seconds.toFixed(1)} s`);
  } else {
    console.log(
      `the local directory has ${formatInt(schools)} schools: keeping them (npm run seed:demo reloads the demo data; npm run shards -- status shows where they are)`,
    );
  }
  console.log(`
demo API key (sch_demo):  ${DEMO_API_KEY}
other school (sch_other): ${OTHER_API_KEY}
try:
  ${demoCurl(port)}
API reference (paste the demo key under Authentication, then "Test Request"):
  http://127.0.0.1:${port}/docs       OpenAPI document: http://127.0.0.1:${port}/openapi.json
webhook portal (sign in with the demo key: endpoints, delivery log, chart):
  http://127.0.0.1:${port}/portal
`);

  const args = ["dev", "--ip", "127.0.0.1", "--port", String(port), "--var", "WEBHOOK_ALLOW_INSECURE_URLS:true"];
  if (persistTo) args.push("--persist-to", persistTo);
  args.push(...positionals);
  const child = spawnWrangler(args, "inherit");
  const forward = (signal: NodeJS.Signals) => {
    if (child.exitCode === null && child.signalCode === null) child.kill(signal);
  };
  process.on("SIGINT", forward);
  process.on("SIGTERM", forward);
  return new Promise((resolve, reject) => {
    child.on("error", reject);
    child.on("exit", (code, signal) => resolve(code ?? (signal === "SIGINT" ? 130 : signal === "SIGTERM" ? 143 : 1)));
  });
}

await runIfMain(import.meta.url, main);
