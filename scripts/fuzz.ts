/**
 * `npm run fuzz -- [--runs 1000] [--base http://127.0.0.1:8787] [--key sk_…] [--other-key sk_…]
 *  [--seed 1] [--concurrency 4]`
 *
 * The fuzz suite's generators and oracle (test/fuzz/) against a running `wrangler dev`
 * (`npm start`): `--runs` hostile requests over every route, judged as in `npm test`. Prints
 * the counts of requests, 5xx and off-contract answers by route, and exits non-zero if there
 * is any, or if the read school's data changed. `--key` (default the demo key) is read and
 * must end unchanged; `--other-key` (default `sch_other`'s) takes the valid writes. How the
 * run finds its ids and receivers: docs/development.md § Fuzzing.
 */
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { parseArgs } from "node:util";
import type { CourseRecord } from "../src/courses/schemas";
import { fuzz, type Send, snapshotSchool, Tally } from "../test/fuzz/oracle";
import { type FuzzContext, type Refs, requestArb } from "../test/fuzz/requests";
import { DEMO_API_KEY, OTHER_API_KEY } from "./dataset/build";
import { runIfMain } from "./lib/cli";
import { formatInt } from "./lib/progress";

/** A course record read with every include flag. */
type CourseWithIncludes = CourseRecord & Required<Pick<CourseRecord, "students" | "teachers" | "surveyTemplates">>;

/** Marks the registrations this script creates (path of their URL), so a later run can clean up. */
const HOOK_PATH = "/fuzz-receiver";

