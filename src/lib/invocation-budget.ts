/**
 * What one Worker invocation (a request, a cron run, an alarm) may send, by the account's
 * Workers plan (`WORKERS_PLAN`), and a budget that counts it and says whether more fits
 * (docs/architecture.md § The outbox: the cron sweep stops at its budget, never at the limit).
 */

/** The account's Workers plan, as the `WORKERS_PLAN` var names it. */
export type WorkersPlan = "paid" | "free";

/** Per-invocation counts: D1 queries (each statement, a batch's counted one by one) and subrequests. */
export interface InvocationCaps {
  queries: number;
  subrequests: number;
}

/**
 * Cloudflare's documented limits per invocation. D1 queries: 1,000 on Workers Paid, 50 on
 * Free ("Queries per Worker invocation", https://developers.cloudflare.com/d1/platform/limits/).
 * Subrequests: 10,000 on Paid, 50 on Free ("Subrequests",
 * https://developers.cloudflare.com/workers/platform/limits/). The D1 page refers its count to
 * the subrequest limits, and Durable Object calls leave the invocation as well: both are
 * counted as subrequests here, the conservative reading.
 */
const PLAN_LIMITS: Readonly<Record<WorkersPlan, InvocationCaps>> = {
  paid: { queries: 1_000, subrequests: 10_000 },
  free: { queries: 50, subrequests: 50 },
};

/**
 * The budget an invocation keeps to: 90 % of each limit on Paid, 40 of 50 on Free. Work is
 * reserved at its worst case before it starts, so the count never passes the budget; the
 * margin is for what the count cannot see (a binding's own retry of a failed round trip, a
 * platform that counts a batch or a session differently from the documentation).
 */
const INVOCATION_BUDGETS: Readonly<Record<WorkersPlan, InvocationCaps>> = {
  paid: { queries: PLAN_LIMITS.paid.queries - 100, subrequests: PLAN_LIMITS.paid.subrequests - 1_000 },
  free: { queries: PLAN_LIMITS.free.queries - 10, subrequests: PLAN_LIMITS.free.subrequests - 10 },
};

/**
 * The plan a `WORKERS_PLAN` value names; "paid" when unset.
 *
 * @throws Error for any other value (a deployment's mistake, better loud than over its limits).
 */
export function workersPlan(value: string | undefined): WorkersPlan {
  if (value === undefined || value === "paid") return "paid";
  if (value === "free") return "free";
  throw new Error(`WORKERS_PLAN must be "paid" or "free", not ${JSON.stringify(value)}`);
}

/** Work held against a budget until it ends (`release`). */
export interface Reservation {
  release(): void;
}

/**
 * The D1 queries and calls (Durable Object calls, fetches) of one invocation: counted as they
 * are sent (`countQueries`, `countCall`) and reserved before a piece of work starts
 * (`reserve`), so that concurrent work cannot together pass `caps`. A query counts as a
 * subrequest too (`PLAN_LIMITS`).
 */
export class InvocationBudget {
  queries = 0;
  calls = 0;
  private heldQueries = 0;
  private heldSubrequests = 0;

  constructor(readonly caps: InvocationCaps) {}

  /** The budget of `plan` (`INVOCATION_BUDGETS`). */
  static of(plan: WorkersPlan): InvocationBudget {
    return new InvocationBudget(INVOCATION_BUDGETS[plan]);
  }

  /** Subrequests sent: queries and calls. */
  get subrequests(): number {
    return this.queries + this.calls;
  }

  /** Counts `n` D1 statements sent. */
  countQueries(n: number): void {
    this.queries += n;
  }

  /** Counts one call sent. */
  countCall(): void {
    this.calls += 1;
  }

  /**
   * Holds room for at most `queries` statements and `calls` calls: `null` when what is sent and
   * held already leaves no such room. What the work then sends is counted as well while it is
   * held (an over-estimate until `release`, never an under-estimate).
   */
  reserve(queries: number, calls: number): Reservation | null {
    const q = this.queries + this.heldQueries + queries;
    const s = this.subrequests + this.heldSubrequests + queries + calls;
    if (q > this.caps.queries || s > this.caps.subrequests) return null;
    this.heldQueries += queries;
    this.heldSubrequests += queries + calls;
    let held = true;
    return {
      release: () => {
        if (!held) return;
        held = false;
        this.heldQueries -= queries;
        this.heldSubrequests -= queries + calls;
      },
    };
  }
}

/**
 * Rows one prune statement of the cron deletes at most (idempotency keys, published outbox
 * rows, portal sessions; each through its index): one statement
 * per table and database a run, so a prune's cost is bounded whatever has piled up, and
 * 5,000 a minute (7.2 million a day) outpaces what a shard or the directory writes.
 */
export const PRUNE_ROWS = 5_000;
