/**
 * `GET /healthz` (docs/reference.md § "GET /healthz", docs/operations.md § Deploy):
 * no authentication, outside the rate limit (src/index.ts), never cached. Answers the API's
 * version, the deployed build (the `CF_VERSION_METADATA` binding) and whether the directory
 * and every shard answer a `SELECT 1` within `PROBE_TIMEOUT_MS`. An isolate probes at most
 * once per `PROBE_REUSE_MS` and answers the last probe's findings meanwhile, so a flood of
 * health checks costs the databases a bounded rate of queries.
 */
import { z } from "zod";
import { successEnvelope } from "../http/envelopes";
import { ApiError } from "../http/errors";
import type { Operation } from "../http/operation";
import { success } from "../http/respond";
import { shardsOf } from "./shards";

/** How long a database may take to answer the probe (ms) before it counts as down. */
const PROBE_TIMEOUT_MS = 2_000;
/** How long an isolate answers its last probe's findings before probing again (ms). */
const PROBE_REUSE_MS = 2_000;

const databaseSchema = z.strictObject({
  binding: z.string().meta({ description: "The D1 binding: `DIRECTORY` or a shard's `SHARD_<n>`." }),
  ok: z.boolean(),
  ms: z.number().int().meta({ description: "How long the probe took (ms); the timeout when it did not answer." }),
});

const healthSchema = z.strictObject({
  version: z.string().meta({ description: "The API's version (the OpenAPI document's `info.version`)." }),
  build: z
    .strictObject({
      id: z.string().meta({ description: "The deployed Worker version's id (`wrangler versions list`)." }),
      tag: z.string().meta({ description: 'Its tag, `""` when none.' }),
      timestamp: z.string().meta({ description: 'When it was uploaded (ISO 8601); `""` locally.' }),
    })
    .meta({ description: 'The deployed build; locally its fields are `""`.' }),
  databases: z.array(databaseSchema).meta({ description: "The directory, then each shard, with the probe's outcome." }),
});

/** One probe's findings: each database's outcome. */
type Probe = z.infer<typeof databaseSchema>[];

let last: { at: number; probe: Probe } | undefined;

/** `SELECT 1` on `d1`, timed; false past `PROBE_TIMEOUT_MS` or on any error. */
async function probe(binding: string, d1: D1Database): Promise<Probe[number]> {
  const started = Date.now();
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), PROBE_TIMEOUT_MS);
  });
  const ok = await Promise.race([
    d1
      .prepare("SELECT 1")
      .first()
      .then(() => true)
      .catch(() => false),
    timeout,
  ]);
  clearTimeout(timer);
  return { binding, ok, ms: Date.now() - started };
}

/** The directory's and every shard's probe, reused within `PROBE_REUSE_MS` of the last one. */
async function probeAll(env: Env, now = Date.now()): Promise<Probe> {
  if (last && now - last.at < PROBE_REUSE_MS) return last.probe;
  const found = await Promise.all([probe("DIRECTORY", env.DIRECTORY), ...shardsOf(env).map(({ binding, d1 }) => probe(binding, d1))]);
  last = { at: now, probe: found };
  return found;
}

/**
 * The health operation.
 *
 * @param version the API's version (src/openapi/document.ts `API_VERSION`; injected by
 *   src/api.ts, since that layer sits above this one).
 */
export function healthOperations(version: string): Operation<Env>[] {
  return [
    {
      method: "GET",
      path: "/healthz",
      operationId: "getHealth",
      scopes: [],
      tag: { name: "Operations", description: "For the operator's monitoring: whether this deployment answers." },
      summary: "Whether the service and its databases answer",
      description:
        "No authentication and outside the rate limit; never cached. Probes the directory and every shard with `SELECT 1` (each within 2 s); an isolate reuses its last probe for 2 s, so checks cost the databases a bounded rate. `200` when all answered, else `503 SERVICE_UNAVAILABLE` naming each that did not, with `Retry-After: 2`. For uptime probes and the post-deploy smoke test (docs/operations.md).",
      public: true,
      unmetered: true,
      responses: {
        200: {
          description: "Every database answered.",
          schema: successEnvelope("Health", healthSchema, "The deployment's version and its databases' probes."),
          example: {
            status: "success",
            result: {
              version: "3.0.0",
              build: { id: "4f2c7a1e-0d3b-4c55-9a8e-2b1f6e7d9c10", tag: "", timestamp: "2026-11-28T09:00:00.000Z" },
              databases: [
                { binding: "DIRECTORY", ok: true, ms: 3 },
                { binding: "SHARD_0", ok: true, ms: 4 },
              ],
            },
          },
        },
        503: { codes: ["SERVICE_UNAVAILABLE"], lead: "A database did not answer its probe; `details` names each (`path`: `databases.<binding>`)." },
      },
      handler: async (_req, env) => {
        const databases = await probeAll(env);
        const down = databases.filter((d) => !d.ok);
        if (down.length > 0) {
          throw new ApiError(
            "SERVICE_UNAVAILABLE",
            undefined,
            down.map((d) => ({ path: `databases.${d.binding}`, message: `did not answer within ${PROBE_TIMEOUT_MS} ms` })),
            // The next check probes again after the isolate's reuse window.
            { "retry-after": String(PROBE_REUSE_MS / 1000) },
          );
        }
        const meta = env.CF_VERSION_METADATA;
        return success({ version, build: { id: meta?.id ?? "", tag: meta?.tag ?? "", timestamp: meta?.timestamp ?? "" }, databases });
      },
    },
  ];
}

/** Forgets the isolate's last probe (tests: a database's state changed between two checks). */
export function forgetHealthProbe(): void {
  last = undefined;
}
