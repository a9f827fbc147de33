/**
 * The fuzz oracle and its bookkeeping, shared by the vitest fuzz suite and `npm run fuzz`:
 * - `judge`: the problems of one answer — a 5xx; no `x-request-id`; a body out of the error
 *   envelope or with a code outside the catalogue or its status; a response the OpenAPI
 *   document does not describe (test/support/openapi-check.ts); a valid request that got
 *   neither its success nor a state-dependent code, or an invalid one that got a 2xx or a
 *   code outside its faults' family.
 * - `Tally`: counts of requests, 5xx and off-contract answers, by route.
 * - `snapshotSchool`: a hash of everything a school's key can read, to show a run changed
 *   nothing.
 */
import fc from "fast-check";
import { checkResponse } from "../support/openapi-check";
import { type Code, STATUS_OF } from "./contract";
import type { FuzzRequest } from "./requests";

/** Sends one request and returns the response (a Worker's `fetch`, or HTTP to `wrangler dev`). */
export type Send = (req: { method: string; path: string; headers: Record<string, string>; body?: string | Uint8Array | ReadableStream }) => Promise<Response>;

/** Origin used to name requests to the checker (only the path matters). */
const ORIGIN = "http://fuzz.invalid";

/** The outcome of one request. */
export interface Verdict {
  status: number;
  code?: string;
  problems: string[];
}

/**
 * Judges one answer (see the module comment). Reads the response's body.
 *
 * @returns the status, the error code if any, and the problems (empty: on contract).
 */
async function judge(req: FuzzRequest, res: Response): Promise<Verdict> {
  const problems: string[] = [];
  const status = res.status;
  if (status >= 500) problems.push(`answered ${status}`);
  const requestId = res.headers.get("x-request-id");
  if (!requestId) problems.push("no x-request-id header");
  let body: any;
  if (req.method !== "HEAD") {
    try {
      await checkResponse(req.method, `${ORIGIN}${req.path}`, res);
    } catch (err) {
      problems.push(
        String((err as Error).message)
          .split("\n")
          .slice(0, 6)
          .join(" | "),
      );
    }
    const text = await res.text();
    const type = res.headers.get("content-type") ?? "";
    if (type.startsWith("application/json")) {
      try {
        body = JSON.parse(text);
      } catch {
        problems.push(`body is not JSON: ${text.slice(0, 80)}`);
      }
    } else if (!(status === 200 && req.route === "GET /docs") && !(status === 302 && req.route === "GET /" && text === "")) {
      problems.push(`content-type ${JSON.stringify(type)}`);
    }
    if (status >= 400 && body !== undefined) {
      if (body?.status !== "error" || typeof body.code !== "string" || typeof body.message !== "string")
        problems.push(`not the error envelope: ${text.slice(0, 120)}`);
      else if (!(body.code in STATUS_OF)) problems.push(`code ${body.code} is not in the catalogue`);
      else if (STATUS_OF[body.code as Code] !== status)
        problems.push(`code ${body.code} with status ${status} (the catalogue says ${STATUS_OF[body.code as Code]})`);
      if (body?.requestId !== requestId) problems.push(`requestId ${JSON.stringify(body?.requestId)} differs from x-request-id ${JSON.stringify(requestId)}`);
    } else if (status < 300 && body !== undefined && req.route !== "GET /openapi.json" && body?.status !== "success") {
      problems.push(`not the success envelope: ${text.slice(0, 120)}`);
    }
  } else {
    await res.body?.cancel();
  }
  if (status === 405 && !res.headers.get("allow")) problems.push("405 without an allow header");

  const code: string | undefined = body?.code;
  // A HEAD answer has no body: its status stands for the code.
  const codeOrStatus = (c: Code) => (code !== undefined ? code === c : req.method === "HEAD" && STATUS_OF[c] === status);
  // A 429 is on contract only from a service whose limiter is on (its answers then carry
  // RateLimit-Policy, docs/reference.md § Conventions); the fuzzed services run with it off.
  const rateLimited = status === 429 && res.headers.has("ratelimit-policy") && (code === "RATE_LIMITED" || req.method === "HEAD");
  if (!rateLimited) {
    if (req.faults.length === 0) {
      if (!req.expect.success.includes(status) && !(status >= 400 && req.expect.codes.some(codeOrStatus))) {
        problems.push(`valid request answered ${status} ${code ?? ""} (expected ${[...req.expect.success, ...req.expect.codes].join(" or ")})`);
      }
    } else if (status < 400) {
      problems.push(`a request that breaks the contract answered ${status} (faults: ${req.faults.join("; ")})`);
    } else if (!req.expect.codes.some(codeOrStatus)) {
      problems.push(`answered ${status} ${code ?? ""}, expected one of ${req.expect.codes.join(", ")} (faults: ${req.faults.join("; ")})`);
    }
  }
  return { status, code, problems };
}

/** A request as one line for reports (body cut to 300 characters). */
function describeRequest(req: FuzzRequest): string {
  const body =
    req.body === undefined
      ? ""
      : typeof req.body === "string"
        ? req.body
        : `<${req.body.byteLength} bytes: ${[...req.body.slice(0, 16)].map((b) => b.toString(16).padStart(2, "0")).join(" ")}>`;
  const headers = Object.entries(req.headers)
    .map(([k, v]) => `${k}: ${v.slice(0, 80)}`)
    .join("; ");
  return `${req.method} ${req.path.slice(0, 300)}${req.path.length > 300 ? "…" : ""} [${headers}] ${body.slice(0, 300)}${body.length > 300 ? `… (${body.length} chars)` : ""}`;
}

