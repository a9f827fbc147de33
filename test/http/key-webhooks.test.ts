/**
 * What `npm run keys -- revoke KEY_ID` reviews (docs/operations.md § API keys), through
 * scripts/lib/key-webhooks.ts against the Worker itself: the registrations the key created or
 * last changed — a re-pointed one included, whatever its `createdBy` — and, with
 * `--disable-webhooks`, those disabled (`manual`) while the others stay enabled; an API that
 * does not answer, refuses the key or answers more than one page is an `ApiProblem`.
 */
import { env } from "cloudflare:test";
import { exports } from "cloudflare:workers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ApiProblem, reachable, reviewWebhooks, touchedBy } from "../../scripts/lib/key-webhooks";
import { insertKey, newApiKey } from "../../src/db/api-keys";
import { BASE, callJson, loadFixture } from "../support/helpers";
import { runSteps } from "../support/shards";
import { Receivers } from "../support/webhooks/receivers";

const SCHOOL = "sch_key_webhooks";
const rx = new Receivers();

/** The Worker as `fetch`. */
const worker: typeof fetch = (input, init) => exports.default.fetch(new Request(input as string, init));

/** A new key of the school, stored: its plaintext and id. */
async function newKey(label: string) {
  const k = await newApiKey(SCHOOL, label);
  await runSteps(env.DIRECTORY, [insertKey(k)]);
  return k;
}

/** Registers a webhook with `key`. @returns its id. */
async function register(key: string, name: string): Promise<string> {
  const { status, body } = await callJson("/v3/webhooks", { method: "POST", key, json: { url: `https://key-webhooks.example.com/${name}` } });
  expect(status).toBe(201);
  return body.result.id as string;
}

beforeAll(async () => {
  rx.install();
  await loadFixture({ schools: [{ id: SCHOOL, name: "Key webhooks school", apiKeys: [] }] });
});
afterAll(() => rx.restore());

describe("touchedBy", () => {
  it("keeps the records the key created or last changed, in order", () => {
    const records = [
      { id: "1", createdBy: "key_a", updatedBy: "key_a" },
      { id: "2", createdBy: "key_b", updatedBy: "key_a" },
      { id: "3", createdBy: "key_a", updatedBy: "key_b" },
      { id: "4", createdBy: "key_b", updatedBy: "key_b" },
      { id: "5", createdBy: null, updatedBy: null },
    ];
    expect(touchedBy(records, "key_a").map((r) => r.id)).toEqual(["1", "2", "3"]);
    expect(touchedBy(records, "key_c")).toEqual([]);
  });
});

describe("reviewWebhooks against the Worker", () => {
  it("lists what the key created or re-pointed; disabling leaves the others enabled", async () => {
    const a = await newKey("leaked");
    const b = await newKey("legitimate");
    const operator = await newKey("keys revoke");
    const byA = await register(a.key, "a");
    const byB = await register(b.key, "b");
    const untouched = await register(b.key, "b-untouched");
    // The leaked key re-points the legitimate key's registration: createdBy stays b's.
    const repointed = await callJson(`/v3/webhooks/${byB}`, { method: "PATCH", key: a.key, json: { url: "https://attacker.example.com/in" } });
    expect([repointed.status, repointed.body.result.createdBy, repointed.body.result.updatedBy]).toEqual([200, b.id, a.id]);

    const listed = await reviewWebhooks({ base: BASE, key: operator.key, keyId: a.id, disable: false, fetch: worker });
    expect(listed.total).toBe(3);
    expect(listed.problems).toEqual([]);
    expect(listed.webhooks.map((w) => [w.record.id, w.record.enabled, w.disabledNow])).toEqual([
      [byA, true, false],
      [byB, true, false],
    ]);
    expect(listed.webhooks[1]!.record).toMatchObject({ url: "https://attacker.example.com/in", createdBy: b.id, updatedBy: a.id });

    const disabled = await reviewWebhooks({ base: BASE, key: operator.key, keyId: a.id, disable: true, fetch: worker });
    expect(disabled.problems).toEqual([]);
    expect(disabled.webhooks.map((w) => [w.record.id, w.disabledNow])).toEqual([
      [byA, true],
      [byB, true],
    ]);
    for (const id of [byA, byB]) {
      const { body } = await callJson(`/v3/webhooks/${id}`, { key: b.key });
      expect(body.result).toMatchObject({ enabled: false, disabledReason: "manual", updatedBy: operator.id });
    }
    expect((await callJson(`/v3/webhooks/${untouched}`, { key: b.key })).body.result).toMatchObject({ enabled: true, updatedBy: b.id });

    // Run again: the one the key created is listed, disabled already (no change); the re-pointed
    // one was last changed by the operator's key.
    const again = await reviewWebhooks({ base: BASE, key: operator.key, keyId: a.id, disable: true, fetch: worker });
    expect(again.webhooks.map((w) => [w.record.id, w.record.enabled, w.disabledNow])).toEqual([[byA, false, false]]);
  });
});

describe("reviewWebhooks: a Worker of another version", () => {
  it("reads records with fields this checkout lacks or does not know, and disables them", async () => {
    // An older Worker: none of the delivery settings; a newer field the checkout does not know.
    const record = (enabled: boolean) => ({
      id: "wh_old",
      url: "https://old.example.com/in",
      events: ["*"],
      enabled,
      disabledReason: enabled ? null : "manual",
      createdBy: "key_a",
      updatedBy: "key_a",
      someLaterField: 1,
    });
    const patched: string[] = [];
    const older: typeof fetch = async (input, init) => {
      if (init?.method === "PATCH") {
        patched.push(String(input));
        return Response.json({ status: "success", result: record(false) });
      }
      return Response.json({ status: "success", result: [record(true)], pagination: { page: 1, limit: 50, hasMore: false } });
    };
    const review = await reviewWebhooks({ base: "http://127.0.0.1:9", key: "sk_live_x", keyId: "key_a", disable: true, fetch: older });
    expect(review.problems).toEqual([]);
    expect(review.webhooks.map((w) => [w.record.id, w.record.enabled, w.disabledNow])).toEqual([["wh_old", false, true]]);
    expect(patched).toEqual(["http://127.0.0.1:9/v3/webhooks/wh_old"]);
  });
});

describe("reviewWebhooks: an API it cannot use", () => {
  const review = (fetchFn: typeof fetch) => reviewWebhooks({ base: "http://127.0.0.1:9", key: "sk_live_x", keyId: "key_a", disable: true, fetch: fetchFn });

  it("no answer", async () => {
    const refused: typeof fetch = () => Promise.reject(new TypeError("connect ECONNREFUSED"));
    await expect(review(refused)).rejects.toThrow(new ApiProblem("GET http://127.0.0.1:9/v3/webhooks: no answer (connect ECONNREFUSED)"));
    expect(await reachable("http://127.0.0.1:9", refused)).toBe(false);
  });

  it("a key the API does not know (another database's Worker)", async () => {
    await expect(review(worker)).rejects.toThrow(/GET \/v3\/webhooks answered 401 UNAUTHORIZED: .* is it the Worker of this D1 database\?/);
  });

  it("more than one page", async () => {
    const paged: typeof fetch = async () => Response.json({ status: "success", result: [], pagination: { page: 1, limit: 50, hasMore: true } });
    await expect(review(paged)).rejects.toThrow(/more than one page/);
  });
});
