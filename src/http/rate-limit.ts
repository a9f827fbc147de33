/**
 * The rate limit (docs/reference.md § Rate limit): `RATE_LIMITER` counts each valid credential
 * by its SHA-256 (a portal session also on its school's `RATE_LIMITER_PORTAL_SCHOOL`), every
 * other request by its client IP (`cf-connecting-ip`; IPv6 by its /64, and its /48 on
 * `RATE_LIMITER_PREFIX48`), each per Cloudflare location. Beyond: 429 RATE_LIMITED with
 * `Retry-After`; while enabled, every response carries `RateLimit-Policy`. A credential this
 * isolate has not recently verified is counted against the client IP before the request runs,
 * so guessing keys costs no D1 read; a verified one against itself, so a valid client keeps
 * working from an IP that others exhaust (why: docs/choices.md § Rate limit).
 */

import { BoundedMap } from "../lib/bounded-map";
import { clientNetwork, clientSubject } from "../lib/client-ip";
import { sha256Hex } from "../lib/crypto";
import { bearerCredential, credentialKind } from "./auth";
import type { RequestContext } from "./context";
import { ApiError } from "./errors";

/** The window of the binding's `simple.period` (s); the contract's `w`. */
export const RATE_LIMIT_WINDOW_S = 60;

/** The bindings and vars the limiter reads (wrangler.toml). */
export interface RateLimitEnv {
  RATE_LIMITER: RateLimit;
  /**
   * The IPv6 /48 counter (`ip48:<prefix>`): every request charged to an IPv6 client's /64 is
   * charged to its /48 as well, at 16 times the /64's limit (wrangler.toml).
   */
  RATE_LIMITER_PREFIX48: RateLimit;
  /**
   * The counter of a school's portal sessions together (`portal:<school id>`): every request
   * of a session is charged to its own counter and to this one, at 4 times a session's limit
   * (wrangler.toml).
   */
  RATE_LIMITER_PORTAL_SCHOOL: RateLimit;
  /** `"false"` turns the limiter off (benchmarks, bulk local work). */
  RATE_LIMIT_ENABLED: string;
  /** The binding's `simple.limit`, repeated for `RateLimit-Policy` (the binding does not expose it). */
  RATE_LIMIT_QUOTA: string;
}

/**
 * Hashes of credentials verified recently in this isolate (SHA-256 hex of the bearer token,
 * whatever its kind: API key or portal token). Bounded: at most `maxEntries` (the least
 * recently verified leaves first) and `maxAgeMs` since the last verification. Not a cache of
 * the verdict itself: every request still looks its credential up (a revoked key is 401 at
 * once); this only decides which counter a request is charged to before that lookup.
 */
export class RecentlyVerified {
  /** Hash → ms of the last verification and the counter it is charged to, the least recently verified first. */
  private readonly verifiedAt: BoundedMap<string, { at: number; counter: string }>;

  constructor(
    maxEntries: number,
    private readonly maxAgeMs: number,
    private readonly now: () => number = Date.now,
  ) {
    this.verifiedAt = new BoundedMap(maxEntries);
  }

  /** Whether `hash` was verified less than `maxAgeMs` ago (and is still kept). */
  has(hash: string): boolean {
    return this.counterOf(hash) !== undefined;
  }

  /** The counter `hash` is charged to, if it was verified less than `maxAgeMs` ago; else `undefined`. */
  counterOf(hash: string): string | undefined {
    const entry = this.verifiedAt.get(hash);
    if (entry === undefined) return undefined;
    if (this.now() - entry.at < this.maxAgeMs) return entry.counter;
    this.verifiedAt.delete(hash);
    return undefined;
  }

  /**
   * Records a verification of `hash` now, charged from then on to `counter` (default: its own,
   * `cred:<hash>`), evicting the least recently verified beyond `maxEntries`.
   */
  remember(hash: string, counter = `cred:${hash}`): void {
    this.verifiedAt.set(hash, { at: this.now(), counter });
  }

  /** Drops `hash` (its lookup just failed: unknown, revoked or expired). */
  forget(hash: string): void {
    this.verifiedAt.delete(hash);
  }

  /** Number of hashes kept (tests). */
  get size(): number {
    return this.verifiedAt.size;
  }
}

/**
 * This isolate's verified credentials: 10,000 hashes (about 1 MB) and 10 minutes. An active
 * client is verified again by each of its requests, so it stays; the age bounds how long an
 * idle or revoked credential keeps its own counter here.
 */
const recentlyVerified = new RecentlyVerified(10_000, 10 * 60_000);

