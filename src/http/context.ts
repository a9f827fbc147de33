import { mintId } from "../lib/ids";

/**
 * Wraps each D1 round trip of a piece of work: a request's `RequestContext.db` (so that
 * `Server-Timing` counts and times every one), or `untimed` outside a request.
 */
export type D1Timer = <T>(run: () => Promise<T>) => Promise<T>;

/** The identity `D1Timer` (the cron sweep, scripts, tests). */
export const untimed: D1Timer = (run) => run();

/**
 * Per-request context: the request id (`x-request-id`) and the time spent in D1, reported
 * in `Server-Timing` as `db;dur=<ms>` beside `total;dur=<ms>` (docs/reference.md § "Conventions").
 */
export class RequestContext {
  readonly requestId: string;
  readonly startedAt = performance.now();
  /** ms spent waiting on D1 in this request. */
  dbMs = 0;
  /** Number of D1 round trips of this request (the benchmark checks it is 1 for reads). */
  dbRoundTrips = 0;
  /**
   * Whether the operation being served takes portal session tokens (its declaration's
   * `portalTokens`, set by the router before the handler runs; API keys only by default).
   */
  portalTokens = false;
  /**
   * The portal session of the request's token, once the token is known valid for the
   * operation (src/http/auth.ts): the router sends it back as response headers. `expiresAt`
   * in ms since the epoch.
   */
  portalSession: { expiresAt: number; readOnly: boolean } | null = null;
  /**
   * The school of the request's credential, set once the credential is verified
   * (src/http/auth.ts): the log line's `schoolId`, and the sign for the rate limit that the
   * credential is valid (src/http/rate-limit.ts).
   */
  schoolId: string | undefined = undefined;
  /** The `operationId` of the operation the router matched (the log line's). */
  operationId: string | undefined = undefined;
  /** What a 500 threw (the log line's `error` and `stack`; never sent to the client). */
  internalError: unknown = undefined;

  constructor(incomingId?: string | null) {
    this.requestId = incomingId && /^[A-Za-z0-9_.:-]{1,128}$/.test(incomingId) ? incomingId : mintId("req");
  }

  /** Runs one D1 round trip and adds its duration to `dbMs`. */
  async db<T>(run: () => Promise<T>): Promise<T> {
    const t0 = performance.now();
    try {
      return await run();
    } finally {
      this.dbMs += performance.now() - t0;
      this.dbRoundTrips += 1;
    }
  }

  /** ms since the request arrived. */
  elapsedMs(): number {
    return performance.now() - this.startedAt;
  }

  /** The `Server-Timing` header value. */
  serverTiming(): string {
    const total = this.elapsedMs();
    return `db;dur=${this.dbMs.toFixed(1)};desc="D1 round trips: ${this.dbRoundTrips}", total;dur=${total.toFixed(1)}`;
  }
}