async function main(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      runs: { type: "string", default: "1000" },
      base: { type: "string", default: process.env.API_BASE ?? "http://127.0.0.1:8787" },
      key: { type: "string", default: DEMO_API_KEY },
      "other-key": { type: "string", default: OTHER_API_KEY },
      seed: { type: "string", default: "1" },
      concurrency: { type: "string", default: "4" },
    },
  });
  const base = values.base!.replace(/\/+$/, "");
  const runs = Number(values.runs);
  const seed = Number(values.seed);
  const concurrency = Number(values.concurrency);
  if (!Number.isInteger(runs) || runs < 1) throw new Error("--runs must be a positive integer");

  const send: Send = (req) => fetch(`${base}${req.path}`, { method: req.method, headers: req.headers, body: req.body, redirect: "manual" });
  const api = async (key: string, method: string, path: string, json?: unknown) => {
    const res = await send({
      method,
      path,
      headers: { authorization: `Bearer ${key}`, ...(json === undefined ? {} : { "content-type": "application/json" }) },
      body: json === undefined ? undefined : JSON.stringify(json),
    });
    return { status: res.status, body: (await res.json()) as { result?: unknown; code?: string } };
  };

  let probe: Response;
  try {
    probe = await fetch(`${base}/openapi.json`);
  } catch {
    console.error(`No API at ${base}. Start it first (npm start -- --port N --persist-to DIR -- --var RATE_LIMIT_ENABLED:false).`);
    return 2;
  }
  // A run sends thousands of requests per minute with one key: the rate limit (600 per 60 s,
  // docs/reference.md § Conventions) would answer most of them 429 and stall the school's snapshot.
  if (probe.headers.has("ratelimit-policy")) {
    console.error(
      `${base} rate-limits its callers (RateLimit-Policy: ${probe.headers.get("ratelimit-policy")}). Start it with the limit off: npm start -- --port N --persist-to DIR -- --var RATE_LIMIT_ENABLED:false`,
    );
    return 2;
  }

  // A receiver for the deliveries of valid registrations (204 to everything).
  const receiver = createServer((req, res) => {
    req.resume();
    req.on("end", () => res.writeHead(204).end());
  });
  await new Promise<void>((r) => receiver.listen(0, "127.0.0.1", r));
  const hookUrl = (n: number) => `http://127.0.0.1:${(receiver.address() as AddressInfo).port}${HOOK_PATH}/${n}`;
  /** Deletes the registrations of both schools that target a fuzz receiver. */
  const removeOwnHooks = async () => {
    for (const key of [values.key!, values["other-key"]!]) {
      for (const hook of (await api(key, "GET", "/v3/webhooks")).body.result as { id: string; url: string }[]) {
        if (new URL(hook.url).pathname.startsWith(HOOK_PATH)) await api(key, "DELETE", `/v3/webhooks/${hook.id}`);
      }
    }
  };

  try {
    const readKey = values.key!;
    const writeKey = values["other-key"]!;
    const includes = "includeStudents=true&includeTeachers=true&includeSurveyTemplates=true&includeTraining=true";
    const read = await api(readKey, "GET", `/v3/courses?limit=100&${includes}`);
    const write = await api(writeKey, "GET", `/v3/courses?limit=100&${includes}`);
    if (read.status !== 200 || write.status !== 200)
      throw new Error(`the keys must be valid: GET /v3/courses answered ${read.status} (--key) and ${write.status} (--other-key)`);

    // Leftovers of an earlier run (its receiver is gone): deleted, so the school has room.
    await removeOwnHooks();
    // Does the server take http://127.0.0.1 targets (WEBHOOK_ALLOW_INSECURE_URLS=true)?
    const probe = await api(writeKey, "POST", "/v3/webhooks", { url: hookUrl(0), description: "npm run fuzz" });
    const insecureUrls = probe.status === 201;
    if (!insecureUrls && probe.body.code !== "INVALID_WEBHOOK_URL") throw new Error(`probe registration answered ${probe.status} ${probe.body.code}`);
    const register = async (key: string, n: number) => {
      const res = await api(key, "POST", "/v3/webhooks", { url: hookUrl(n), description: "npm run fuzz" });
      if (res.status !== 201) throw new Error(`setup: POST /v3/webhooks answered ${res.status} ${res.body.code}`);
      return (res.body.result as { id: string }).id;
    };
    const readHooks = ((await api(readKey, "GET", "/v3/webhooks")).body.result as { id: string }[]).map((h) => h.id);
    const writeHooks = ((await api(writeKey, "GET", "/v3/webhooks")).body.result as { id: string }[]).map((h) => h.id);
    const deletable: string[] = [];
    if (insecureUrls) {
      // One registration in the read school (before its snapshot) so that its routes see a real id.
      if (readHooks.length === 0) readHooks.push(await register(readKey, 1));
      for (let i = 0; i < 4; i++) deletable.push(await register(writeKey, 10 + i));
    }

    const records = write.body.result as CourseWithIncludes[];
    const uniq = (xs: (string | null | undefined)[]) => [...new Set(xs.filter((x): x is string => typeof x === "string"))].slice(0, 50);
    /** The reference ids seen in a page of course records (with every include). */
    const refsOf = (page: CourseWithIncludes[]): Refs => ({
      groupIds: uniq(page.flatMap((c) => c.groupIds)),
      studentIds: uniq(page.flatMap((c) => c.students.map((s) => s.id))),
      professorIds: uniq(page.flatMap((c) => c.teachers.map((t) => t.id))),
      trainingIds: uniq(page.map((c) => c.training?.id)),
      surveyTemplateIds: uniq(page.flatMap((c) => c.surveyTemplates.map((t) => t.id))),
    });
    const ctx: FuzzContext = {
      readKey,
      writeKey,
      refusedKeys: ["sk_test_fuzz_unknown_key_0000"],
      readCourseIds: (read.body.result as { id: string }[]).map((c) => c.id).slice(0, 50),
      writeCourseIds: records.map((c) => c.id).slice(0, 50),
      writeRefs: refsOf(records),
      readRefs: refsOf(read.body.result as CourseWithIncludes[]),
      readWebhookIds: readHooks,
      writeWebhookIds: writeHooks.filter((id) => !deletable.includes(id)),
      deletableWebhookIds: deletable,
      webhookUrls: insecureUrls ? [hookUrl(2), hookUrl(3)] : [],
      insecureUrls,
    };
    console.log(
      `fuzzing ${base}: ${formatInt(runs)} requests, seed ${seed}, ${concurrency} at a time; webhook URLs ${insecureUrls ? "insecure allowed (valid registrations target a local receiver)" : "strict (no valid registration is sent)"}`,
    );

    const before = await snapshotSchool(send, readKey);
    const tally = new Tally();
    const started = performance.now();
    let next = 1000;
    await fuzz({
      send,
      arbitrary: requestArb(ctx),
      runs,
      seed,
      concurrency,
      stopOnFailure: false,
      tally,
      onProgress: (t) => {
        if (t.requests >= next) {
          console.log(
            `  ${formatInt(t.requests)} requests, ${t.fiveXX} 5xx, ${t.offContract} off-contract (${((performance.now() - started) / 1000).toFixed(0)} s)`,
          );
          next += 1000;
        }
      },
    });
    const after = await snapshotSchool(send, readKey);
    const unchanged = JSON.stringify(before) === JSON.stringify(after);

    console.log(`\n${tally.summary()}`);
    console.log(
      `\nread school (${before.courses} courses, ${before.webhooks} registrations, ${before.deliveries} deliveries): ${unchanged ? "unchanged" : `CHANGED: ${JSON.stringify(before)} → ${JSON.stringify(after)}`}`,
    );
    console.log(
      `requests: ${formatInt(tally.requests)}   5xx: ${tally.fiveXX}   off-contract: ${tally.offContract}   (${((performance.now() - started) / 1000).toFixed(0)} s)`,
    );
    return tally.fiveXX === 0 && tally.offContract === 0 && unchanged ? 0 : 1;
  } finally {
    // Every registration of this run (set up, or created by valid requests) goes: its receiver does.
    await removeOwnHooks().catch(() => undefined);
    receiver.close();
  }
}

await runIfMain(import.meta.url, main);
