/**
 * Read consistency at the edge (docs/reference.md § "Conventions"; docs/architecture.md § "Invariants"): course
 * routes run in a D1 session and answer `x-d1-bookmark`; a client's bookmark makes a read at
 * least as fresh as the response it came from; a malformed one is a 400 naming the header.
 *
 * Replica lag does not exist locally: the read-your-writes tests run the Worker over the
 * simulated replicated D1 of test/support/replica-sim.ts (its source cited there).
 */
import { applyD1Migrations, createExecutionContext, env, waitOnExecutionContext } from "cloudflare:test";
import { beforeAll, describe, expect, it } from "vitest";
import { shardFor } from "../../src/db/shards";
import worker from "../../src/index";
import { fixture, KEY_A } from "../support/fixtures";
import { BASE, callJson, loadFixture } from "../support/helpers";
import { checkResponse } from "../support/openapi-check";
import { ReplicatedD1 } from "../support/replica-sim";
import { shardNameOf } from "../support/shards";

const BOOKMARK = "x-d1-bookmark";
const course = { name: "Séance de rattrapage", startDateTime: "2026-10-01T08:00:00Z", endDateTime: "2026-10-01T10:00:00Z" };

beforeAll(async () => {
  await loadFixture(fixture);
});

describe("x-d1-bookmark on every course route", () => {
  it("is returned by each course operation, errors that reached the database included", async () => {
    const created = await callJson("/v3/courses", { method: "POST", key: KEY_A, json: course });
    const id = created.body.result.id as string;
    const responses = [
      created,
      await callJson("/v3/courses?limit=1", { key: KEY_A }),
      await callJson("/v3/courses:search", { method: "POST", key: KEY_A, json: { limit: 1 } }),
      await callJson(`/v3/courses/${id}`, { key: KEY_A }),
      await callJson(`/v3/courses/${id}`, { method: "PATCH", key: KEY_A, json: { classroom: "C1" } }),
      await callJson("/v3/courses/crs_nope", { key: KEY_A }),
      await callJson(`/v3/courses/${id}`, { method: "PATCH", key: KEY_A, json: { classroom: "C2" }, headers: { "if-match": '"1"' } }),
    ];
    expect(responses.map((r) => r.status)).toEqual([201, 200, 200, 200, 200, 404, 412]);
    for (const r of responses) expect(r.res.headers.get(BOOKMARK)).toMatch(/^[0-9A-Za-z-]{1,256}$/);
  });

  it("a client's valid bookmark is accepted on reads and writes", async () => {
    const first = await callJson("/v3/courses?limit=1", { key: KEY_A });
    const bookmark = first.res.headers.get(BOOKMARK)!;
    const again = await callJson("/v3/courses?limit=1", { key: KEY_A, headers: { [BOOKMARK]: bookmark } });
    expect(again.status).toBe(200);
    const write = await callJson("/v3/courses", { method: "POST", key: KEY_A, json: course, headers: { [BOOKMARK]: bookmark } });
    expect(write.status).toBe(201);
  });
});

describe("a malformed bookmark", () => {
  it.each([
    ["empty", ""],
    ["257 characters", "a".repeat(257)],
    ["a space", "0000 0001"],
    ["an underscore", "abc_def"],
    // D1's session constraints are not bookmarks: a client may not pin reads to the primary.
    ["the constraint first-primary", "first-primary"],
    ["the constraint first-unconstrained", "first-unconstrained"],
    ["a constraint in capitals", "FIRST-PRIMARY"],
  ])("(%s) is 400 INVALID_PARAMETER naming x-d1-bookmark on every course route", async (_name, value) => {
    for (const [path, method, json] of [
      ["/v3/courses", "GET", undefined],
      ["/v3/courses:search", "POST", {}],
      ["/v3/courses/crs_01", "GET", undefined],
      ["/v3/courses", "POST", course],
      ["/v3/courses/crs_01", "PATCH", { classroom: "B204" }],
    ] as const) {
      const r = await callJson(path, { method, key: KEY_A, json, headers: { [BOOKMARK]: value } });
      expect([path, method, r.status, r.body.code, r.body.details]).toEqual([
        path,
        method,
        400,
        "INVALID_PARAMETER",
        [{ parameter: BOOKMARK, message: expect.any(String) }],
      ]);
    }
  });

  it("still answers 401 first without a valid key", async () => {
    const r = await callJson("/v3/courses", { key: "sk_test_unknown", headers: { [BOOKMARK]: "bad!" } });
    expect([r.status, r.body.code]).toEqual([401, "UNAUTHORIZED"]);
  });
});

