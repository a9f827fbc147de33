/**
 * Bindings and vars of the Worker: the `Env` that `wrangler types` generates from
 * wrangler.toml into worker-configuration.d.ts (`npm run types` rewrites it; `npm run
 * typecheck` and `npm test` fail while it is out of date), plus the one var that
 * wrangler.toml deliberately leaves out.
 *
 * - `DB`: the D1 database (courses, reference data, API key hashes, outbox).
 * - `SCHOOL_HUB`: the SchoolHub Durable Object namespace, one object per school
 *   (`idFromName(schoolId)`).
 * - `WEBHOOK_COURIER`: the WebhookCourier namespace, one object per webhook registration
 *   (`idFromName(webhookId)`), which sends the hub's attempts from its own I/O context.
 * - `WEBHOOK_*`: deployment settings of API.md § "Deployment settings" (strings; the
 *   parsers fall back to the defaults on a malformed value).
 * - `ASSETS`: the static assets (`dist/assets/`: the Scalar bundle of GET /docs, the portal).
 *   Requests for an existing asset are answered before the Worker runs, except under /portal
 *   (`run_worker_first`), which src/portal/serve.ts reads through this binding.
 * - `BENCH_FLOOR`: `"true"` enables `GET /__bench/floor` (benchmark only; absent by default,
 *   set with `wrangler dev --var BENCH_FLOOR:true` by `npm run bench`, never deployed).
 *
 * `globalThis.Env` is the generated global interface, not `Cloudflare.Env`: the tests add
 * their own bindings (TEST_MIGRATIONS) to `Cloudflare.Env`, and the Worker must not see them.
 */
export interface Env extends globalThis.Env {
  BENCH_FLOOR?: string;
}
