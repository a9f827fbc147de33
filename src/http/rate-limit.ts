/**
 * The rate limit (API.md § "Conventions", § "Deployment settings"): the Workers
 * rate-limiting binding `RATE_LIMITER` counts requests per credential — API key or portal
 * session token — (its SHA-256), and per client IP (`cf-connecting-ip`) for requests without
 * a valid one, so that guessing credentials is throttled too. Beyond the limit: 429 RATE_LIMITED with `Retry-After`. While enabled, every
 * response carries `RateLimit-Policy: "default";q=<limit>;w=60`.
 *
 * No D1 round trip: a well-formed credential is counted by its hash before anyone knows
 * whether it exists; a request that then answers 401 is counted against its IP as well (one
 * more call to the binding, on the 401 path only).
 */

import { sha256Hex } from "../lib/crypto";
import { bearerCredential } from "./auth";
import { ApiError } from "./errors";

/** The window of the binding's `simple.period` (s); the contract's `w`. */
export const RATE_LIMIT_WINDOW_S = 60;

/** The bindings and vars the limiter reads (wrangler.toml). */
export interface RateLimitEnv {
  RATE_LIMITER: RateLimit;
  /** `"false"` turns the limiter off (benchmarks, bulk local work). */
  RATE_LIMIT_ENABLED: string;
  /** The binding's `simple.limit`, repeated for `RateLimit-Policy` (the binding does not expose it). */
  RATE_LIMIT_QUOTA: string;
}

const rateLimited = (subject: string) =>
  new ApiError("RATE_LIMITED", `Too many requests for this ${subject}; retry after ${RATE_LIMIT_WINDOW_S} seconds (see Retry-After).`, undefined, {
    "retry-after": String(RATE_LIMIT_WINDOW_S),
  });

/**
 * Runs `next` under the rate limit.
 *
 * @returns `next`'s response with `RateLimit-Policy` set (when enabled).
 * @throws ApiError 429 RATE_LIMITED (with `retry-after` in its headers: the window, in
 *   seconds, an upper bound of the wait) when the credential or IP is over its limit.
 */
export async function withRateLimit(request: Request, env: RateLimitEnv, next: () => Promise<Response>): Promise<Response> {
  if (env.RATE_LIMIT_ENABLED === "false") return next();
  const policy = `"default";q=${env.RATE_LIMIT_QUOTA};w=${RATE_LIMIT_WINDOW_S}`;
  const ip = request.headers.get("cf-connecting-ip") ?? "unknown";
  const key = bearerCredential(request);
  try {
    const subject = key === undefined ? "client IP" : key.startsWith("ps_") ? "portal session" : "API key";
    const counted = key === undefined ? `ip:${ip}` : `key:${await sha256Hex(key)}`;
    if (!(await env.RATE_LIMITER.limit({ key: counted })).success) throw rateLimited(subject);
    const res = await next();
    // An unknown credential counts against the IP too: guessing them is throttled.
    if (res.status === 401 && key !== undefined && !(await env.RATE_LIMITER.limit({ key: `ip:${ip}` })).success) throw rateLimited("client IP");
    const out = new Response(res.body, res);
    out.headers.set("ratelimit-policy", policy);
    return out;
  } catch (err) {
    throw err instanceof ApiError ? err.withHeaders({ "ratelimit-policy": policy }) : err;
  }
}