describe("read-your-writes across requests (simulated replica lag)", () => {
  let sim: ReplicatedD1;
  /** The shard of sch_a, which the simulated replicated database replaces. */
  let shard: string;

  /** Calls the Worker with the simulated replicated database as the school's shard binding. */
  async function send(path: string, init: { method?: string; json?: unknown; bookmark?: string | null } = {}) {
    const headers: Record<string, string> = { authorization: `Bearer ${KEY_A}` };
    if (init.json !== undefined) headers["content-type"] = "application/json";
    if (init.bookmark) headers[BOOKMARK] = init.bookmark;
    const method = init.method ?? "GET";
    const request = new Request(`${BASE}${path}`, { method, headers, body: init.json === undefined ? undefined : JSON.stringify(init.json) });
    const exec = createExecutionContext();
    const res = await worker.fetch(request as Request<unknown, IncomingRequestCfProperties>, { ...env, [shard]: sim.binding() }, exec);
    await waitOnExecutionContext(exec);
    await checkResponse(method, `${BASE}${path}`, res);
    return { status: res.status, body: (await res.json()) as any, bookmark: res.headers.get(BOOKMARK), timing: res.headers.get("server-timing") ?? "" };
  }

  beforeAll(async () => {
    shard = await shardNameOf("sch_a");
    await applyD1Migrations(env.TEST_REPLICA, env.TEST_SHARD_MIGRATIONS);
    sim = new ReplicatedD1(shardFor(env, shard), env.TEST_REPLICA);
    // The replica starts as a copy of the primary's data.
    await loadFixture(fixture, undefined, { ...env, [shard]: env.TEST_REPLICA });
  });

  it("a read without a bookmark may lag; with the write's bookmark it sees the write, in one round trip", async () => {
    const created = await send("/v3/courses", { method: "POST", json: course });
    expect(created.status).toBe(201);
    const id = created.body.result.id as string;
    expect(created.bookmark).toMatch(/^sim-/);

    // The simulated replica has not caught up: without a bookmark the course is not there yet.
    const stale = await send(`/v3/courses/${id}`);
    expect(stale.status).toBe(404);

    const fresh = await send(`/v3/courses/${id}`, { bookmark: created.bookmark });
    expect(fresh.status).toBe(200);
    expect(fresh.body.result.name).toBe(course.name);
    expect(fresh.timing).toContain('"D1 round trips: 1"');
    expect(fresh.bookmark! >= created.bookmark!).toBe(true);

    // A PATCH, then a listing with the PATCH's bookmark sees the new name; the replica
    // (caught up only to the creation) still serves the old one without it.
    const patched = await send(`/v3/courses/${id}`, { method: "PATCH", json: { name: "Renommé" }, bookmark: fresh.bookmark });
    expect([patched.status, patched.body.result.version]).toEqual([200, 2]);
    const lagging = await send(`/v3/courses:search`, { method: "POST", json: { courseId: [id] } });
    expect(lagging.body.result.map((c: any) => [c.name, c.version])).toEqual([[course.name, 1]]);
    const listed = await send(`/v3/courses:search`, { method: "POST", json: { courseId: [id] }, bookmark: patched.bookmark });
    expect(listed.body.result.map((c: any) => [c.name, c.version])).toEqual([["Renommé", 2]]);
    expect(listed.timing).toContain('"D1 round trips: 1"');
  });

  it("reads without a bookmark go to a replica; writes go to the primary", async () => {
    const before = { ...sim.served };
    await send("/v3/courses?limit=1");
    expect(sim.served.replica - before.replica).toBe(1);
    expect(sim.served.primary - before.primary).toBe(0);
    const created = await send("/v3/courses", { method: "POST", json: course });
    expect(created.status).toBe(201);
    expect(sim.served.primary - before.primary).toBeGreaterThanOrEqual(2);
    expect(sim.served.replica - before.replica).toBe(1);
  });
});
