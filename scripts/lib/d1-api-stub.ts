/**
 * A stand-in for Cloudflare's D1 HTTP API on 127.0.0.1, over the local D1 files under
 * `persistTo` (Miniflare): `POST /client/v4/accounts/{account}/d1/database/{database_id}/query`
 * (what the SDK's `d1.database.query` calls) with `{ sql, params }` or `{ batch: [{ sql,
 * params }] }`, params strings only, a bearer token, answers in the API's envelope
 * (`{ success, errors, messages, result }`), refusing what production's D1 refuses
 * (test/support/d1-limits.ts: 32 arguments per SQL function, 100 bound parameters, 100,000
 * bytes of SQL, 2,000,000 bytes per value or row, stored rows guarded by its triggers on every
 * table, one created through the API too). The self-test of `npm run shards -- …
 * --remote` points CLOUDFLARE_API_BASE_URL at it, since this machine reaches no Cloudflare
 * API; `fault` lets it answer a request itself (a 500, a 429 with `Retry-After`).
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { guardRows, limitedD1 } from "../../test/support/d1-limits";
import { openLocalD1 } from "./d1-local";
import { d1DatabaseIdsOfConfig } from "./wrangler";

/** One request the stub received: its database's binding and its statements. */
export interface StubRequest {
  binding: string;
  queries: { sql: string; params: unknown[] }[];
}

/** An answer a test makes the stub give instead of running the statements. */
interface StubFault {
  status: number;
  headers?: Record<string, string>;
  errors: { code: number; message: string }[];
}

/** The running stub. */
export interface D1ApiStub {
  /** What to set CLOUDFLARE_API_BASE_URL to. */
  baseUrl: string;
  accountId: string;
  token: string;
  /** The local databases it serves (binding → D1), for the test's own reads. */
  databases: Record<string, D1Database>;
  /** Every request that reached a database, in order (faulted ones included). */
  requests: StubRequest[];
  /** Called before a request runs; an answer returned is sent instead. */
  fault?: (req: StubRequest, index: number) => StubFault | undefined;
  close(): Promise<void>;
}

const envelope = (result: unknown, errors: StubFault["errors"] = []) => JSON.stringify({ success: errors.length === 0, errors, messages: [], result });

function send(res: ServerResponse, status: number, body: string, headers: Record<string, string> = {}): void {
  res.writeHead(status, { "content-type": "application/json", ...headers });
  res.end(body);
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  return Buffer.concat(chunks).toString("utf8");
}

/** Starts the stub on 127.0.0.1 (a free port) over the local D1 state under `persistTo`. */
export async function startD1ApiStub(persistTo: string): Promise<D1ApiStub> {
  const local = await openLocalD1(persistTo);
  for (const db of Object.values(local.databases)) await guardRows(db);
  const bindingOf = new Map(Object.entries(await d1DatabaseIdsOfConfig("remote")).map(([b, id]) => [id, b]));
  const stub: D1ApiStub = {
    baseUrl: "",
    accountId: "0123456789abcdef0123456789abcdef",
    token: "stub-token-for-d1-http-api-tests",
    databases: local.databases,
    requests: [],
    close: async () => {},
  };
  const server = createServer((req, res) => {
    void (async () => {
      const m = /^\/client\/v4\/accounts\/([^/]+)\/d1\/database\/([^/]+)\/query$/.exec(req.url ?? "");
      const body = await readBody(req);
      if (req.method !== "POST" || !m) return send(res, 404, envelope(null, [{ code: 7003, message: "Could not route to this path" }]));
      if (req.headers.authorization !== `Bearer ${stub.token}`) return send(res, 401, envelope(null, [{ code: 10000, message: "Authentication error" }]));
      const binding = bindingOf.get(m[2]!);
      if (m[1] !== stub.accountId || binding === undefined) return send(res, 404, envelope(null, [{ code: 7404, message: `database ${m[2]} not found` }]));
      let parsed: { sql?: unknown; params?: unknown; batch?: unknown };
      try {
        parsed = JSON.parse(body);
      } catch {
        return send(res, 400, envelope(null, [{ code: 7400, message: "the body is not JSON" }]));
      }
      const list = (Array.isArray(parsed.batch) ? parsed.batch : [parsed]) as { sql?: unknown; params?: unknown }[];
      const request: StubRequest = { binding, queries: list.map((q) => ({ sql: String(q.sql), params: Array.isArray(q.params) ? q.params : [] })) };
      stub.requests.push(request);
      if (
        list.some((q) => typeof q.sql !== "string" || (q.params !== undefined && !(Array.isArray(q.params) && q.params.every((p) => typeof p === "string"))))
      ) {
        return send(res, 400, envelope(null, [{ code: 7400, message: "sql must be a string and params an array of strings" }]));
      }
      const f = stub.fault?.(request, stub.requests.length - 1);
      if (f) return send(res, f.status, envelope(null, f.errors), f.headers);
      // The real API runs each statement on D1 itself: production's per-query limits apply.
      const d1 = limitedD1(local.databases[binding]!);
      try {
        const statements = request.queries.map((q) => d1.prepare(q.sql).bind(...q.params));
        const results = statements.length === 1 && !Array.isArray(parsed.batch) ? [await statements[0]!.all()] : await d1.batch(statements);
        send(res, 200, envelope(results));
      } catch (err) {
        send(res, 400, envelope(null, [{ code: 7500, message: (err as Error).message }]));
      }
    })().catch((err) => send(res, 500, envelope(null, [{ code: 7500, message: String(err) }])));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  stub.baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/client/v4`;
  stub.close = async () => {
    await new Promise<void>((resolve) => server.close(() => resolve()));
    await local.dispose();
  };
  return stub;
}
