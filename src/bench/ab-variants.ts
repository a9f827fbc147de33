/**
 * The A/B of the sessions and the rate limiter (their cost on a read), served by the
 * benchmark entry (src/bench/entry.ts) only: the Worker as deployed (A: D1 sessions and
 * bookmarks, rate limiter on) against the same Worker without those steps (B), in one
 * isolate, chosen per request, and the binding-level counts of each request's D1 and
 * rate-limiter calls. B swaps the environment, not a code path: its D1 bindings hand back the
 * binding itself from `withSession()` (no bookmark) and `RATE_LIMIT_ENABLED` is `"false"`.
 * S (A's sessions, no limiter) and M (the limiter's counters in the isolate, as on
 * Cloudflare: `isolateLimiter`) tell the two steps' costs apart. C, the baseline of the
 * record's A/B, is A with the flat concat() record production refuses (src/bench/concat-record.ts).
 */

import { shardsOf } from "../db/shards";
import { flatRecordD1 } from "./concat-record";

/**
 * Request header choosing the variant: `b` serves B, `s` the sessions of A without its rate
 * limiter (to tell the two steps' costs apart), `m` A with the limiter's counters in the
 * isolate (`isolateLimiter`), `c` A with the flat concat() record, anything else (or none) A.
 */
export const VARIANT_HEADER = "x-bench-variant";
/** Request header asking for the counts (`1`): the response then carries the two below. */
export const COUNT_HEADER = "x-bench-count";
/** Response header: D1 calls of the request, counted at the binding (batch, exec, dump, and each first/all/run/raw). */
export const D1_CALLS_HEADER = "x-bench-d1-calls";
/** Response header: calls to `RATE_LIMITER.limit()` of the request. */
export const RATE_LIMIT_CALLS_HEADER = "x-bench-ratelimit-calls";

/** Calls counted by `countingEnv` during one request. */
export interface CallCounts {
  /** Round trips to D1: one per `batch`, `exec`, `dump`, and per `first`/`all`/`run`/`raw` of a statement. */
  d1: number;
  /** Calls to the rate-limiting binding's `limit()`. */
  rateLimit: number;
}

/**
 * The session of B: the binding itself (D1 without a session, every query on the primary),
 * with no bookmark to report. Only `prepare` and `batch` are used on a session
 * (src/db/client.ts).
 */
function sessionOf(d1: D1Database): D1DatabaseSession {
  return { prepare: (sql) => d1.prepare(sql), batch: (statements) => d1.batch(statements), getBookmark: () => null };
}

const sessionless = new WeakMap<D1Database, D1Database>();

/**
 * A view of `d1` without the Sessions API: `withSession(anything)` returns the binding itself
 * as the session (`getBookmark()` → null); every other method is the binding's. Built once
 * per binding, so that B allocates no more per request than A.
 */
export function sessionlessD1(d1: D1Database): D1Database {
  let view = sessionless.get(d1);
  if (!view) {
    const session = sessionOf(d1);
    view = {
      prepare: (sql) => d1.prepare(sql),
      batch: (statements) => d1.batch(statements),
      exec: (sql) => d1.exec(sql),
      dump: () => d1.dump(),
      withSession: () => session,
    } satisfies D1Database;
    sessionless.set(d1, view);
  }
  return view;
}

/**
 * A rate limiter whose counters live in the isolate (fixed windows of `periodS`): what
 * `limit()` costs on Cloudflare, where "the underlying counters are cached on the same
 * machine that your Worker runs in" and `limit()` waits on no network request (Workers docs,
 * "Rate Limiting" § Performance). Locally the binding is a call to a Durable Object of
 * miniflare's (node_modules/miniflare/dist/src/workers/ratelimit/) instead.
 */
export function isolateLimiter(limit: number, periodS: number, now: () => number = Date.now): RateLimit {
  const counts = new Map<string, number>();
  let window = -1;
  return {
    async limit({ key }) {
      const w = Math.floor(now() / (periodS * 1000));
      if (w !== window) {
        window = w;
        counts.clear();
      }
      const n = counts.get(key) ?? 0;
      if (n >= limit) return { success: false };
      counts.set(key, n + 1);
      return { success: true };
    },
  };
}

const variants = { b: new WeakMap<Env, Env>(), s: new WeakMap<Env, Env>(), m: new WeakMap<Env, Env>(), c: new WeakMap<Env, Env>() };

