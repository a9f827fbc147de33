/**
 * Moving a school between shards (docs/reference.md § Database shards): the move's steps
 * (src/db/move.ts) run interleaved with reads, writes and event delivery of the same school —
 * no acknowledged write lost, no event lost or delivered twice, no read answered empty or
 * partial, no other school fenced — and every step resumes or undoes.
 */
import { env } from "cloudflare:test";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { abortMove, MoveRefused, type MoveStep, moveSchool } from "../../src/db/move";
import { shardBindings } from "../../src/db/shard-names";
import { shardFor } from "../../src/db/shards";
import type { SchoolEvent } from "../../src/events/types";
import { callJson } from "../support/helpers";
import { loadFixture, publishPayloads, shardNameOf } from "../support/shards";
import { drain, register } from "../support/webhooks/harness";
import { Receivers } from "../support/webhooks/receivers";
import { writeHubUnreachable } from "../support/webhooks/unreachable";

const receivers = new Receivers();
beforeAll(() => receivers.install());
afterAll(() => receivers.restore());

const dbs = () => ({ directory: env.DIRECTORY, shards: Object.fromEntries(shardBindings(env).map((b) => [b, shardFor(env, b)])) });
const publish = publishPayloads;

let n = 0;
/** A school of its own with 120 courses, and another school beside it; both on the first shard. */
async function schools(): Promise<{ id: string; key: string; other: { id: string; key: string } }> {
  n += 1;
  const id = `sch_mv${n}`;
  const other = { id: `sch_mvo${n}`, key: `sk_test_move_other_${n}_0123456789abcdefghij` };
  const key = `sk_test_move_${n}_0123456789abcdefghijklmnop`;
  const courses = Array.from({ length: 120 }, (_, i) => ({
    id: `crs_mv${n}_${String(i).padStart(3, "0")}`,
    schoolId: id,
    name: `Cours ${i}`,
    startDateTime: `2026-09-${String(1 + (i % 28)).padStart(2, "0")}T08:00:00Z`,
    endDateTime: `2026-09-${String(1 + (i % 28)).padStart(2, "0")}T10:00:00Z`,
    groupIds: ["grp_1"],
    studentIds: ["stu_1", "stu_2"],
    professors: [{ professorId: "prf_1", signed: i % 2 === 0 }],
  }));
  await loadFixture(
    {
      schools: [
        { id, name: "École en partance", apiKeys: [key] },
        { id: other.id, name: "École voisine", apiKeys: [other.key] },
      ],
      groups: [{ id: "grp_1", schoolId: id, name: "G1" }],
      students: ["stu_1", "stu_2"].map((s) => ({ id: s, schoolId: id, firstName: "A", lastName: s, email: `${s}@example.org` })),
      professors: [{ id: "prf_1", schoolId: id, firstName: "P", lastName: "Prof", email: "p@example.org" }],
      courses,
    },
    undefined,
    env,
    "SHARD_0",
  );
  return { id, key, other };
}

const course = (name: string) => ({ name, startDateTime: "2026-10-01T08:00:00Z", endDateTime: "2026-10-01T10:00:00Z", studentIds: ["stu_1"] });

/** Every course id of the key's school, by pages of 100 through the API. */
async function allIds(key: string): Promise<string[]> {
  const ids: string[] = [];
  for (let page = 1; ; page++) {
    const r = await callJson(`/v3/courses?limit=100&page=${page}`, { key });
    expect(r.status).toBe(200);
    ids.push(...r.body.result.map((c: { id: string }) => c.id));
    if (!r.body.pagination.hasMore) return ids.sort();
  }
}

const rowsOn = async (binding: string, schoolId: string) =>
  (await shardFor(env, binding).prepare("SELECT count(*) AS n FROM courses WHERE school_id = ?").bind(schoolId).first<{ n: number }>())!.n;