const rateLimited = (subject: string) =>
  new ApiError("RATE_LIMITED", `Too many requests for this ${subject}; retry after ${RATE_LIMIT_WINDOW_S} seconds (see Retry-After).`, undefined, {
    "retry-after": String(RATE_LIMIT_WINDOW_S),
  });

/**
 * The counter a verified credential is remembered with: its own (`cred:<sha256>`) for an API
 * key, its school's (`portal:<school id>`) for a portal session token, which is charged to its
 * own `cred:<sha256>` as well (`chargeVerified`).
 */
const counterOf = (credential: string, hash: string, rc: RequestContext) =>
  credentialKind(credential) === "portal" ? `portal:${rc.schoolId}` : `cred:${hash}`;

/**
 * Runs `next` under the rate limit.
 *
 * A credential verified recently is charged to its counter (`counterOf`); any other request
 * to its client's (`ip:<IPv4 address or IPv6 /64>`, and for IPv6 `ip48:<its /48>` too),
 * before `next` runs. After `next`: a
 * credential its request verified (`rc.schoolId` set) is remembered, and charged to its own
 * counter too when it was not yet (so that each counter's 600 per 60 s counts all its
 * requests; that request itself is not refused after the fact); a credential that ended 401
 * is forgotten, and charged to the client when it had been charged to its own counter.
 * Whether the credential was verified recently is also told to `next` in
 * `rc.credentialRecentlyVerified` (kept even when the limiter is off).
 *
 * @param verified the set of recently verified credentials (this isolate's by default).
 * @returns `next`'s response with `RateLimit-Policy` set (when enabled).
 * @throws ApiError 429 RATE_LIMITED (with `retry-after` in its headers: the window, in
 *   seconds, an upper bound of the wait) when the credential or client is over its limit.
 */
export async function withRateLimit(
  request: Request,
  env: RateLimitEnv,
  rc: RequestContext,
  next: () => Promise<Response>,
  verified: RecentlyVerified = recentlyVerified,
): Promise<Response> {
  const credential = bearerCredential(request);
  const hash = credential === undefined ? undefined : await sha256Hex(credential);
  const known = hash === undefined ? undefined : verified.counterOf(hash);
  rc.credentialRecentlyVerified = known !== undefined;
  const enabled = env.RATE_LIMIT_ENABLED !== "false";
  const policy = `"default";q=${env.RATE_LIMIT_QUOTA};w=${RATE_LIMIT_WINDOW_S}`;
  const address = request.headers.get("cf-connecting-ip");
  const clientKey = `ip:${clientSubject(address)}`;
  const network = clientNetwork(address);
  // A verified credential's counters: its own, and for a portal token its school's too (both
  // charged; either over refuses), so that one session cannot exhaust the others' room.
  const chargeVerified = async (counter: string, credentialHash: string): Promise<boolean> => {
    if (!enabled) return false;
    if (!counter.startsWith("portal:")) return !(await env.RATE_LIMITER.limit({ key: counter })).success;
    const [own, school] = await Promise.all([
      env.RATE_LIMITER.limit({ key: `cred:${credentialHash}` }),
      env.RATE_LIMITER_PORTAL_SCHOOL.limit({ key: counter }),
    ]);
    return !own.success || !school.success;
  };
  // The client's counters: its address (IPv6: /64) and, for IPv6, its /48. Both are charged
  // (no short cut), and the stricter decides.
  const clientLimited = async (): Promise<string | undefined> => {
    if (!enabled) return undefined;
    const [own, wide] = await Promise.all([
      env.RATE_LIMITER.limit({ key: clientKey }),
      network === undefined ? { success: true } : env.RATE_LIMITER_PREFIX48.limit({ key: `ip48:${network}` }),
    ]);
    return !own.success ? "client IP" : !wide.success ? "client network (IPv6 /48)" : undefined;
  };
  try {
    if (known !== undefined && hash !== undefined) {
      if (await chargeVerified(known, hash)) throw rateLimited("credential");
    } else {
      const over = await clientLimited();
      if (over !== undefined) throw rateLimited(over);
    }
    const res = await next();
    if (credential !== undefined && hash !== undefined && rc.schoolId !== undefined) {
      const own = counterOf(credential, hash, rc);
      verified.remember(hash, own);
      if (known === undefined) await chargeVerified(own, hash);
    } else if (hash !== undefined && res.status === 401) {
      verified.forget(hash);
      if (known !== undefined) {
        const over = await clientLimited();
        if (over !== undefined) throw rateLimited(over);
      }
    }
    if (!enabled) return res;
    const out = new Response(res.body, res);
    out.headers.set("ratelimit-policy", policy);
    return out;
  } catch (err) {
    throw err instanceof ApiError && enabled ? err.withHeaders({ "ratelimit-policy": policy }) : err;
  }
}
