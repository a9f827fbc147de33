/**
 * Worker entry (DESIGN.md): `fetch` serves the API (src/api.ts) and the webhook portal
 * (src/portal/), `scheduled` sweeps the outbox, and the SchoolHub and WebhookCourier Durable
 * Object classes are exported for their bindings.
 */
import { operations } from "./api";
import { openSession } from "./db/client";
import { pruneIdempotencyKeys } from "./db/idempotency";
import { sweepOutbox } from "./events/outbox";
import { RequestContext } from "./http/context";
import { withRateLimit } from "./http/rate-limit";
import { buildRouter, errorResponse, type Route } from "./http/router";
import { servePortal } from "./portal/serve";
import { prunePortalSessions } from "./portal/sessions";

export { WebhookCourier } from "./webhooks/courier/webhook-courier";
export { SchoolHub } from "./webhooks/hub/school-hub";

/** The Worker serving `routes` (the API's operations; the benchmark entry adds its own). */
export function workerOf(routes: readonly Route<Env>[]) {
  const handle = buildRouter(routes);
  return {
    async fetch(request, env, exec): Promise<Response> {
      const rc = new RequestContext(request.headers.get("x-request-id"));
      try {
        return await withRateLimit(request, env, async () => {
          // The webhook portal's static files, with its CSP (wrangler.toml run_worker_first).
          const portal = await servePortal(request, env, rc);
          if (portal) return portal;
          return handle(request, env, exec, rc);
        });
      } catch (err) {
        return errorResponse(err, rc);
      }
    },
    /**
     * Cron (every minute, wrangler.toml): re-publish unacknowledged outbox rows and prune old
     * ones, prune idempotency keys older than 24 h and portal sessions expired for a day (on
     * the primary); once an hour also `PRAGMA optimize`, which refreshes the query planner's
     * statistics (D1 runs ANALYZE on the tables that need it).
     */
    async scheduled(controller, env, exec): Promise<void> {
      exec.waitUntil(sweepOutbox(env).then((r) => console.log("outbox sweep", JSON.stringify(r))));
      exec.waitUntil(pruneIdempotencyKeys(openSession(env.DB, "write").d1).then((n) => console.log("idempotency keys pruned", n)));
      exec.waitUntil(prunePortalSessions(env.DB).then((n) => console.log("portal sessions pruned", n)));
      if (new Date(controller.scheduledTime).getUTCMinutes() === 0) exec.waitUntil(env.DB.exec("PRAGMA optimize"));
    },
  } satisfies ExportedHandler<Env>;
}

export default workerOf(operations);