describe("npm run shards -- move, step by step", () => {
  it("interleaved with reads, writes and events of the school: nothing lost, nothing twice, no read empty or partial, the other school never fenced", async () => {
    const s = await schools();
    expect(await shardNameOf(s.id)).toBe("SHARD_0");
    await register(s.key, "https://move.example.com/hook");
    const acknowledged: string[] = [];
    const write = async (name: string) => {
      const r = await callJson("/v3/courses", { method: "POST", key: s.key, json: course(name) });
      if (r.status === 201) acknowledged.push(r.body.result.id);
      return r;
    };
    expect((await write("avant")).status).toBe(201);
    let expected = await allIds(s.key); // the reads below see the isolate's cached shard first
    expect(expected).toHaveLength(121);
    const seen: [MoveStep | "deleted", number, number, string | null][] = [];
    await moveSchool(dbs(), s.id, "SHARD_1", {
      publish,
      limits: { pageRows: 7, batchBytes: 2_000 }, // many pages and batches
      onStep: async (step) => {
        // A read answers every course, from whichever shard holds the school now.
        expect(await allIds(s.key)).toEqual(expected);
        const w = await write(`pendant ${step}`);
        seen.push([
          step,
          w.status,
          (await callJson("/v3/courses", { method: "POST", key: s.other.key, json: { ...course(step), studentIds: [] } })).status,
          w.res.headers.get("retry-after"),
        ]);
        if (w.status === 201) expected = [...expected, w.body.result.id].sort();
        else expect([w.status, w.body.code]).toEqual([503, "SCHOOL_MOVING"]);
      },
    });
    // Writes are fenced from the fence to the switch, with Retry-After; the other school never.
    expect(seen).toEqual([
      ["fenced", 503, 201, "5"],
      ["drained", 503, 201, "5"],
      ["copied", 503, 201, "5"],
      ["verified", 503, 201, "5"],
      ["switched", 201, 201, null],
      ["deleted", 201, 201, null],
    ]);
    expect(await shardNameOf(s.id)).toBe("SHARD_1");
    expect(await allIds(s.key)).toEqual(expected);
    expect([await rowsOn("SHARD_0", s.id), await rowsOn("SHARD_1", s.id)]).toEqual([0, 121 + 2]);
    expect((await write("après")).status).toBe(201);
    // Every acknowledged write's course.created reached the receiver, once.
    await drain(s.id);
    const created = receivers
      .to("move.example.com")
      .filter((r) => r.event.type === "course.created")
      .map((r) => (r.event.data.course as { id: string }).id);
    expect(created.sort()).toEqual([...acknowledged].sort());
    expect(new Set(receivers.to("move.example.com").map((r) => r.event.id)).size).toBe(receivers.to("move.example.com").length);
  });

  it("an event left unpublished in the old shard's outbox is published by the drain, once", async () => {
    const s = await schools();
    await register(s.key, "https://drain.example.com/hook");
    // The request's own publish fails: the row waits for the sweep, unpublished, payload whole.
    const post = await writeHubUnreachable(s.key, "POST", "/v3/courses", course("à publier"));
    expect(post.status).toBe(201);
    const r = { body: (await post.json()) as { result: { id: string } } };
    const old = shardFor(env, "SHARD_0");
    const { payload } = (await old.prepare("SELECT payload FROM outbox WHERE school_id = ? AND published_at IS NULL").bind(s.id).first<{ payload: string }>())!;
    const event = JSON.parse(payload) as SchoolEvent;
    await moveSchool(dbs(), s.id, "SHARD_1", { publish });
    const moved = await shardFor(env, "SHARD_1")
      .prepare("SELECT published_at FROM outbox WHERE event_id = ?")
      .bind(event.id)
      .first<{ published_at: number | null }>();
    expect(moved!.published_at).not.toBeNull();
    await drain(s.id);
    expect(receivers.to("drain.example.com").map((x) => (x.event.data.course as { id: string }).id)).toEqual([r.body.result.id]);
  });

  it("a write that passed the directory's check before the fence cannot commit on the old shard", async () => {
    const s = await schools();
    await expect(
      moveSchool(dbs(), s.id, "SHARD_1", {
        onStep: async (step) => {
          if (step !== "fenced") return;
          // The write's batch reaches the old shard after the fence: its outbox row is refused, so nothing commits.
          const insert = shardFor(env, "SHARD_0")
            .prepare("INSERT INTO outbox (event_id, school_id, payload, created_at) VALUES ('evt_late', ?, '{}', 0)")
            .bind(s.id);
          await expect(insert.run()).rejects.toThrow(/SCHOOL_MOVING/);
          throw new Error("interrupted");
        },
      }),
    ).rejects.toThrow("interrupted");
    expect(await abortMove(dbs(), s.id)).toBe("undone");
  });
});

