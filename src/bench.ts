/**
 * The benchmark entry (`npm run bench` and `npm run bench:hub` serve `src/bench.ts` with
 * `wrangler dev`): the production Worker (src/index.ts) with two more routes, through the
 * same router, envelope and headers. The production Worker never serves them.
 *
 * - `GET /__bench/floor`: the benchmark's floor, one trivial D1 query (`SELECT 1`) in one
 *   round trip.
 * - `POST /__bench/publish`: synthetic events straight to the school's hub
 *   (src/webhooks/bench.ts).
 */
import { operations } from "./api";
import type { RequestContext } from "./http/context";
import { success } from "./http/respond";
import type { Route } from "./http/router";
import { workerOf } from "./index";
import { benchPublish } from "./webhooks/bench";

export { SchoolHub, WebhookCourier } from "./index";

/** The floor handler: `{ one: 1 }` after one D1 round trip. */
async function benchFloor(_req: unknown, env: Env, _exec: ExecutionContext, rc: RequestContext): Promise<Response> {
  return success(await rc.db(() => env.DB.prepare("SELECT 1 AS one").first<{ one: number }>()));
}

/** The routes the benchmark entry adds to the API's operations. */
export const benchRoutes: Route<Env>[] = [
  { method: "POST", path: "/__bench/publish", handler: benchPublish },
  { method: "GET", path: "/__bench/floor", handler: benchFloor },
];

export default workerOf([...operations, ...benchRoutes]);