/** Counts of a run. */
export class Tally {
  requests = 0;
  fiveXX = 0;
  offContract = 0;
  valid = 0;
  invalid = 0;
  readonly byRoute = new Map<string, { requests: number; valid: number; statuses: Map<number, number> }>();
  /** The first off-contract answers, described. */
  readonly examples: string[] = [];

  add(req: FuzzRequest, verdict: Verdict): void {
    this.requests += 1;
    if (req.faults.length === 0) this.valid += 1;
    else this.invalid += 1;
    if (verdict.status >= 500) this.fiveXX += 1;
    if (verdict.problems.length > 0) {
      this.offContract += 1;
      if (this.examples.length < 20)
        this.examples.push(`${describeRequest(req)}\n    → ${verdict.status} ${verdict.code ?? ""}: ${verdict.problems.join(" | ")}`);
    }
    const r = this.byRoute.get(req.route) ?? { requests: 0, valid: 0, statuses: new Map<number, number>() };
    r.requests += 1;
    if (req.faults.length === 0) r.valid += 1;
    r.statuses.set(verdict.status, (r.statuses.get(verdict.status) ?? 0) + 1);
    this.byRoute.set(req.route, r);
  }

  /** A table of the run, one line per route. */
  summary(): string {
    const lines = [...this.byRoute.entries()]
      .sort(([a], [b]) => a.localeCompare(b))
      .map(
        ([route, r]) =>
          `  ${route.padEnd(34)} ${String(r.requests).padStart(6)} (${String(r.valid).padStart(5)} valid)  ${[...r.statuses.entries()]
            .sort(([a], [b]) => a - b)
            .map(([s, n]) => `${s}×${n}`)
            .join(" ")}`,
      );
    return [
      `requests: ${this.requests} (${this.valid} valid, ${this.invalid} invalid)   5xx: ${this.fiveXX}   off-contract: ${this.offContract}`,
      ...lines,
      ...(this.examples.length > 0 ? ["off-contract answers (first 20):", ...this.examples.map((e) => `  ${e}`)] : []),
    ].join("\n");
  }
}

/** Options of `fuzz`. */
export interface FuzzOptions {
  send: Send;
  arbitrary: fc.Arbitrary<FuzzRequest>;
  /** Requests to send (in batches of `concurrency`). */
  runs: number;
  seed: number;
  /** Requests in flight at once (default 1). */
  concurrency?: number;
  /** Stop at the first off-contract answer and shrink it (vitest); otherwise count them all. */
  stopOnFailure: boolean;
  tally?: Tally;
  onProgress?: (tally: Tally) => void;
}

/**
 * Sends `runs` generated requests through `send`, `concurrency` at a time, and judges each
 * (fast-check, fixed seed, shrinking on: each request of a failing batch shrinks).
 * With `stopOnFailure`, rejects with the smallest off-contract request found; otherwise
 * resolves with the tally of every answer.
 */
export async function fuzz(opts: FuzzOptions): Promise<Tally> {
  const tally = opts.tally ?? new Tally();
  const size = Math.max(1, opts.concurrency ?? 1);
  await fc.assert(
    fc.asyncProperty(fc.array(opts.arbitrary, { minLength: size, maxLength: size }), async (batch) => {
      const verdicts = await Promise.all(batch.map(async (req) => judge(req, await opts.send(req))));
      const failures: string[] = [];
      batch.forEach((req, i) => {
        tally.add(req, verdicts[i]!);
        if (verdicts[i]!.problems.length > 0)
          failures.push(`${describeRequest(req)}\n→ ${verdicts[i]!.status} ${verdicts[i]!.code ?? ""}: ${verdicts[i]!.problems.join("\n  ")}`);
      });
      opts.onProgress?.(tally);
      if (opts.stopOnFailure && failures.length > 0) throw new Error(failures.join("\n"));
    }),
    { numRuns: Math.ceil(opts.runs / size), seed: opts.seed, endOnFailure: !opts.stopOnFailure },
  );
  return tally;
}

/** Everything a school's key can read, hashed: `{ courses, webhooks, deliveries, hash }`. */
export async function snapshotSchool(send: Send, key: string): Promise<{ courses: number; webhooks: number; deliveries: number; hash: string }> {
  const headers = { authorization: `Bearer ${key}` };
  const get = async (path: string) => {
    const res = await send({ method: "GET", path, headers });
    const body = (await res.json()) as any;
    if (res.status !== 200) throw new Error(`snapshot: GET ${path} answered ${res.status} ${JSON.stringify(body).slice(0, 200)}`);
    return body;
  };
  const parts: unknown[] = [];
  let courses = 0;
  for (let page = 1; ; page++) {
    const body = await get(`/v3/courses?limit=100&page=${page}&includeStudents=true&includeTeachers=true&includeSurveyTemplates=true&includeTraining=true`);
    parts.push(body.result);
    courses += body.result.length;
    if (!body.pagination.hasMore) break;
  }
  const hooks = await get("/v3/webhooks");
  parts.push(hooks.result);
  let deliveries = 0;
  for (const hook of hooks.result as { id: string }[]) {
    for (let page = 1; ; page++) {
      const body = await get(`/v3/webhooks/${hook.id}/deliveries?limit=100&page=${page}`);
      parts.push(body.result);
      deliveries += body.result.length;
      if (!body.pagination.hasMore) break;
    }
  }
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(JSON.stringify(parts)));
  const hash = [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, "0")).join("");
  return { courses, webhooks: (hooks.result as unknown[]).length, deliveries, hash };
}