describe("every step resumes, or undoes", () => {
  it.each(["fenced", "drained", "copied", "verified", "switched"] as const)("a move interrupted after %s finishes when run again", async (at) => {
    const s = await schools();
    const before = await allIds(s.key);
    await expect(
      moveSchool(dbs(), s.id, "SHARD_1", {
        onStep: (step) => {
          if (step === at) throw new Error("interrupted");
        },
      }),
    ).rejects.toThrow("interrupted");
    // Reads still answer every course mid-move.
    expect(await allIds(s.key)).toEqual(before);
    expect(await moveSchool(dbs(), s.id, "SHARD_1")).toMatchObject({ result: "moved", from: "SHARD_0", to: "SHARD_1" });
    expect(await allIds(s.key)).toEqual(before);
    expect([await shardNameOf(s.id), await rowsOn("SHARD_0", s.id), await rowsOn("SHARD_1", s.id)]).toEqual(["SHARD_1", 0, 120]);
    const row = await env.DIRECTORY.prepare("SELECT state, move_from, move_to, move_step FROM schools WHERE id = ?").bind(s.id).first();
    expect(row).toEqual({ state: "active", move_from: null, move_to: null, move_step: null });
  });

  it.each(["fenced", "drained", "copied", "verified"] as const)(
    "a move interrupted after %s is undone by --abort: the school writes on its old shard again",
    async (at) => {
      const s = await schools();
      await expect(
        moveSchool(dbs(), s.id, "SHARD_1", {
          onStep: (step) => {
            if (step === at) throw new Error("interrupted");
          },
        }),
      ).rejects.toThrow("interrupted");
      expect(await abortMove(dbs(), s.id)).toBe("undone");
      expect([await shardNameOf(s.id), await rowsOn("SHARD_0", s.id), await rowsOn("SHARD_1", s.id)]).toEqual(["SHARD_0", 120, 0]);
      expect((await callJson("/v3/courses", { method: "POST", key: s.key, json: course("après abandon") })).status).toBe(201);
      expect(await allIds(s.key)).toHaveLength(121);
    },
  );

  it("a move to another shard while one is under way is refused, nothing changed", async () => {
    const s = await schools();
    await expect(moveSchool(dbs(), s.id, "SHARD_1", { onStep: () => Promise.reject(new Error("interrupted")) })).rejects.toThrow("interrupted");
    await expect(moveSchool(dbs(), s.id, "SHARD_0")).rejects.toThrow(MoveRefused);
    expect(await abortMove(dbs(), s.id)).toBe("undone");
  });
});

describe("a read never answers from a shard that does not hold the school", () => {
  it("a directory naming a shard without the school's rows answers 500, never an empty page", async () => {
    const s = await schools();
    expect(await allIds(s.key)).toHaveLength(120); // the isolate now knows the key's shard
    // An operator's mistake: the directory names the other shard, which holds nothing of the school.
    await env.DIRECTORY.prepare("UPDATE schools SET shard = 'SHARD_1' WHERE id = ?").bind(s.id).run();
    const r = await callJson("/v3/courses?limit=5", { key: s.key });
    expect([r.status, r.body.code]).toEqual([500, "INTERNAL_ERROR"]);
    await env.DIRECTORY.prepare("UPDATE schools SET shard = 'SHARD_0' WHERE id = ?").bind(s.id).run();
    expect(await allIds(s.key)).toHaveLength(120);
  });
});

describe("what a move refuses or skips", () => {
  it("a move to the school's own shard is a no-op", async () => {
    const s = await schools();
    expect(await moveSchool(dbs(), s.id, "SHARD_0")).toMatchObject({ result: "noop" });
    expect(await env.DIRECTORY.prepare("SELECT shard, state FROM schools WHERE id = ?").bind(s.id).first()).toEqual({ shard: "SHARD_0", state: "active" });
  });

  it("an unknown school or shard changes nothing", async () => {
    const s = await schools();
    await expect(moveSchool(dbs(), "sch_nowhere", "SHARD_1")).rejects.toThrow(/no school "sch_nowhere"/);
    await expect(moveSchool(dbs(), s.id, "SHARD_9")).rejects.toThrow(/no shard "SHARD_9"/);
    expect(await env.DIRECTORY.prepare("SELECT shard, state, move_step FROM schools WHERE id = ?").bind(s.id).first()).toEqual({
      shard: "SHARD_0",
      state: "active",
      move_step: null,
    });
    expect((await callJson("/v3/courses", { method: "POST", key: s.key, json: course("pas bougé") })).status).toBe(201);
  });
});