/** Every D1 binding of `env` (the directory and the shards), each replaced by `wrap`'s. */
function eachD1(env: Env, wrap: (d1: D1Database) => D1Database): Partial<Env> {
  return Object.fromEntries([["DIRECTORY", wrap(env.DIRECTORY)], ...shardsOf(env).map(({ binding, d1 }) => [binding, wrap(d1)])]);
}

/** The environment of variant `v` of `env` (not A). */
function build(env: Env, v: keyof typeof variants): Env {
  if (v === "c") return { ...env, ...eachD1(env, flatRecordD1) };
  if (v === "m") return { ...env, RATE_LIMITER: isolateLimiter(Number(env.RATE_LIMIT_QUOTA), 60) };
  return { ...env, RATE_LIMIT_ENABLED: "false", ...(v === "b" ? eachD1(env, sessionlessD1) : {}) };
}

/**
 * The environment of a variant (one object per `env` and variant): `b`, B (a session-less
 * directory and shards, the rate limiter off); `s`, the rate limiter off only; `m`, the rate limiter's counters
 * in the isolate; `c`, D1 bindings that send the flat concat() record; anything else, `env` itself (A).
 */
export function variantEnv(env: Env, variant: string | null): Env {
  if (variant !== "b" && variant !== "s" && variant !== "m" && variant !== "c") return env;
  let out = variants[variant].get(env);
  if (!out) {
    out = build(env, variant);
    variants[variant].set(env, out);
  }
  return out;
}

/** A prepared statement that counts its executions; `bind` keeps counting. */
class CountedStatement {
  constructor(
    readonly real: D1PreparedStatement,
    private readonly counts: CallCounts,
  ) {}
  bind(...values: unknown[]): CountedStatement {
    return new CountedStatement(this.real.bind(...values), this.counts);
  }
  first(column?: string): Promise<unknown> {
    this.counts.d1 += 1;
    return column === undefined ? this.real.first() : this.real.first(column);
  }
  all(): Promise<D1Result> {
    this.counts.d1 += 1;
    return this.real.all();
  }
  run(): Promise<D1Result> {
    this.counts.d1 += 1;
    return this.real.run();
  }
  raw(options?: { columnNames?: boolean }): Promise<unknown[]> {
    this.counts.d1 += 1;
    return options?.columnNames ? this.real.raw({ columnNames: true }) : this.real.raw();
  }
}

const unwrap = (statements: D1PreparedStatement[]) => statements.map((s) => (s instanceof CountedStatement ? s.real : s));

/** `prepare` and `batch` of a database or session, counted. */
function countedQueries(target: D1Database | D1DatabaseSession, counts: CallCounts) {
  return {
    prepare: (sql: string) => new CountedStatement(target.prepare(sql), counts) as unknown as D1PreparedStatement,
    batch: <T>(statements: D1PreparedStatement[]) => {
      counts.d1 += 1;
      return target.batch<T>(unwrap(statements));
    },
  };
}

/**
 * `env` with its D1 bindings (and every session opened on them) and `RATE_LIMITER` counting their
 * calls into the returned `counts`: what a request really asks of D1 and of the limiter,
 * whatever the code's own `Server-Timing` count (src/http/context.ts) says. Statements are
 * wrapped, and unwrapped again before they reach the real `batch`.
 *
 * @param counts where the calls are counted (default: new counters at 0).
 * @returns a new environment for one request, and its counters.
 */
export function countingEnv(env: Env, counts: CallCounts = { d1: 0, rateLimit: 0 }): { env: Env; counts: CallCounts } {
  const counted = (d1: D1Database) =>
    ({
      ...countedQueries(d1, counts),
      exec: (sql: string) => {
        counts.d1 += 1;
        return d1.exec(sql);
      },
      dump: () => {
        counts.d1 += 1;
        return d1.dump();
      },
      withSession: (constraintOrBookmark?: string) => {
        const session = d1.withSession(constraintOrBookmark);
        return { ...countedQueries(session, counts), getBookmark: () => session.getBookmark() };
      },
    }) as D1Database;
  const limiter: RateLimit = {
    limit: (options) => {
      counts.rateLimit += 1;
      return env.RATE_LIMITER.limit(options);
    },
  };
  return { env: { ...env, ...eachD1(env, counted), RATE_LIMITER: limiter }, counts };
}
