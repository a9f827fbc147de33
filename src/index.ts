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
import { sweepOutbox } from "./events/outbox";
import { RequestContext } from "./http/context";
import { withRateLimit } from "./http/rate-limit";
import { buildRouter, errorResponse, type Route } from "./http/router";
import { describeError, logPrune, logRequest, logSweep } from "./lib/log";
import { serveStatic } from "./portal/serve";
import { prunePortalSessions } from "./portal/sessions";

export { WebhookCourier } from "./webhooks/courier/webhook-courier";
export { SchoolHub } from "./webhooks/hub/school-hub";

/** The Worker serving `routes` (the API's operations; the benchmark entry adds its own). */
export function workerOf(routes: readonly Route<Env>[]) {
  const handle = buildRouter(routes);
  return {
    async fetch(request, workerEnv, exec): Promise<Response> {
      const env = withD1Seam(workerEnv);
      const rc = new RequestContext(request.headers.get("x-request-id"));
      let response: Response;
      try {
        response = await withRateLimit(request, env, rc, async () => {
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
        durationMs: rc.elapsedMs(),
        dbMs: rc.dbMs,
        ...(rc.internalError === undefined ? {} : describeError(rc.internalError)),
      });
      return response;
    },
    /**
     * Cron (every minute, wrangler.toml): re-publish unacknowledged outbox rows of every
     * shard, fairly per shard and per school, and prune old ones; prune idempotency keys
     * older than 24 h and the event-quota counters of past UTC days (every shard) and portal
     * sessions expired for a day (the directory), on
     * the primaries; once an hour also `PRAGMA optimize` on every database, which refreshes
     * the query planner's statistics. Each writes its log line.
     */
    async scheduled(controller, workerEnv, exec): Promise<void> {
      const env = withD1Seam(workerEnv);
      const started = Date.now();
      exec.waitUntil(sweepOutbox(env).then((r) => logSweep({ ...r, durationMs: Date.now() - started })));
      const shards = shardsOf(env).map((s) => s.d1);
      for (const shard of shards) {
        const primary = openSession(shard, "write").d1;
        exec.waitUntil(pruneIdempotencyKeys(primary).then((n) => logPrune({ idempotencyKeys: n })));
        exec.waitUntil(pruneEventBytes(primary).then((n) => logPrune({ eventBytes: n })));
      }
      exec.waitUntil(prunePortalSessions(env.DIRECTORY).then((n) => logPrune({ portalSessions: n })));
      if (new Date(controller.scheduledTime).getUTCMinutes() === 0) {
        for (const d1 of [env.DIRECTORY, ...shards]) exec.waitUntil(d1.exec("PRAGMA optimize"));
      }
    },
  } satisfies ExportedHandler<Env>;
}

export default workerOf(operations);
