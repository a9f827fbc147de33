/**
 * A key the directory refuses is forgotten at once (docs/architecture.md § Shards): an
 * isolate that knew a key's shard stops sending the page's query beside the directory's
 * check once the key is revoked — at most the request in flight when it was revoked still
 * sends it. Statements are recorded at the D1 bindings (test/support/d1-statements.ts).
 */
import { createExecutionContext, env, waitOnExecutionContext } from "cloudflare:test";
import { beforeAll, describe, expect, it } from "vitest";
import { insertKey, newApiKey, revokeKey } from "../../src/db/api-keys";
import { shardsOf } from "../../src/db/shards";
import worker from "../../src/index";
import { recordingD1 } from "../support/d1-statements";
import { fixture } from "../support/fixtures";
import { BASE, loadFixture } from "../support/helpers";
import { checkResponse } from "../support/openapi-check";
import { runSteps } from "../support/shards";

beforeAll(async () => {
  await loadFixture(fixture);
});

/** GET `path` with `key` on recording bindings: the status, and how many statements went to the directory and to the shards. */
async function get(path: string, key: string) {
  const directory = recordingD1(env.DIRECTORY);
  const shards = shardsOf(env).map(({ binding, d1 }) => [binding, recordingD1(d1)] as const);
  const exec = createExecutionContext();
  const res = await worker.fetch(
    new Request(`${BASE}${path}`, { headers: { authorization: `Bearer ${key}` } }) as Request<unknown, IncomingRequestCfProperties>,
    { ...env, DIRECTORY: directory.db, ...Object.fromEntries(shards.map(([b, r]) => [b, r.db])) },
    exec,
  );
  await waitOnExecutionContext(exec);
  await checkResponse("GET", `${BASE}${path}`, res.clone());
  return { status: res.status, directory: directory.sent.length, shard: shards.reduce((n, [, r]) => n + r.sent.length, 0) };
}

describe.each(["/v3/courses", "/v3/courses/crs_01"])("GET %s with a key revoked after it was used", (path) => {
  it("5 requests: 401 each, the shard's query beside the first check at most, then none", async () => {
    const k = await newApiKey("sch_a", "revoked-after-use");
    await runSteps(env.DIRECTORY, [insertKey(k)]);
    // Twice, so that this isolate knows the key's shard and sends the page with the check.
    for (let i = 0; i < 2; i++) expect((await get(path, k.key)).status).toBe(200);
    const warm = await get(path, k.key);
    expect(warm.status).toBe(200);
    expect(warm.shard).toBeGreaterThan(0);

    await runSteps(env.DIRECTORY, [revokeKey(k.id)]);
    const after = [];
    for (let i = 0; i < 5; i++) after.push(await get(path, k.key));
    expect(after.map((r) => r.status)).toEqual([401, 401, 401, 401, 401]);
    expect(after.map((r) => r.directory)).toEqual([1, 1, 1, 1, 1]);
    // The first may have gone out beside the check, as the warm one did; none after it.
    expect(after[0]!.shard).toBeLessThanOrEqual(warm.shard);
    expect(after.slice(1).map((r) => r.shard)).toEqual([0, 0, 0, 0]);
  });
});
