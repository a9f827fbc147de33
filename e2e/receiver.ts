/**
 * A local webhook receiver for the end-to-end tests: a Node HTTP server on 127.0.0.1 that
 * records every request (path, headers, raw body, time) and answers 204, or — switched with
 * {@link Receiver.fail} — a chosen error status, to play an outage, or — set with
 * {@link Receiver.answer} — a chosen status and body.
 */
import { createServer, type IncomingHttpHeaders } from "node:http";
import type { AddressInfo } from "node:net";
import { Webhook } from "standardwebhooks";

/** One request the receiver got. */
export interface Received {
  /** URL path, e.g. `/portal-a`. */
  path: string;
  headers: IncomingHttpHeaders;
  /** The raw body, as signed by the sender. */
  body: string;
  /** `Date.now()` when the request arrived (ms). */
  at: number;
  /** The status the receiver answered. */
  answered: number;
}

/** A running receiver. */
export interface Receiver {
  /** `http://127.0.0.1:<port><path>`. */
  url(path: string): string;
  /** Every request so far, oldest first. */
  received: Received[];
  /** The requests to `path`. */
  at(path: string): Received[];
  /**
   * From now on, answers `status` (e.g. 503) to requests on `path` (every path when omitted);
   * `fail(null)` (or `fail(null, path)`) answers 204 again.
   */
  fail(status: number | null, path?: string): void;
  /**
   * From now on, answers `status` with `body` (text/plain) to requests on `path` (unless it
   * fails); `answer(path, null)` answers 204 again.
   */
  answer(path: string, reply: { status: number; body: string } | null): void;
  /**
   * Resolves with the first request (past or future) that `match` accepts; rejects after
   * `timeoutMs` (default 30 s) with what was received.
   */
  waitFor(match: (r: Received) => boolean, timeoutMs?: number): Promise<Received>;
  close(): Promise<void>;
}

/** Starts a receiver on 127.0.0.1 (`port` 0: a free port). */
export async function startReceiver(port = 0): Promise<Receiver> {
  const received: Received[] = [];
  const failing = new Map<string | undefined, number>();
  const replies = new Map<string, { status: number; body: string }>();
  const waiters = new Set<() => void>();
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const path = (req.url ?? "/").split("?")[0]!;
      const failed = failing.get(path) ?? failing.get(undefined);
      const reply = failed === undefined ? replies.get(path) : undefined;
      const answered = failed ?? reply?.status ?? 204;
      received.push({ path, headers: req.headers, body: Buffer.concat(chunks).toString("utf8"), at: Date.now(), answered });
      if (reply) res.writeHead(answered, { "content-type": "text/plain; charset=utf-8" }).end(reply.body);
      else res.writeHead(answered).end();
      for (const wake of waiters) wake();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, "127.0.0.1", () => resolve());
  });
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url: (path) => `${base}${path}`,
    received,
    at: (path) => received.filter((r) => r.path === path),
    fail(status, path) {
      if (status === null) failing.delete(path);
      else failing.set(path, status);
    },
    answer(path, reply) {
      if (reply === null) replies.delete(path);
      else replies.set(path, reply);
    },
    waitFor(match, timeoutMs = 30_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          const hit = received.find(match);
          if (!hit) return false;
          cleanup();
          resolve(hit);
          return true;
        };
        const timer = setTimeout(() => {
          cleanup();
          reject(
            new Error(
              `no matching request within ${timeoutMs} ms; received: ${JSON.stringify(received.map((r) => ({ path: r.path, id: r.headers["webhook-id"], at: r.at })))}`,
            ),
          );
        }, timeoutMs);
        const wake = () => void check();
        const cleanup = () => {
          clearTimeout(timer);
          waiters.delete(wake);
        };
        waiters.add(wake);
        check();
      });
    },
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

/**
 * Verifies a delivery's Standard Webhooks signature with `secret` (`whsec_…`) using the
 * `standardwebhooks` package, as an integrator's receiver would.
 *
 * @returns the parsed body.
 * @throws WebhookVerificationError when no signature of the request matches the secret.
 */
export function verifyDelivery(r: Received, secret: string): { id: string; type: string; data: any } {
  const headers: Record<string, string> = {};
  for (const name of ["webhook-id", "webhook-timestamp", "webhook-signature"]) headers[name] = String(r.headers[name] ?? "");
  return new Webhook(secret).verify(r.body, headers) as { id: string; type: string; data: any };
}
