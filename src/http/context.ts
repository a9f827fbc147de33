import { mintId } from "../lib/ids";
import type { Scope } from "../lib/scopes";

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
  /** Whether read-only portal tokens may call it though it is not a GET (its declaration's `readOnlyTokens`). */
  readOnlyTokens = false;
  /** Whether it takes portal links' tokens, and no other portal token (its declaration's `portalLinks`: the redeem). */
  portalLinks = false;
  /**
   * The scopes the operation being served needs (its declaration's `scopes`, set by the
   * router; src/http/auth.ts `needScopes` adds those a request needs beyond them).
   */
  scopesNeeded: Scope[] = [];
  /**
   * The request credential's scopes once it is verified (src/http/auth.ts): an API key's, or
   * a portal session's (a read-only session's `:read` ones only). GET /v3/school shows them.
   */
  scopes: readonly Scope[] | undefined = undefined;
  /**
   * The scopes of the API key behind the request's credential, once verified: the key's own,
   * or the key that minted the request's portal session. What a new registration records.
   */
  keyScopes: readonly Scope[] | undefined = undefined;
  /** When the request's API key expires (ms since the epoch), once verified; `null`: never, or a portal token. */
  keyExpiresAt: number | null = null;
  /**
   * The portal session of the request's token, once the token is known valid for the
   * operation (src/http/auth.ts): the router sends it back as response headers. `expiresAt`
   * in ms since the epoch; `tokenHash` the SHA-256 hex of the token (the redeem revokes it).
   */
  portalSession: { expiresAt: number; readOnly: boolean; tokenHash: string } | null = null;
  /**
   * The school of the request's credential, set once the credential is verified
   * (src/http/auth.ts): the log line's `schoolId`, and the sign for the rate limit that the
   * credential is valid (src/http/rate-limit.ts).
   */
  schoolId: string | undefined = undefined;
  /**
   * The id of the API key behind the request's credential, once verified (src/http/auth.ts):
   * the key itself, or the key that minted the request's portal session. `null` for a session
   * minted before sessions recorded it. The log line's `keyId`; a new registration's `createdBy`.
   */
  keyId: string | null | undefined = undefined;
  /**
   * Whether the request's credential was verified recently in this isolate (src/http/
   * rate-limit.ts): an operation that would send a body to D1 with the credential's lookup
   * first checks a credential not known yet, alone (docs/reference.md § Conventions).
   */
  credentialRecentlyVerified = false;
  /** The shard of the credential's school (`SHARD_0`, …), once the directory named it (src/http/auth.ts). */
  shard: string | undefined = undefined;
  /** The `operationId` of the operation the router matched (the log line's). */
  operationId: string | undefined = undefined;
  /** An error response's `code` (the log line's). */
  errorCode: string | undefined = undefined;
  /** What a 500 threw (the log line's `error` and `stack`; never sent to the client). */
  internalError: unknown = undefined;

  constructor(incomingId?: string | null) {
    this.requestId = incomingId && /^[A-Za-z0-9_.:-]{1,128}$/.test(incomingId) ? incomingId : mintId("req");
  }

  /** D1 calls under way, and when the first of them started (ms, `performance.now()`). */
  private inFlight = 0;
  private inFlightSince = 0;

  /**
   * Runs one D1 call and counts its latency: calls that overlap (the directory's check and
   * the shard's query sent together) count as one round trip, and their union as `dbMs`.
   */
  async db<T>(run: () => Promise<T>): Promise<T> {
    if (this.inFlight++ === 0) {
      this.inFlightSince = performance.now();
      this.dbRoundTrips += 1;
    }
    try {
      return await run();
    } finally {
      if (--this.inFlight === 0) this.dbMs += performance.now() - this.inFlightSince;
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
