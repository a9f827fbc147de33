/**
 * GET /__bench/floor — the benchmark's floor: one trivial D1 query (`SELECT 1`) in one
 * round trip, through the same router, envelope and headers as every route. Exists only when
 * the Worker runs with `BENCH_FLOOR=true` (`npm run bench` sets it); otherwise it answers
 * 404 NOT_FOUND like any unknown path.
 */
import type { IRequest } from "itty-router";
import type { Env } from "../env";
import type { RequestContext } from "./context";
import { errors } from "./errors";
import { success } from "./respond";

/** The floor handler (see the module comment). */
export async function benchFloor(req: IRequest, env: Env, _exec: ExecutionContext, rc: RequestContext): Promise<Response> {
  if (env.BENCH_FLOOR !== "true") throw errors.notFound(new URL(req.url).pathname);
  const row = await rc.db(() => env.DB.prepare("SELECT 1 AS one").first<{ one: number }>());
  return success(row);
}
