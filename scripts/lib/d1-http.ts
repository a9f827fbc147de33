/**
 * The remote D1 databases of wrangler.toml as D1 bindings in Node, through Cloudflare's SDK
 * (`cloudflare`: `client.d1.database.query`, `POST {base}/accounts/{account}/d1/database/{id}/query`
 * with `{ sql, params }` or `{ batch: [...] }`): the driver through which `npm run shards --
 * status | move --remote` run. It reads what wrangler reads in CI: CLOUDFLARE_API_TOKEN (a
 * token with D1 Edit), CLOUDFLARE_ACCOUNT_ID and, to reach another address (the self-test's
 * stand-in on 127.0.0.1), CLOUDFLARE_API_BASE_URL. It implements the part of `D1Database`
 * those commands use: `prepare().bind()` with `first`, `all` and `run`, and `batch`.
 */
import type { QueryResult } from "cloudflare/resources/d1/database/database";
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
/**
 * Resends of one request by the SDK (a 408, 409, 429, 5xx, a failed connection or a timeout),
 * each after the answer's `Retry-After` or else its back-off (0.5 s doubling to 8 s):
 * Cloudflare's API allows 1,200 requests per 5 minutes per user and says in `Retry-After`
 * when to come back. A resent write corrupts nothing: a step is idempotent, and copied rows
 * written twice are refused on their primary key, which stops the move until it is run again
 * (docs/operations.md § Database shards).
 */
const MAX_RETRIES = 5;
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

/** One statement as the API takes it. */
interface Query {
  sql: string;
  params: string[];
}

/**
 * Sends one request to a database's `/query` through the SDK, which resends it as
 * MAX_RETRIES says. @returns the API's `result`.
 * @throws Error naming the binding, the status and the API's errors once the SDK gives up.
 */
type SendQuery = (body: Query | { batch: Query[] }) => Promise<QueryResult[]>;

/** One database of the API: sends statements, one request per call (a batch is one request). */
class HttpD1Database {
  constructor(
    private readonly sendQuery: SendQuery,
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
   * Sends `body` (see SendQuery) and checks its answer.
   *
   * @throws Error as SendQuery, or for a wrong count of results or one not successful.
   */
  async send(body: Query | { batch: Query[] }, expected: number): Promise<QueryResult[]> {
    const results = await this.sendQuery(body);
    if (results.length !== expected || results.some((r) => r.success === false)) {
      throw new Error(`D1 HTTP API, ${this.binding}: ${results.length} results for ${expected} statements, or one not successful`);
    }
    return results;
  }
}

const toD1Result = (r: QueryResult): D1Result => ({
  results: (r.results ?? []) as Record<string, unknown>[],
  success: true,
  meta: (r.meta ?? {}) as D1Result["meta"],
});

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
 * HTTP API, through one SDK client that authenticates with the token alone. Nothing is
 * opened: each statement is one request.
 */
export async function openRemoteD1(api: D1Api): Promise<{ databases: Record<string, D1Database>; dispose(): Promise<void> }> {
  const ids = await d1DatabaseIdsOfConfig("remote");
  // Loaded only here: the SDK's modules take 0.7–2 s to load under tsx, which local commands need not pay.
  const { Cloudflare, APIError } = await import("cloudflare");
  // The token alone: the SDK would otherwise also send an X-Auth-Key/Email found in the environment.
  const client = new Cloudflare({
    apiToken: api.token,
    apiKey: null,
    apiEmail: null,
    userServiceKey: null,
    baseURL: api.baseUrl,
    maxRetries: MAX_RETRIES,
    timeout: REQUEST_TIMEOUT_MS,
  });
  const sendTo =
    (databaseId: string, binding: string): SendQuery =>
    async (body) => {
      try {
        return (await client.d1.database.query(databaseId, { account_id: api.accountId, ...body })).result;
      } catch (err) {
        if (!(err instanceof APIError)) throw err;
        const said = err.errors.map((e) => `${e.code ?? "?"} ${e.message ?? ""}`.trim()).join("; ") || err.message;
        throw new Error(`D1 HTTP API, ${binding} (${databaseId}): ${err.status ?? "no answer:"} ${said}`, { cause: err });
      }
    };
  // The commands use only prepare/bind/first/all/run and batch, which this class implements.
  const databases = Object.fromEntries(Object.entries(ids).map(([b, id]) => [b, new HttpD1Database(sendTo(id, b), b) as unknown as D1Database]));
  return { databases, dispose: async () => {} };
}
