/**
 * One vitest fuzz file: its schools, a property over `routes` (fixed seed, shrinking on,
 * stopping at the first off-contract answer), and the read school's data unchanged after it.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Receivers } from "../support/webhooks/receivers";
import { fuzz, snapshotSchool, Tally } from "./oracle";
import { type FuzzContext, requestArb } from "./requests";
import { d1Fingerprint, send, setUpSchools } from "./workerd";

/** Declares the fuzz tests of one file: `runs` requests over `routes`, seeded with `seed`. */
export function fuzzSuite(title: string, routes: string[], runs: number, seed: number): void {
  // Deliveries of the write school's registrations end here, never on the network; restored
  // once they are deregistered (the next file's setup aborts every object and alarm).
  const receivers = new Receivers();
  const tally = new Tally();
  let ctx: FuzzContext;
  let before: { api: Awaited<ReturnType<typeof snapshotSchool>>; d1: Record<string, string> };

  beforeAll(async () => {
    receivers.install();
    ctx = await setUpSchools();
    before = { api: await snapshotSchool(send, ctx.readKey), d1: await d1Fingerprint("sch_a") };
  });
  afterAll(async () => {
    console.log(`${title}\n${tally.summary()}`);
    // Deregister the write school's registrations: once deleted, no attempt to them starts,
    // so no delivery outlives the file (and its fetch spy).
    const headers = { authorization: `Bearer ${ctx.writeKey}` };
    const list = (await (await send({ method: "GET", path: "/v3/webhooks", headers })).json()) as { result: { id: string }[] };
    for (const hook of list.result) await send({ method: "DELETE", path: `/v3/webhooks/${hook.id}`, headers });
    receivers.restore();
  });

  describe(title, () => {
    it(`${runs} hostile requests: no 5xx, the envelope, x-request-id, no 2xx for a request that breaks the contract`, async () => {
      await fuzz({ send, arbitrary: requestArb(ctx, routes), runs, seed, stopOnFailure: true, tally });
      expect(tally.requests).toBeGreaterThanOrEqual(runs * 0.9);
      expect(tally.valid).toBeGreaterThan(0);
      expect(tally.invalid).toBeGreaterThan(0);
    }, 180_000);

    it("leaves the read school's data unchanged (API snapshot and D1 rows)", async () => {
      expect(await snapshotSchool(send, ctx.readKey)).toEqual(before.api);
      expect(await d1Fingerprint("sch_a")).toEqual(before.d1);
    });
  });
}
