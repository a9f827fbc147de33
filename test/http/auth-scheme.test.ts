/**
 * What a 401 says (docs/reference.md § Authentication, § Error codes): a header without the
 * `Bearer ` scheme, or with no credential after it, is told so; an unknown and a revoked key
 * get one and the same message, so the answer never tells whether a key existed.
 */
import { env } from "cloudflare:test";
import { beforeAll, describe, expect, it } from "vitest";
import { fixture, KEY_A, REVOKED_KEY } from "../support/fixtures";
import { callJson, loadFixture } from "../support/helpers";

beforeAll(async () => {
  await loadFixture(fixture);
  await env.DIRECTORY.prepare("UPDATE api_keys SET revoked_at = 1 WHERE school_id = 'sch_revoked'").run();
});

/** The 401 of GET /v3/courses with `authorization` as the whole header (none when `undefined`). */
async function refusal(authorization: string | undefined) {
  const { status, body } = await callJson("/v3/courses", { headers: authorization === undefined ? {} : { authorization } });
  expect([status, body.code]).toEqual([401, "UNAUTHORIZED"]);
  return body.message as string;
}

const SCHEME =
  "The Authorization header must read `Authorization: Bearer <key>`: the `Bearer ` scheme is missing or another one was sent, or no credential follows it.";
const DEFAULT = "A valid API key or portal session token is required: send `Authorization: Bearer sk_…` (or `Bearer ps_…` from a portal link).";

describe("a header without the Bearer scheme", () => {
  it.each([
    ["the bare key", KEY_A],
    ["Basic credentials", "Basic dXNlcjpwYXNz"],
    ["Bearer with no token", "Bearer"],
    ["Bearer and spaces only", "Bearer    "],
    ["another scheme before the key", `Token ${KEY_A}`],
  ])("%s: the message names the expected form", async (_, header) => {
    expect(await refusal(header)).toBe(SCHEME);
  });
});

describe("a Bearer credential that is not valid", () => {
  it("unknown and revoked keys get the same message, the default one; so do a malformed key and no header", async () => {
    const unknown = await refusal(`Bearer sk_live_${crypto.randomUUID().replaceAll("-", "")}`);
    const revoked = await refusal(`Bearer ${REVOKED_KEY}`);
    expect(revoked).toBe(unknown);
    expect(unknown).toBe(DEFAULT);
    expect(await refusal("Bearer not-a-key")).toBe(DEFAULT);
    expect(await refusal(undefined)).toBe(DEFAULT);
  });
});
