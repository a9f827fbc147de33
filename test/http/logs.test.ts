/**
 * Logs (docs/operations.md § "Keys, logs"): one JSON line per request with
 * `requestId`, `schoolId` (when known), `operationId`, `status`, `durationMs` and `dbMs`;
 * and no line, of the Worker or of its Durable Objects, ever carries an API key, a portal
 * token, a webhook secret, a signature or a custom header value. Every console line written
 * while requests run with valid keys, wrong keys, webhook secrets, signed deliveries and
 * custom headers in play is captured (a courier's line among them, shown) and searched for
 * each of those strings.
 */
import { createExecutionContext, createScheduledController, env, waitOnExecutionContext } from "cloudflare:test";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from "vitest";
import worker from "../../src/index";
import { logDeliveryAttempt, logRequest } from "../../src/lib/log";
import { call, callJson } from "../support/helpers";
import { drain, newSchool, register } from "../support/webhooks/harness";
import { Receivers } from "../support/webhooks/receivers";

const receivers = new Receivers();
beforeAll(() => {
  receivers.install();
});
afterAll(() => receivers.restore());

/** Every console line written since the last `beforeEach`, each call's arguments as text. */
let lines: string[] = [];
beforeEach(() => {
  lines = [];
  for (const level of ["log", "info", "warn", "error", "debug"] as const) {
    vi.spyOn(console, level).mockImplementation((...args: unknown[]) => {
      lines.push(args.map((a) => (a instanceof Error ? `${a.message}\n${a.stack}` : typeof a === "string" ? a : JSON.stringify(a))).join(" "));
    });
  }
});
afterEach(() => {
  vi.restoreAllMocks();
});

/** The request lines captured, parsed. */
const requestLines = () => lines.filter((l) => l.startsWith('{"kind":"request"')).map((l) => JSON.parse(l) as Record<string, unknown>);

const base = { name: "Journalisation", startDateTime: "2026-10-05T08:00:00Z", endDateTime: "2026-10-05T10:00:00Z" };

describe("one JSON line per request", () => {
  it("carries requestId, schoolId once known, operationId, status, an error's code, durationMs and dbMs", async () => {
    const { schoolId, key } = await newSchool("log");
    const ok = await callJson("/v3/courses?limit=1", { key, headers: { "x-request-id": "req_log_ok" } });
    const bad = await callJson("/v3/courses?limit=1", { key: "sk_live_wrong_key_log_1", headers: { "x-request-id": "req_log_401" } });
    const lost = await callJson("/v3/nowhere", { headers: { "x-request-id": "req_log_404" } });
    expect([ok.status, bad.status, lost.status]).toEqual([200, 401, 404]);

    const byId = new Map(requestLines().map((l) => [l.requestId, l]));
    expect(byId.size).toBe(3);
    expect(byId.get("req_log_ok")).toEqual({
      kind: "request",
      requestId: "req_log_ok",
      schoolId,
      keyId: expect.stringMatching(/^key_/),
      operationId: "listCourses",
      method: "GET",
      path: "/v3/courses",
      status: 200,
      durationMs: expect.any(Number),
      dbMs: expect.any(Number),
    });
    expect(byId.get("req_log_401")).toMatchObject({ operationId: "listCourses", status: 401, code: "UNAUTHORIZED" });
    expect(byId.get("req_log_401")).not.toHaveProperty("schoolId");
    expect(byId.get("req_log_404")).toMatchObject({ path: "/v3/nowhere", status: 404, code: "NOT_FOUND" });
    expect(byId.get("req_log_404")).not.toHaveProperty("operationId");
    // Exactly one line per request.
    expect(lines.filter((l) => l.includes("req_log_ok"))).toHaveLength(1);
  });
});

