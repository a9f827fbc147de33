/**
 * A tombstone keeps only what the deregistration promise needs (docs/reference.md § DELETE
 * /v3/webhooks/{id} (beta): the registration's data erased, keeping that the id is deleted):
 * from the DELETE's 200 on, the hub's row of the registration holds none of its URL (which
 * often carries a token), subscription, description, filter, creator, secrets or header
 * values — read in the hub's own SQLite — and the id still answers 404 and stays taken.
 */
import { env } from "cloudflare:workers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { hubFor } from "../../src/events/hub-client";
import { callJson } from "../support/helpers";
import { courseEvent, drain, inHub, newSchool, register } from "../support/webhooks/harness";
import { SimulatedPlatform } from "../support/webhooks/platform-sim";

const rx = new SimulatedPlatform();
beforeAll(() => {
  rx.install();
});
afterAll(() => rx.restore());

describe("a DELETE", () => {
  it("erases the registration's URL, subscription, description, filter and creator from the hub's row at once", async () => {
    const { schoolId, key } = await newSchool("erasefields");
    const token = "tok-erase-7f3c9a";
    const hook = await register(key, `https://erasefields.example.com/in?token=${token}`, {
      events: ["course.updated", "course.created"],
      description: "Planning sync of the Lyon campus",
      filter: { trainingId: ["trn_erase_42"], groupId: ["grp_erase_7"] },
      headers: { "x-api-key": "erase-header-value" },
    });
    // Used: its courier holds state, so the DELETE closes it.
    await hubFor(env, schoolId).publish([courseEvent(schoolId)]);
    await drain(schoolId);
    const row = () =>
      inHub(schoolId, (_h, state) => state.storage.sql.exec<Record<string, SqlStorageValue>>(`SELECT * FROM webhooks WHERE id = ?`, hook.id).toArray());
    const [live] = await row();
    const creator = live!.created_by as string;
    expect(creator).toEqual(expect.any(String));
    const before = JSON.stringify(live);
    for (const value of [token, "Lyon campus", "trn_erase_42", "grp_erase_7", "course.created", "erase-header-value", hook.secret]) {
      expect(before, `${value} is stored while the registration lives`).toContain(value);
    }

    expect((await callJson(`/v3/webhooks/${hook.id}`, { method: "DELETE", key })).status).toBe(200);
    const [tomb] = await row();
    expect(tomb).toMatchObject({ url: "", events: "[]", description: null, filter: null, created_by: null, secret: "", previous_secret: null, headers: "{}" });
    const after = JSON.stringify(tomb);
    for (const value of [
      token,
      "erasefields.example.com",
      "Lyon campus",
      "trn_erase_42",
      "grp_erase_7",
      "course.",
      "erase-header-value",
      hook.secret,
      creator,
    ]) {
      expect(after, `${value} is erased`).not.toContain(value);
    }
    expect(tomb!.deleted_at).toEqual(expect.any(Number));

    // The promise's answers stand on what is kept: the id is deleted, and stays so.
    expect((await callJson(`/v3/webhooks/${hook.id}`, { key })).status).toBe(404);
    expect((await callJson(`/v3/webhooks/${hook.id}`, { method: "DELETE", key })).status).toBe(404);
    expect((await callJson("/v3/webhooks", { key })).body.result).toEqual([]);
    // Events published after it reach nothing, and the feed still serves the school's events.
    const later = courseEvent(schoolId, "course.created", 2);
    expect((await hubFor(env, schoolId).publish([later])).deliveries).toBe(0);
    const feed = await callJson("/v3/events", { key });
    expect(feed.body.result.map((e: { id: string }) => e.id)).toContain(later.id);
  });
});
