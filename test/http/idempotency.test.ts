/**
 * Idempotent creation of courses (docs/reference.md § "Conventions"): `Idempotency-Key` on POST
 * /v3/courses — a replay answers exactly as the first request plus `Idempotent-Replayed:
 * true`, writes nothing; another body is 422; a malformed key is 400; two racing requests
 * create one course; keys expire after 24 h and the cron prunes them. The same on POST
 * /v3/webhooks, whose keys the hub keeps.
 */
import { env } from "cloudflare:test";
import { beforeAll, describe, expect, it } from "vitest";
import { pruneIdempotencyKeys } from "../../src/db/idempotency";
import { shardBindings } from "../../src/db/shard-names";
import { shardFor } from "../../src/db/shards";
import { feedEvents } from "../support/feed";
import { fixture, KEY_A, KEY_B } from "../support/fixtures";
import { call, callJson, loadFixture } from "../support/helpers";
import { shardOf } from "../support/shards";
import { newSchool } from "../support/webhooks/harness";

beforeAll(async () => {
  await loadFixture(fixture);
});

const course = { name: "Cours idempotent", startDateTime: "2026-10-01T08:00:00Z", endDateTime: "2026-10-01T10:00:00Z", studentIds: ["stu_1"] };
const post = (key: string | undefined, json: unknown = course, apiKey = KEY_A) =>
  call("/v3/courses", { method: "POST", key: apiKey, json, headers: key === undefined ? {} : { "idempotency-key": key } });
/** Courses named `name`, on every shard. */
async function count(name: string): Promise<number> {
  let n = 0;
  for (const b of shardBindings(env))
    n += (await shardFor(env, b).prepare("SELECT count(*) AS n FROM courses WHERE name = ?").bind(name).first<{ n: number }>())!.n;
  return n;
}
/** Events of course `id` in the school's feed (a published outbox row keeps no payload to count by). */
const outboxCount = async (id: string) => (await feedEvents(KEY_A)).filter((e) => (e.data as { course?: { id: string } }).course?.id === id).length;

describe("Idempotency-Key on POST /v3/courses", () => {
  it("a replay answers exactly as the first (status, body, location) plus Idempotent-Replayed, and writes nothing", async () => {
    const json = { ...course, name: "Replay 1" };
    const first = await post("key-replay-1", json);
    const firstBody = await first.text();
    expect(first.status).toBe(201);
    expect(first.headers.get("idempotent-replayed")).toBeNull();
    const again = await post("key-replay-1", json);
    expect(again.status).toBe(201);
    expect(await again.text()).toBe(firstBody);
    expect(again.headers.get("location")).toBe(first.headers.get("location"));
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    expect(await count("Replay 1")).toBe(1);
    expect(await outboxCount(JSON.parse(firstBody).result.id)).toBe(1);
  });

  it("the same key with another body is 422 IDEMPOTENCY_KEY_MISMATCH and writes nothing", async () => {
    await post("key-mismatch", { ...course, name: "Mismatch A" });
    const r = await callJson("/v3/courses", {
      method: "POST",
      key: KEY_A,
      json: { ...course, name: "Mismatch B" },
      headers: { "idempotency-key": "key-mismatch" },
    });
    expect([r.status, r.body.code]).toEqual([422, "IDEMPOTENCY_KEY_MISMATCH"]);
    expect(await count("Mismatch B")).toBe(0);
  });

  it("keys are per school: another school's same key creates its own course", async () => {
    const a = await post("key-shared", { ...course, name: "Shared key", studentIds: [] });
    const b = await post("key-shared", { ...course, name: "Shared key", studentIds: [] }, KEY_B);
    expect([a.status, b.status]).toEqual([201, 201]);
    expect(b.headers.get("idempotent-replayed")).toBeNull();
    expect(await count("Shared key")).toBe(2);
  });

  it.each([
    ["empty", ""],
    ["256 characters", "k".repeat(256)],
    ["a control character", "abc\tdef"],
  ])("a malformed key (%s) is 400 INVALID_PARAMETER naming Idempotency-Key", async (_name, value) => {
    const r = await callJson("/v3/courses", { method: "POST", key: KEY_A, json: { ...course, name: "Malformed key" }, headers: { "idempotency-key": value } });
    expect([r.status, r.body.code, r.body.details]).toEqual([400, "INVALID_PARAMETER", [{ parameter: "Idempotency-Key", message: expect.any(String) }]]);
    expect(await count("Malformed key")).toBe(0);
  });

  it("accepts 255 printable ASCII characters", async () => {
    const r = await post(`${"~ ".repeat(127)}!`, { ...course, name: "Long key" });
    expect(r.status).toBe(201);
  });

  it("two concurrent requests with one key create one course and both answer the same", async () => {
    const json = { ...course, name: "Concurrent" };
    const answers = await Promise.all([post("key-race", json), post("key-race", json), post("key-race", json)]);
    expect(answers.map((r) => r.status)).toEqual([201, 201, 201]);
    const bodies = await Promise.all(answers.map((r) => r.text()));
    expect(new Set(bodies).size).toBe(1);
    expect(new Set(answers.map((r) => r.headers.get("location"))).size).toBe(1);
    expect(answers.filter((r) => r.headers.get("idempotent-replayed") === "true")).toHaveLength(2);
    expect(await count("Concurrent")).toBe(1);
  });

  it("a key older than 24 h is forgotten (a new course), and the cron's prune deletes it", async () => {
    const json = { ...course, name: "Expired key" };
    await post("key-expired", json);
    await (await shardOf("sch_a"))
      .prepare("UPDATE idempotency_keys SET created_at = created_at - ? WHERE key = 'key-expired'")
      .bind(86_400_000 + 1000)
      .run();
    const again = await post("key-expired", json);
    expect([again.status, again.headers.get("idempotent-replayed")]).toEqual([201, null]);
    expect(await count("Expired key")).toBe(2);
    await (await shardOf("sch_a"))
      .prepare("UPDATE idempotency_keys SET created_at = created_at - ? WHERE key = 'key-expired'")
      .bind(86_400_000 + 1000)
      .run();
    expect(await pruneIdempotencyKeys(await shardOf("sch_a"))).toBeGreaterThanOrEqual(1);
    const left = await (await shardOf("sch_a")).prepare("SELECT count(*) AS n FROM idempotency_keys WHERE key = 'key-expired'").first<{ n: number }>();
    expect(left!.n).toBe(0);
  });
});

