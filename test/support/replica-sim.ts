/**
 * A simulated D1 with read replication, for the tests (the local runtime has no replica lag,
 * so read-your-writes through bookmarks could not fail there), after Cloudflare's D1 docs
 * ("Global read replication", "Sessions API"): `first-primary` starts on the primary,
 * `first-unconstrained` on any replica, a bookmark on a replica at least that fresh; a
 * session never sees older than it saw; writes run on the primary; queries outside the
 * Sessions API go to the primary. Replication is a log of the primary's write batches
 * replayed in order onto a second database (`TEST_REPLICA`): the replica stays stale until a
 * read needs newer (or `catchUp()`), lag at its worst. Bookmarks are `sim-<position>`.
 */

/** One statement as the code bound it. */
interface Bound {
  sql: string;
  params: unknown[];
}

const READ = /^\s*(SELECT|WITH|PRAGMA|EXPLAIN)\b/i;
const isWrite = (s: Bound) => !READ.test(s.sql);

const formatBookmark = (pos: number) => `sim-${pos.toString(16).padStart(12, "0")}`;
const parseBookmark = (b: string) => (/^sim-[0-9a-f]{12}$/.test(b) ? Number.parseInt(b.slice(4), 16) : 0);

/** The primary, the replica and the replication log. */
export class ReplicatedD1 {
  /** Write batches committed on the primary, in order; the replica has applied `applied` of them. */
  private readonly log: Bound[][] = [];
  private applied = 0;
  /** Queries served by each database (the tests assert where reads went). */
  readonly served = { primary: 0, replica: 0 };

  constructor(
    readonly primary: D1Database,
    readonly replica: D1Database,
  ) {}

  /** The primary's position (write batches committed). */
  get primaryPosition(): number {
    return this.log.length;
  }

  /** Replays the log onto the replica up to `pos` (default: everything). */
  async catchUp(pos = this.log.length): Promise<void> {
    while (this.applied < pos) {
      const batch = this.log[this.applied]!;
      await this.replica.batch(batch.map((s) => this.replica.prepare(s.sql).bind(...s.params)));
      this.applied++;
    }
  }

  /** Runs statements on the primary (logging the writes) or on the replica; returns the results and the position seen. */
  async run(stmts: Bound[], target: "primary" | "replica", atLeast: number): Promise<{ results: D1Result[]; pos: number }> {
    const db = target === "primary" ? this.primary : this.replica;
    if (target === "replica") await this.catchUp(Math.max(atLeast, this.applied));
    this.served[target]++;
    const results = await db.batch(stmts.map((s) => db.prepare(s.sql).bind(...s.params)));
    if (target === "primary") {
      const writes = stmts.filter(isWrite);
      if (writes.length > 0) this.log.push(writes);
      return { results, pos: this.log.length };
    }
    return { results, pos: this.applied };
  }

  /** The binding as the Worker sees it. */
  binding(): D1Database {
    const direct = { kind: "direct" as const, pos: 0 };
    return {
      prepare: (sql: string) => new SimStatement(this, direct, { sql, params: [] }),
      batch: async (stmts: SimStatement[]) =>
        (
          await this.run(
            stmts.map((s) => s.bound),
            "primary",
            0,
          )
        ).results,
      withSession: (constraintOrBookmark?: string) => new SimSession(this, constraintOrBookmark ?? "first-unconstrained"),
      exec: () => {
        throw new Error("exec is not simulated");
      },
      dump: () => {
        throw new Error("dump is not simulated");
      },
    } as unknown as D1Database;
  }
}

/** Where a statement runs: a session, or the binding itself (primary). */
type Route = SimSession | { kind: "direct"; pos: number };

class SimStatement {
  constructor(
    private readonly sim: ReplicatedD1,
    private readonly route: Route,
    readonly bound: Bound,
  ) {}

  bind(...params: unknown[]): SimStatement {
    return new SimStatement(this.sim, this.route, { sql: this.bound.sql, params });
  }

  private async one(): Promise<D1Result> {
    const [r] = this.route instanceof SimSession ? await this.route.execute([this.bound]) : (await this.sim.run([this.bound], "primary", 0)).results;
    return r!;
  }

  async all<T>(): Promise<D1Result<T>> {
    return (await this.one()) as D1Result<T>;
  }
  async run<T>(): Promise<D1Result<T>> {
    return (await this.one()) as D1Result<T>;
  }
  async first<T>(column?: string): Promise<T | null> {
    const row = (await this.one()).results[0] as Record<string, unknown> | undefined;
    if (!row) return null;
    return (column === undefined ? row : row[column]) as T;
  }
  async raw<T>(): Promise<T[]> {
    return (await this.one()).results.map((row) => Object.values(row as Record<string, unknown>)) as T[];
  }
}

/** A simulated `D1DatabaseSession`. */
class SimSession {
  readonly kind = "session" as const;
  private pos: number;
  private started = false;

  constructor(
    private readonly sim: ReplicatedD1,
    private readonly constraint: string,
  ) {
    this.pos = constraint.startsWith("first-") ? 0 : parseBookmark(constraint);
  }

  async execute(stmts: Bound[]): Promise<D1Result[]> {
    const toPrimary = stmts.some(isWrite) || (this.constraint === "first-primary" && !this.started);
    const { results, pos } = await this.sim.run(stmts, toPrimary ? "primary" : "replica", this.pos);
    this.started = true;
    this.pos = Math.max(this.pos, pos);
    return results;
  }

  prepare(sql: string): SimStatement {
    return new SimStatement(this.sim, this, { sql, params: [] });
  }

  async batch(stmts: SimStatement[]): Promise<D1Result[]> {
    return this.execute(stmts.map((s) => s.bound));
  }

  getBookmark(): string | null {
    return this.started || !this.constraint.startsWith("first-") ? formatBookmark(this.pos) : null;
  }
}
