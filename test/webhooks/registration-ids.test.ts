/**
 * A deleted registration's id is never reused (docs/reference.md § DELETE /v3/webhooks/{id},
 * promise 3): not by the registrations created after it, not when a new id happens to be
 * minted equal to it (the hub mints again), and not by replaying the idempotent POST that
 * created it (the answer is replayed, the registration stays deleted).
 */
import { afterEach, describe, expect, it, vi } from "vitest";
import { callJson } from "../support/helpers";
import { newSchool, register } from "../support/webhooks/harness";
import { SimulatedPlatform } from "../support/webhooks/platform-sim";

let sim: SimulatedPlatform | undefined;
afterEach(() => {
  vi.restoreAllMocks();
  sim?.restore();
  sim = undefined;
});

const del = (key: string, id: string) => callJson(`/v3/webhooks/${id}`, { method: "DELETE", key });
const ids = async (key: string) => ((await callJson("/v3/webhooks", { key })).body.result as { id: string }[]).map((h) => h.id);

describe("a deleted registration's id", () => {
  it("is never given to a registration created after it", async () => {
    sim = new SimulatedPlatform().install();
    const { key } = await newSchool("ids");
    const gone = await register(key, "https://ids.example.com/gone");
    expect((await del(key, gone.id)).status).toBe(200);
    const later: string[] = [];
    for (let i = 0; i < 40; i++) later.push((await register(key, `https://ids.example.com/${i}`)).id);
    expect(later).not.toContain(gone.id);
    expect(new Set(later).size).toBe(40);
    expect((await callJson(`/v3/webhooks/${gone.id}`, { key })).status).toBe(404);
    expect((await del(key, gone.id)).status).toBe(404);
  });

  it("is not reused when the hub mints it again: a second id is minted", async () => {
    // A virtual clock: both creations mint at the same instant, and the random part is forced
    // to zeros for the first id each creation mints, so the second creation's first id is the deleted one's.
    sim = SimulatedPlatform.virtual().install();
    const { key } = await newSchool("collide");
    const random = crypto.getRandomValues.bind(crypto);
    let forced = 0;
    let minted = 0;
    vi.spyOn(crypto, "getRandomValues").mockImplementation(((array: Uint8Array) => {
      const fromHub = array instanceof Uint8Array && array.length === 16 && /webhooks\/hub\/registrations/.test(new Error().stack ?? "");
      if (fromHub) minted += 1;
      if (fromHub && forced > 0) {
        forced -= 1;
        return array.fill(0);
      }
      return random(array);
    }) as typeof crypto.getRandomValues);
    forced = 1;
    const first = await register(key, "https://collide.example.com/a");
    expect(first.id).toMatch(/^wh_[0-9A-Z]{10}0{16}$/);
    expect((await del(key, first.id)).status).toBe(200);
    forced = 1;
    minted = 0;
    const second = await register(key, "https://collide.example.com/b");
    // The first id it minted was the deleted one: it minted another.
    expect(minted).toBe(2);
    expect(second.id).not.toBe(first.id);
    expect(await ids(key)).toEqual([second.id]);
    expect((await callJson(`/v3/webhooks/${first.id}`, { key })).status).toBe(404);
  });

  it("replaying the idempotent POST that created it answers 404 (its answer was erased), and creates nothing", async () => {
    sim = new SimulatedPlatform().install();
    const { key } = await newSchool("idemids");
    const json = { url: "https://idem-ids.example.com/in" };
    const headers = { "idempotency-key": "create-once" };
    const first = await callJson("/v3/webhooks", { method: "POST", key, json, headers });
    expect(first.status).toBe(201);
    const id = first.body.result.id as string;
    expect((await del(key, id)).status).toBe(200);
    const replay = await callJson("/v3/webhooks", { method: "POST", key, json, headers });
    expect([replay.status, replay.body.code]).toEqual([404, "WEBHOOK_NOT_FOUND"]);
    // The id stays deleted: listed nowhere, 404 everywhere.
    expect(await ids(key)).toEqual([]);
    expect((await callJson(`/v3/webhooks/${id}`, { key })).status).toBe(404);
    expect((await del(key, id)).status).toBe(404);
  });
});
