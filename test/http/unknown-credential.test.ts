/**
 * An unknown credential costs at most one small database read (docs/reference.md §
 * Conventions): a body is parsed, and a statement carrying it is sent, only once the
 * credential is known. Statements are recorded at the D1 binding (test/support/d1-statements.ts).
 */
import { createExecutionContext, env, waitOnExecutionContext } from "cloudflare:test";
import { beforeAll, describe, expect, it } from "vitest";
import { shardsOf } from "../../src/db/shards";
import worker from "../../src/index";
import { recordingD1 } from "../support/d1-statements";
import { fixture, KEY_A } from "../support/fixtures";
import { BASE, loadFixture } from "../support/helpers";
import { checkResponse } from "../support/openapi-check";

beforeAll(async () => {
  await loadFixture(fixture);
});

/** POSTs `body` to /v3/courses:search with `key`, on D1 bindings (the directory and every shard) that record what is sent. */
async function search(key: string, body: string) {
  const recorded = [["DIRECTORY", env.DIRECTORY] as const, ...shardsOf(env).map(({ binding, d1 }) => [binding, d1] as const)].map(
    ([b, d1]) => [b, recordingD1(d1)] as const,
  );
  const exec = createExecutionContext();
  const headers = { authorization: `Bearer ${key}`, "content-type": "application/json" };
  const res = await worker.fetch(
    new Request(`${BASE}/v3/courses:search`, { method: "POST", headers, body }) as Request<unknown, IncomingRequestCfProperties>,
    { ...env, ...Object.fromEntries(recorded.map(([b, r]) => [b, r.db])) },
    exec,
  );
  await waitOnExecutionContext(exec);
  await checkResponse("POST", `${BASE}/v3/courses:search`, res.clone());
  return { res, sent: recorded.flatMap(([, r]) => r.sent) };
}

/** A valid search body of just under 1 MiB (1,048,576 bytes): two long id lists of 64-character ids. */
function mebibyteBody(): string {
  const ids = (prefix: string, n: number) => Array.from({ length: n }, (_, i) => `${prefix}${String(i).padStart(64 - prefix.length, "0")}`);
  const body = JSON.stringify({ courseId: ids("crs_", 10_000), groupId: ids("grp_", 5_600) });
  expect(body.length).toBeGreaterThan(1_040_000);
  expect(body.length).toBeLessThanOrEqual(1_048_576);
  return body;
}

describe("POST /v3/courses:search with an unknown key and a 1 MiB body", () => {
  it("sends exactly one small statement (the key's lookup), then answers 401", async () => {
    const { res, sent } = await search(`sk_live_${crypto.randomUUID().replaceAll("-", "")}`, mebibyteBody());
    expect(res.status).toBe(401);
    expect(sent).toHaveLength(1);
    expect(sent[0]!.sql).toContain("api_keys");
    // The hash of the key, 64 hex characters, and the instant expiry is checked at (a number: 8).
    expect(sent[0]!.boundBytes).toBe(72);
  });

  it("with a valid key, the same body is read and answered", async () => {
    const { res } = await search(KEY_A, mebibyteBody());
    expect(res.status).toBe(200);
  });
});
