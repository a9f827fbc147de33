/**
 * The benchmark entry (`npm run bench` and `npm run bench:hub` serve it with `wrangler dev`):
 * the production Worker (src/index.ts) with three more routes, through the same router,
 * envelope and headers — `GET /__bench/floor` (one `SELECT 1`, the floor),
 * `GET /__bench/page-floor` (stored pages of records, src/bench/page-floor.ts) and
 * `POST /__bench/publish` (synthetic events to a school's hub, src/bench/publish.ts).
 *
 * Two request headers serve the A/Bs (src/bench/ab-variants.ts): `x-bench-variant: b|s|m|c`
 * picks the variant, `x-bench-count: 1` answers the request's D1 and rate-limiter calls in
 * `x-bench-d1-calls` and `x-bench-ratelimit-calls`. A third, `x-bench-fail-publish: 1`, makes the
 * request's publish to the hub fail (src/bench/faults.ts). The production Worker never serves them.
 */
import { operations } from "../api";
import type { RequestContext } from "../http/context";
import { success } from "../http/respond";
import type { Route } from "../http/router";
import { workerOf } from "../index";
import { COUNT_HEADER, countingEnv, D1_CALLS_HEADER, RATE_LIMIT_CALLS_HEADER, VARIANT_HEADER, variantEnv } from "./ab-variants";
import { FAIL_PUBLISH_HEADER, failingPublishEnv } from "./faults";
import { benchPageFloor } from "./page-floor";
import { benchPublish } from "./publish";

export { SchoolHub, WebhookCourier } from "../index";

/** The floor handler: `{ one: 1 }` after one D1 round trip. */
async function benchFloor(_req: unknown, env: Env, _exec: ExecutionContext, rc: RequestContext): Promise<Response> {
  return success(await rc.db(() => env.DIRECTORY.prepare("SELECT 1 AS one").first<{ one: number }>()));
}

/** The routes the benchmark entry adds to the API's operations. */
export const benchRoutes: Route<Env>[] = [
  { method: "POST", path: "/__bench/publish", handler: benchPublish },
  { method: "GET", path: "/__bench/floor", handler: benchFloor },
  { method: "GET", path: "/__bench/page-floor", handler: benchPageFloor },
];

const worker = workerOf([...operations, ...benchRoutes]);

export default {
  ...worker,
  /** The Worker's `fetch`, in variant A (as deployed), B, S or M, counting the calls when asked, its publish failing when asked. */
  async fetch(request, env, exec): Promise<Response> {
    const variant = variantEnv(env, request.headers.get(VARIANT_HEADER));
    const served = request.headers.get(FAIL_PUBLISH_HEADER) === "1" ? failingPublishEnv(variant) : variant;
    if (request.headers.get(COUNT_HEADER) !== "1") return worker.fetch(request, served, exec);
    const counting = countingEnv(served);
    const res = await worker.fetch(request, counting.env, exec);
    const out = new Response(res.body, res);
    out.headers.set(D1_CALLS_HEADER, String(counting.counts.d1));
    out.headers.set(RATE_LIMIT_CALLS_HEADER, String(counting.counts.rateLimit));
    return out;
  },
} satisfies ExportedHandler<Env>;
