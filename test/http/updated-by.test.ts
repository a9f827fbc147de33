/**
 * Registrations record `updatedBy` (docs/reference.md § "POST /v3/webhooks"): the id of the API
 * key behind the last change by a request — the POST, a PATCH that changed something, a secret
 * rotation — so that a leaked key's changes can be found after it is revoked; rows stored
 * before the column read their creator.
 */
import { env } from "cloudflare:test";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { insertKey, newApiKey } from "../../src/db/api-keys";
import { migrate as migrateHub } from "../../src/webhooks/hub/storage";
import { callJson, loadFixture } from "../support/helpers";
import { runSteps } from "../support/shards";
import { inHub, mintPortalSession, newSchool, ownStorage, schemaAsOf } from "../support/webhooks/harness";
import { Receivers } from "../support/webhooks/receivers";

const SCHOOL = "sch_updated_by";
const rx = new Receivers();

/** A new key of the school, stored: its plaintext and id. */
async function newKey(label: string) {
  const k = await newApiKey(SCHOOL, label);
  await runSteps(env.DIRECTORY, [insertKey(k)]);
  return k;
}

const record = async (key: string, id: string) =>
  (await callJson(`/v3/webhooks/${id}`, { key })).body.result as { enabled: boolean; createdBy: string | null; updatedBy: string | null };

beforeAll(async () => {
  rx.install();
  await loadFixture({ schools: [{ id: SCHOOL, name: "Updated-by school", apiKeys: [] }] });
});
afterAll(() => rx.restore());

describe("registrations record updatedBy", () => {
  it("POST sets createdBy and updatedBy; PATCH (a disable and an enable included) and rotate set updatedBy only; a PATCH changing nothing keeps it", async () => {
    const a = await newKey("a");
    const b = await newKey("b");
    const c = await newKey("c");
    const created = await callJson("/v3/webhooks", { method: "POST", key: a.key, json: { url: "https://updated-by.example.com/a" } });
    expect(created.status).toBe(201);
    const id = created.body.result.id as string;
    expect([created.body.result.createdBy, created.body.result.updatedBy]).toEqual([a.id, a.id]);

    // Re-pointed by another key: the record names it.
    const patched = await callJson(`/v3/webhooks/${id}`, { method: "PATCH", key: b.key, json: { url: "https://updated-by.example.com/b" } });
    expect(patched.status).toBe(200);
    expect([patched.body.result.createdBy, patched.body.result.updatedBy]).toEqual([a.id, b.id]);
    expect(await record(a.key, id)).toMatchObject({ createdBy: a.id, updatedBy: b.id });

    // A rotation through a portal session (a link minted by a third key, redeemed) records that key.
    const link = (await mintPortalSession(c.key, {})).token;
    const redeemed = await callJson("/v3/portal-sessions/redeem", { method: "POST", key: link });
    expect(redeemed.status).toBe(201);
    const token = redeemed.body.result.token as string;
    expect((await callJson(`/v3/webhooks/${id}/secret/rotate`, { method: "POST", key: token })).status).toBe(200);
    expect(await record(a.key, id)).toMatchObject({ createdBy: a.id, updatedBy: c.id });

    // An empty PATCH changes nothing, so records nothing.
    expect((await callJson(`/v3/webhooks/${id}`, { method: "PATCH", key: b.key, json: {} })).status).toBe(200);
    expect(await record(a.key, id)).toMatchObject({ createdBy: a.id, updatedBy: c.id });

    // A disable and an enable are changes too (an operator's disable names its key).
    expect((await callJson(`/v3/webhooks/${id}`, { method: "PATCH", key: b.key, json: { enabled: false } })).status).toBe(200);
    expect(await record(a.key, id)).toMatchObject({ enabled: false, updatedBy: b.id });
    expect((await callJson(`/v3/webhooks/${id}`, { method: "PATCH", key: a.key, json: { enabled: true } })).status).toBe(200);
    expect(await record(a.key, id)).toMatchObject({ enabled: true, updatedBy: a.id });
  });

  it("a registration stored before the column reads its creator as updatedBy once migrated", async () => {
    const { schoolId, key } = await newSchool("updby");
    await inHub(schoolId, (hub) => {
      const sql = ownStorage(hub).sql;
      // Back to schema version 4 (created_by, no updated_by), with a registration written then.
      schemaAsOf(sql, 4, migrateHub);
      sql.exec(
        "INSERT INTO webhooks (id, url, events, headers, secret, created_at, updated_at, created_by) VALUES ('wh_before_upd', 'https://old.example.com/in', '[\"*\"]', '{}', 'whsec_x', 1, 1, 'key_old')",
      );
      migrateHub(sql);
    });
    const { status, body } = await callJson("/v3/webhooks/wh_before_upd", { key });
    expect([status, body.result.createdBy, body.result.updatedBy]).toEqual([200, "key_old", "key_old"]);
  });
});