describe("Idempotency-Key on POST /v3/webhooks (kept by the hub)", () => {
  let key: string;
  beforeAll(async () => {
    ({ key } = await newSchool("idem"));
  });
  const hook = (idem: string | undefined, json: unknown) =>
    call("/v3/webhooks", { method: "POST", key, json, headers: idem === undefined ? {} : { "idempotency-key": idem } });
  const registrations = async () => (await callJson("/v3/webhooks", { key })).body.result as { id: string; url: string }[];

  it("a replay answers exactly as the first (secret included) plus Idempotent-Replayed, and registers nothing more", async () => {
    const json = { url: "https://hooks.example.com/idem-1", events: ["course.created"] };
    const first = await hook("wh-key-1", json);
    const firstBody = await first.text();
    expect([first.status, first.headers.get("idempotent-replayed")]).toEqual([201, null]);
    const again = await hook("wh-key-1", json);
    expect([again.status, again.headers.get("idempotent-replayed"), again.headers.get("location")]).toEqual([201, "true", first.headers.get("location")]);
    expect(await again.text()).toBe(firstBody);
    expect((await registrations()).filter((r) => r.url === json.url)).toHaveLength(1);
  });

  it("another body is 422 IDEMPOTENCY_KEY_MISMATCH; a malformed key is 400 naming Idempotency-Key", async () => {
    await hook("wh-key-2", { url: "https://hooks.example.com/idem-2" });
    const other = await callJson("/v3/webhooks", {
      method: "POST",
      key,
      json: { url: "https://hooks.example.com/idem-2b" },
      headers: { "idempotency-key": "wh-key-2" },
    });
    expect([other.status, other.body.code]).toEqual([422, "IDEMPOTENCY_KEY_MISMATCH"]);
    const bad = await callJson("/v3/webhooks", {
      method: "POST",
      key,
      json: { url: "https://hooks.example.com/idem-3" },
      headers: { "idempotency-key": "x".repeat(256) },
    });
    expect([bad.status, bad.body.code, bad.body.details]).toEqual([400, "INVALID_PARAMETER", [{ parameter: "Idempotency-Key", message: expect.any(String) }]]);
    const urls = (await registrations()).map((r) => r.url);
    expect(urls).not.toContain("https://hooks.example.com/idem-2b");
    expect(urls).not.toContain("https://hooks.example.com/idem-3");
  });

  it("two concurrent requests with one key register once and both answer the same", async () => {
    const json = { url: "https://hooks.example.com/idem-race" };
    const answers = await Promise.all([hook("wh-race", json), hook("wh-race", json), hook("wh-race", json)]);
    expect(answers.map((r) => r.status)).toEqual([201, 201, 201]);
    expect(new Set(await Promise.all(answers.map((r) => r.text()))).size).toBe(1);
    expect(answers.filter((r) => r.headers.get("idempotent-replayed") === "true")).toHaveLength(2);
    expect((await registrations()).filter((r) => r.url === json.url)).toHaveLength(1);
  });
});
