/**
 * The remote D1 databases of wrangler.toml as D1 bindings in Node, over Cloudflare's D1 HTTP
 * API (`POST {base}/accounts/{account}/d1/database/{database_id}/query`, `{ sql, params }` or
 * `{ batch: [...] }`): the driver through which `npm run shards -- status | move --remote`
 * run. It reads what wrangler reads in CI: CLOUDFLARE_API_TOKEN (a token with D1 Edit),
 * CLOUDFLARE_ACCOUNT_ID and, to reach another address (the self-test's stand-in on
 * 127.0.0.1), CLOUDFLARE_API_BASE_URL. It implements the part of `D1Database` those commands
 * use: `prepare().bind()` with `first`, `all` and `run`, and `batch`.
 */
import { d1DatabaseIdsOfConfig } from "./wrangler";

/** Where and as whom the D1 HTTP API is called. */
export interface D1Api {
  /** e.g. `https://api.cloudflare.com/client/v4`, no trailing slash. */
  baseUrl: string;
  accountId: string;
  token: string;
}

/** Cloudflare's API address, as wrangler's default. */
const DEFAULT_BASE_URL = "https://api.cloudflare.com/client/v4";
/** Attempts of one request the API answered 429 (Cloudflare's API allows 1,200 requests per 5 minutes per user). */
const MAX_ATTEMPTS = 6;
/** Longest wait for one request (ms); a D1 query stops after 30 s of its own. */
const REQUEST_TIMEOUT_MS = 120_000;

/**
 * The API settings from the environment.
 *
 * @returns them, or the sentence saying which variable is missing.
 */
export function d1ApiOfEnv(env: NodeJS.ProcessEnv = process.env): D1Api | string {
  const missing = ["CLOUDFLARE_API_TOKEN", "CLOUDFLARE_ACCOUNT_ID"].filter((k) => !env[k]);
  if (missing.length > 0) {
    return `--remote calls the D1 HTTP API and needs ${missing.join(" and ")} in the environment (an API token with D1 Edit, and the account id), as wrangler in CI`;
  }
  return {
    baseUrl: (env.CLOUDFLARE_API_BASE_URL || DEFAULT_BASE_URL).replace(/\/+$/, ""),
    accountId: env.CLOUDFLARE_ACCOUNT_ID!,
    token: env.CLOUDFLARE_API_TOKEN!,
  };
}

/** A failure the API reported (or its absence of an answer), with what it said. */
class D1ApiError extends Error {
  constructor(
    message: string,
    readonly status: number,
  ) {
    super(message);
    this.name = "D1ApiError";
  }
}

/** One statement as the API takes it. */
interface Query {
  sql: string;
  params: string[];
}

/** One statement's answer (the API's `result[i]`). */
interface QueryResult {
  results?: Record<string, unknown>[];
  success?: boolean;
  meta?: Record<string, unknown>;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** One database of the API: sends statements, one request per call (a batch is one request). */
class HttpD1Database {
  constructor(
    private readonly api: D1Api,
    private readonly databaseId: string,
    private readonly binding: string,
  ) {}

  prepare(sql: string): HttpD1Statement {
    return new HttpD1Statement(this, sql, []);
  }

  async batch(statements: HttpD1Statement[]): Promise<D1Result[]> {
    const results = await this.send({ batch: statements.map((s) => s.query) }, statements.length);
    return results.map(toD1Result);
  }

  /**
   * POSTs `body` to the database's `/query`; waits out a 429 (its `Retry-After`, s) up to
   * MAX_ATTEMPTS times. Nothing else is retried: a write may have committed.
   *
   * @throws D1ApiError for any other non-2xx status, `success: false`, or a wrong count of results.
   */
  async send(body: { sql: string; params: string[] } | { batch: Query[] }, expected: number): Promise<QueryResult[]> {
    const url = `${this.api.baseUrl}/accounts/${this.api.accountId}/d1/database/${this.databaseId}/query`;
    for (let attempt = 1; ; attempt++) {
      const res = await fetch(url, {
        method: "POST",
        headers: { authorization: `Bearer ${this.api.token}`, "content-type": "application/json" },
        body: JSON.stringify(body),
        signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
      });
      const text = await res.text();
      if (res.status === 429 && attempt < MAX_ATTEMPTS) {
        // Cloudflare's API blocks a client for 5 minutes past its limit: without a Retry-After, back off to that.
        await sleep((Number(res.headers.get("retry-after")) || Math.min(300, 15 * 2 ** (attempt - 1))) * 1000);
        continue;
      }
      let parsed: { success?: boolean; errors?: { code?: number; message?: string }[]; result?: QueryResult[] } | undefined;
      try {
        parsed = JSON.parse(text);
      } catch {
        parsed = undefined;
      }
      if (!res.ok || parsed?.success !== true) {
        const said = parsed?.errors?.map((e) => `${e.code ?? "?"} ${e.message ?? ""}`.trim()).join("; ") || text.slice(0, 500);
        throw new D1ApiError(`D1 HTTP API, ${this.binding} (${this.databaseId}): ${res.status} ${said}`, res.status);
      }
      if (parsed.result?.length !== expected || parsed.result.some((r) => r.success === false)) {
        throw new D1ApiError(
          `D1 HTTP API, ${this.binding}: ${parsed.result?.length ?? 0} results for ${expected} statements, or one not successful`,
          res.status,
        );
      }
      return parsed.result;
    }
  }
}

const toD1Result = (r: QueryResult): D1Result => ({ results: r.results ?? [], success: true, meta: (r.meta ?? {}) as D1Result["meta"] });

/**
 * One statement and its bound values. The API binds strings only (`params: string[]`), so a
 * value of another type is refused rather than changed (the move binds ids, steps and JSON).
 */
class HttpD1Statement {
  constructor(
    private readonly db: HttpD1Database,
    private readonly sql: string,
    private readonly params: string[],
  ) {}

  get query(): Query {
    return { sql: this.sql, params: this.params };
  }

  /** @throws TypeError for a value that is not a string. */
  bind(...values: unknown[]): HttpD1Statement {
    values.forEach((v, i) => {
      if (typeof v !== "string") throw new TypeError(`the D1 HTTP API binds strings only: ?${i + 1} is a ${v === null ? "null" : typeof v}`);
    });
    return new HttpD1Statement(this.db, this.sql, values as string[]);
  }

  async all<T = Record<string, unknown>>(): Promise<D1Result<T>> {
    const [r] = await this.db.send(this.query, 1);
    return toD1Result(r!) as D1Result<T>;
  }

  run<T = Record<string, unknown>>(): Promise<D1Result<T>> {
    return this.all<T>();
  }

  async first<T = Record<string, unknown>>(column?: string): Promise<T | null> {
    const row = (await this.all<Record<string, unknown>>()).results[0];
    if (row === undefined) return null;
    return (column === undefined ? row : row[column]) as T;
  }
}

/**
 * Every D1 database of wrangler.toml (binding → database, by its `database_id`) over the D1
 * HTTP API. Nothing is opened: each statement is one request.
 */
export async function openRemoteD1(api: D1Api): Promise<{ databases: Record<string, D1Database>; dispose(): Promise<void> }> {
  const ids = await d1DatabaseIdsOfConfig("remote");
  // The commands use only prepare/bind/first/all/run and batch, which this class implements.
  const databases = Object.fromEntries(Object.entries(ids).map(([b, id]) => [b, new HttpD1Database(api, id, b) as unknown as D1Database]));
  return { databases, dispose: async () => {} };
}
