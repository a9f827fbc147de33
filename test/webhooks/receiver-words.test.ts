/**
 * Receivers' words stay theirs (docs/reference.md § "Delivery log": `error`, `responseBody`):
 * an attempt's `error` and the notices that quote it are the service's own wording in printable
 * ASCII, whatever a receiver answers; a stored answer shows no custom header value and no
 * signing secret, even from a receiver that echoes its request, and only course readers see it.
 */
import { env } from "cloudflare:workers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { hubFor } from "../../src/events/hub-client";
import { callJson } from "../support/helpers";
import { keyWithScopes } from "../support/scopes";
import { courseEvent, drain, newSchool, openPortalSession, register } from "../support/webhooks/harness";
import { SimulatedPlatform } from "../support/webhooks/platform-sim";

const rx = new SimulatedPlatform();
beforeAll(() => {
  rx.install();
});
afterAll(() => rx.restore());

/** Printable ASCII: what an `error` may hold. */
const PRINTABLE_ASCII = /^[\x20-\x7e]*$/;

/** The first delivery log entry of `hookId` after one event is published and drained. */
async function firstEntry(schoolId: string, key: string, hookId: string) {
  await hubFor(env, schoolId).publish([courseEvent(schoolId)]);
  await drain(schoolId);
  const log = await callJson(`/v3/webhooks/${hookId}/deliveries`, { key });
  expect(log.status).toBe(200);
  return log.body.result[0] as { error: string | null; responseBody: string | null; responseStatus: number | null };
}

describe("an attempt's error", () => {
  it("a Retry-After with control characters and a script becomes the service's words", async () => {
    const { schoolId, key } = await newSchool("rxw1");
    const hook = await register(key, "https://rxw-ctl.example.com/in");
    rx.on("rxw-ctl.example.com", { status: 503, headers: { "retry-after": "<script>alert(1)</script>\u007f" } });
    const entry = await firstEntry(schoolId, key, hook.id);
    expect(entry.error).toBe("HTTP 503 (Retry-After not understood)");
  });

  it("a Retry-After in seconds is shown as the delay understood", async () => {
    const { schoolId, key } = await newSchool("rxw2");
    const hook = await register(key, "https://rxw-sec.example.com/in");
    rx.on("rxw-sec.example.com", { status: 429, headers: { "retry-after": "  0120 " } });
    expect((await firstEntry(schoolId, key, hook.id)).error).toBe("HTTP 429 (Retry-After: 120 s)");
  });

  it("a failed connection is a fixed phrase, never the runtime's message", async () => {
    const { schoolId, key } = await newSchool("rxw3");
    const hook = await register(key, "https://rxw-net.example.com/in");
    rx.on("rxw-net.example.com", 0);
    const entry = await firstEntry(schoolId, key, hook.id);
    expect(entry.error).toBe("network error: the connection failed or was lost");
    expect(entry.error).toMatch(PRINTABLE_ASCII);
  });
});

describe("a stored answer", () => {
  it("from a receiver that echoes its request shows no custom header value nor signing secret", async () => {
    const { schoolId, key } = await newSchool("rxw4");
    const token = "Bearer sk_receiver_token_0123456789";
    const hook = await register(key, "https://rxw-echo.example.com/in", { headers: { authorization: token, "x-short": "abc" } });
    // A debug endpoint: echoes the request's headers, and (as a worst case) the registration's secret.
    rx.on("rxw-echo.example.com", (req) => ({ status: 401, body: JSON.stringify({ headers: req.headers, note: `secret ${hook.secret}` }) }));
    const entry = await firstEntry(schoolId, key, hook.id);
    expect(entry.responseStatus).toBe(401);
    expect(entry.responseBody).not.toContain("sk_receiver_token_0123456789");
    expect(entry.responseBody).not.toContain(hook.secret);
    expect(entry.responseBody).toContain("[redacted]");
    // Values shorter than 8 characters are kept (they could not be told from ordinary text).
    expect(entry.responseBody).toContain('"x-short":"abc"');
  });

  it("is shown only to a credential that may read courses: an answer may echo the course it was sent", async () => {
    const { schoolId, key } = await newSchool("rxw5");
    const hook = await register(key, "https://rxw-course.example.com/in");
    rx.on("rxw-course.example.com", (req) => ({ status: 400, body: `refused: ${req.body}` }));
    const entry = await firstEntry(schoolId, key, hook.id);
    expect(entry.responseBody).toContain("Cours 0");
    const hooksOnly = await keyWithScopes(schoolId, "webhooks:read");
    const log = await callJson(`/v3/webhooks/${hook.id}/deliveries`, { key: hooksOnly });
    expect(log.body.result.map((e: { responseStatus: number; responseBody: string | null }) => [e.responseStatus, e.responseBody])).toEqual([[400, null]]);
    const session = await openPortalSession(key, { scopes: ["webhooks:read"] });
    const viaSession = await callJson(`/v3/webhooks/${hook.id}/deliveries`, { key: session.token });
    expect(viaSession.body.result[0].responseBody).toBeNull();
    const reader = await keyWithScopes(schoolId, "webhooks:read courses:read");
    expect((await callJson(`/v3/webhooks/${hook.id}/deliveries`, { key: reader })).body.result[0].responseBody).toBe(entry.responseBody);
  });
});
