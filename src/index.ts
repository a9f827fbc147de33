/**
 * Worker entry (docs/architecture.md): `fetch` serves the API (src/api.ts) and the webhook portal
 * (src/portal/) and writes one log line per request (src/lib/log.ts), `scheduled` sweeps the
 * outbox, and the SchoolHub and WebhookCourier Durable Object classes are exported for their
 * bindings.
 */
import { operations } from "./api";
import { openSession, withD1Seam } from "./db/client";
import { pruneEventBytes } from "./db/event-quota";
import { pruneIdempotencyKeys } from "./db/idempotency";
import { shardsOf } from "./db/shards";
import { meteredEnv } from "./events/metered";
import { pruneOutbox, sweepOutbox } from "./events/outbox";
import { RequestContext } from "./http/context";
import { withRateLimit } from "./http/rate-limit";
import { buildRouter, errorResponse, type Route, unmeteredRequest } from "./http/router";
import { InvocationBudget, workersPlan } from "./lib/invocation-budget";
import { describeError, logPrune, logRequest, logShardSweepFailure, logSweep, type PruneLine } from "./lib/log";
import { serveStatic } from "./portal/serve";
import { prunePortalSessions } from "./portal/sessions";

export { WebhookCourier } from "./webhooks/courier/webhook-courier";
export { SchoolHub } from "./webhooks/hub/school-hub";

/** The Worker serving `routes` (the API's operations; the benchmark entry adds its own). */
export function workerOf(routes: readonly Route<Env>[]) {
  const handle = buildRouter(routes);
  const unmetered = unmeteredRequest(routes);
  return {
    async fetch(request, workerEnv, exec): Promise<Response> {
      const env = withD1Seam(workerEnv);
      const rc = new RequestContext(request.headers.get("x-request-id"));
      let response: Response;
      try {
        // The health check is outside the rate limit: monitors from shared IPs must not be
        // refused, and its probe's cost is bounded per isolate (src/db/health.ts).
        response = unmetered(request)
          ? await handle(request, env, exec, rc)
          : await withRateLimit(request, env, rc, async () => {
              // The portal's and the API reference's static files, with their CSP (wrangler.toml run_worker_first).
              const file = await serveStatic(request, env, rc);
              if (file) return file;
              return handle(request, env, exec, rc);
            });
      } catch (err) {
        response = errorResponse(err, rc);
      }
      logRequest({
        requestId: rc.requestId,
        schoolId: rc.schoolId,
        keyId: rc.keyId,
        operationId: rc.operationId,
        method: request.method,
        path: new URL(request.url).pathname.slice(0, 200),
        status: response.status,
        code: rc.errorCode,
        durationMs: rc.elapsedMs(),
        dbMs: rc.dbMs,
        ...(rc.internalError === undefined ? {} : describeError(rc.internalError)),
      });
      return response;
    },
    /**
     * Cron (every minute, wrangler.toml): `runCron`, within the invocation's budget of D1
     * queries and calls for the account's plan (`WORKERS_PLAN`, src/lib/invocation-budget.ts).
     */
    async scheduled(controller, workerEnv, _exec): Promise<void> {
      const budget = InvocationBudget.of(workersPlan(workerEnv.WORKERS_PLAN));
      await runCron(meteredEnv(withD1Seam(workerEnv), budget), controller.scheduledTime, budget);
    },
  } satisfies ExportedHandler<Env>;
}

/**
 * One cron run (docs/architecture.md § The outbox, "Who carries each kind of work"): first the
 * prunes — idempotency keys older than 24 h, event-quota counters of past UTC days, outbox rows
 * published more than 7 days ago (every shard), portal sessions ended a day ago (the
 * directory), each one statement of at most `PRUNE_ROWS` rows on the primary, and once an hour
 * `PRAGMA optimize` on every database (the planner's statistics) — so that a backlog never
 * starves them; then the outbox sweep with what is left of `budget`. `env` counts on `budget`
 * (`meteredEnv`); a prune is skipped when the budget has no room for it (the next run goes on).
 * Each database's prunes write one `prune` line when they removed rows, the sweep its line; a
 * database's failure is logged and stops only its own prunes.
 */
async function runCron(env: Env, scheduledTime: number, budget: InvocationBudget): Promise<void> {
  const started = Date.now();
  const hourly = new Date(scheduledTime).getUTCMinutes() === 0;
  // Each step holds the budget for its statements (`queries`) until it ends.
  const step = async (queries: number, run: () => Promise<unknown>) => {
    const held = budget.reserve(queries, 0);
    if (!held) return;
    try {
      await run();
    } finally {
      held.release();
    }
  };
  // Each prune's statements, and the field of the database's `prune` line its count goes to.
  type Prune = [queries: number, field: Exclude<keyof PruneLine, "database">, run: (primary: D1Database) => Promise<number>];
  const prunesOf = (binding: string): Prune[] =>
    binding === "DIRECTORY"
      ? [[2, "portalSessions", prunePortalSessions]]
      : [
          [1, "idempotencyKeys", pruneIdempotencyKeys],
          [1, "eventBytes", pruneEventBytes],
          [1, "outboxRows", pruneOutbox],
        ];
  await Promise.all(
    [...shardsOf(env), { binding: "DIRECTORY", d1: env.DIRECTORY }].map(async ({ binding, d1 }) => {
      const line: PruneLine = { database: binding };
      try {
        const primary = openSession(d1, "write").d1;
        for (const [queries, field, prune] of prunesOf(binding)) {
          await step(queries, async () => {
            line[field] = await prune(primary);
          });
        }
        if (hourly) await step(1, () => d1.exec("PRAGMA optimize"));
      } catch (err) {
        logShardSweepFailure({ shard: binding, ...describeError(err) });
      } finally {
        logPrune(line);
      }
    }),
  );
  const r = await sweepOutbox(env, Date.now(), {}, budget);
  logSweep({ ...r, queries: budget.queries, calls: budget.calls, durationMs: Date.now() - started });
}

export default workerOf(operations);