describe("no line carries a credential, a secret, a signature or a custom header value", () => {
  it("through keys, wrong keys, webhook secrets, rotations, signed deliveries and custom headers", async () => {
    const { schoolId, key } = await newSchool("sec");
    const wrongKeys = ["sk_live_wrong_0123456789abcdef", "sk_test_wrong_fedcba9876543210", "ps_wrong_portal_token_0123456789"];
    const headerValue = "custom-header-value-7f3a9c1e";

    // A custom header (docs/reference.md § POST /v3/webhooks): sent with every attempt, never logged.
    const url = "https://logs.example.com/hook";
    const created = await callJson("/v3/webhooks", { method: "POST", key, json: { url, headers: { "x-api-key": headerValue } } });
    expect(created.status).toBe(201);
    const hook = created.body.result as { id: string; secret: string };
    const rotated = await callJson(`/v3/webhooks/${hook.id}/secret/rotate`, { method: "POST", key, json: { graceSeconds: 3600 } });
    expect(rotated.status).toBe(200);
    const second = await register(key, "https://logs-2.example.com/hook");

    await callJson("/v3/courses", { method: "POST", key, json: base });
    await callJson(`/v3/webhooks/${hook.id}/test`, { method: "POST", key });
    for (const wrong of wrongKeys) expect((await call("/v3/courses", { key: wrong })).status).toBe(401);
    // Credentials where a careless logger would copy them: the request id, the path, the query.
    await call("/v3/courses", { key, headers: { "x-request-id": key } });
    await call(`/v3/webhooks/${hook.secret}`, { key });
    await call(`/v3/courses?limit=1&token=${wrongKeys[0]}`, { key });
    // A receiver that fails, so that failed attempts are logged too.
    receivers.on("logs-2.example.com", 500);
    await callJson("/v3/courses", { method: "POST", key, json: { ...base, name: "Encore" } });
    await drain(schoolId);

    const received = [...receivers.to("logs.example.com"), ...receivers.to("logs-2.example.com")];
    const signatures = received.flatMap((r) => (r.headers["webhook-signature"] ?? "").split(" ")).filter(Boolean);
    expect(signatures.length).toBeGreaterThan(2);
    // The header's value did travel (to the receiver), so its absence from the logs below means something.
    const withHeader = receivers.to("logs.example.com");
    expect(withHeader.length).toBeGreaterThan(0);
    for (const r of withHeader) expect(r.headers["x-api-key"]).toBe(headerValue);

    const secrets = [
      key,
      ...wrongKeys,
      hook.secret,
      rotated.body.result.secret as string,
      second.secret,
      headerValue,
      ...signatures,
      ...signatures.map((s) => s.slice(3)),
    ];
    // The capture reaches the Durable Objects: the courier's line for the first attempt at
    // logs-2 of the event it answered 500 ("Encore") is among the lines searched.
    const failedAttempt = receivers.to("logs-2.example.com").find((r) => (r.event.data.course as { name: string }).name === "Encore")!;
    expect(failedAttempt, "the attempt logs-2 answered 500").toBeDefined();
    expect(lines.filter((l) => l.startsWith('{"kind":"delivery_attempt"')).map((l) => JSON.parse(l))).toContainEqual({
      kind: "delivery_attempt",
      schoolId,
      webhookId: second.id,
      eventId: failedAttempt.event.id,
      attempt: 1,
      trigger: "event",
      status: "failed",
      responseStatus: 500,
      durationMs: expect.any(Number),
      error: expect.any(String),
    });
    expect(lines.length).toBeGreaterThan(10);
    for (const line of lines) for (const secret of secrets) expect(line.includes(secret), `a log line carries ${secret.slice(0, 8)}…: ${line}`).toBe(false);
    // The request whose id was the key itself still has its line, with the id redacted.
    expect(requestLines().some((l) => l.requestId === "[redacted]")).toBe(true);
  });
});

describe("the logging module writes whitelisted fields only", () => {
  it("drops fields it does not declare, and redacts credential shapes in what it does", () => {
    const sneaky = {
      requestId: "req_1",
      method: "POST",
      path: "/v3/webhooks/sk_live_in_the_path",
      status: 500,
      durationMs: 12.345,
      dbMs: 3,
      error: "Error: failed with whsec_c2VjcmV0IHNlY3JldCBzZWNyZXQ= and v1,AbCd+/== and ps_token_1",
      secret: "whsec_never",
      headers: { authorization: "Bearer sk_live_never" },
    };
    logRequest(sneaky);
    logDeliveryAttempt({
      schoolId: "sch_1",
      webhookId: "wh_1",
      eventId: "evt_1",
      attempt: 2,
      trigger: "retry",
      status: "failed",
      responseStatus: null,
      durationMs: null,
      error: "refused by the URL policy: the address [::1] is loopback (::1)",
      ...{ url: "https://user:pass@example.com/", secret: "whsec_never" },
    });
    expect(lines.map((l) => JSON.parse(l))).toEqual([
      {
        kind: "request",
        requestId: "req_1",
        method: "POST",
        path: "/v3/webhooks/[redacted]",
        status: 500,
        durationMs: 12.3,
        dbMs: 3,
        error: "Error: failed with [redacted] and [redacted] and [redacted]",
      },
      {
        kind: "delivery_attempt",
        schoolId: "sch_1",
        webhookId: "wh_1",
        eventId: "evt_1",
        attempt: 2,
        trigger: "retry",
        status: "failed",
        responseStatus: null,
        durationMs: null,
        error: "refused by the URL policy: the address [::1] is loopback (::1)",
      },
    ]);
  });
});

describe("the cron's prune lines", () => {
  /** Runs the scheduled handler once, at the Worker's clock. */
  async function cron(): Promise<void> {
    const exec = createExecutionContext();
    await worker.scheduled(createScheduledController({ scheduledTime: Date.now(), cron: "* * * * *" }), env, exec);
    await waitOnExecutionContext(exec);
  }
  const pruneLines = () => lines.filter((l) => l.startsWith('{"kind":"prune"')).map((l) => JSON.parse(l) as Record<string, unknown>);

  it("one line per database whose prunes removed rows, naming it; none when nothing went", async () => {
    await cron(); // whatever earlier tests left behind
    lines = [];
    await cron();
    expect(pruneLines()).toEqual([]);
    // Two idempotency keys from two days ago on SHARD_1: the next run removes them, in one line.
    const old = Date.now() - 2 * 86_400_000;
    for (const key of ["log-prune-1", "log-prune-2"]) {
      await env.SHARD_1.prepare(
        "INSERT INTO idempotency_keys (school_id, key, request_hash, status, body, location, created_at) VALUES ('sch_log_prune', ?, 'h', 201, '{}', NULL, ?)",
      )
        .bind(key, old)
        .run();
    }
    await cron();
    expect(pruneLines()).toEqual([{ kind: "prune", database: "SHARD_1", idempotencyKeys: 2, eventBytes: 0, outboxRows: 0 }]);
  });
});
