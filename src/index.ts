/**
 * Worker entry (DESIGN.md): `fetch` serves the API, `scheduled` sweeps the outbox, and the
 * SchoolHub Durable Object class is exported for its binding.
 */
import type { Env } from "./env";
import { sweepOutbox } from "./events/outbox";
import { RequestContext } from "./http/context";
import { buildRouter } from "./http/router";
import { routes } from "./http/routes";

export { SchoolHub } from "./webhooks/hub";

const handle = buildRouter(routes);

export default {
  async fetch(request, env, exec): Promise<Response> {
    return handle(request, env, exec, new RequestContext(request.headers.get("x-request-id")));
  },
  /** Cron (every minute, wrangler.toml): re-publish unacknowledged outbox rows, prune old ones. */
  async scheduled(_controller, env, exec): Promise<void> {
    exec.waitUntil(sweepOutbox(env).then((r) => console.log("outbox sweep", JSON.stringify(r))));
  },
} satisfies ExportedHandler<Env>;
