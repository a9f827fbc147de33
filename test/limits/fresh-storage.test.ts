/**
 * The per-file reset of the runtime that the files of a vitest worker share
 * (test/support/fresh-storage.ts, run by setup.ts before each file): what a file wrote — D1
 * rows in the directory and the shards, a Durable Object's storage, its alarm and its
 * in-memory state — is gone, and every database is migrated and guarded again.
 */
import { env, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { expect, it } from "vitest";
import { fixture } from "../support/fixtures";
import { d1Bindings, freshStorage, freshStorageRanFor } from "../support/fresh-storage";
import { loadFixture } from "../support/helpers";
import { SEAM_TRIGGERS_SQL } from "../support/production-limits";
import { hubStub, newSchool } from "../support/webhooks/harness";

const testEnv = env as unknown as Record<string, D1Database>;
const USER_TABLES =
  "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' AND name NOT LIKE '\\_cf\\_%' ESCAPE '\\' AND name <> 'd1_migrations'";

/** Each binding's rows (all its tables together), applied migrations and guard triggers. */
async function contents(): Promise<Record<string, { rows: number; migrations: number; guards: number }>> {
  const out: Record<string, { rows: number; migrations: number; guards: number }> = {};
  for (const b of d1Bindings()) {
    const db = testEnv[b]!;
    const { results: tables } = await db.prepare(USER_TABLES).all<{ name: string }>();
    let rows = 0;
    for (const { name } of tables) rows += (await db.prepare(`SELECT count(*) AS n FROM "${name}"`).first<number>("n"))!;
    const migrations = (await db.prepare("SELECT count(*) AS n FROM d1_migrations").first<number>("n"))!;
    const guards = (await db.prepare(SEAM_TRIGGERS_SQL).all()).results.length;
    out[b] = { rows, migrations, guards };
  }
  return out;
}

it("setup.ts ran it for this file", () => {
  expect(freshStorageRanFor()).toBe(expect.getState().testPath);
  expect(freshStorageRanFor()).toMatch(/fresh-storage\.test\.ts$/);
});

it("a file's D1 rows, objects' storage, alarms and in-memory state are gone; the databases are migrated and guarded again", async () => {
  // What the migrations leave (some seed rows) is the state every file starts from.
  const empty = await contents();
  await loadFixture(fixture);
  const { schoolId } = await newSchool("fresh");
  await runInDurableObject(hubStub(schoolId), async (instance, state) => {
    await state.storage.put("fresh-storage-probe", 1);
    await state.storage.setAlarm(Date.now() + 3_600_000);
    (instance as unknown as { probe?: boolean }).probe = true;
  });
  const before = await contents();
  for (const b of d1Bindings()) expect(before[b]!.rows, b).toBeGreaterThan(empty[b]!.rows);

  await freshStorage();

  const after = await contents();
  for (const b of d1Bindings()) {
    expect(after[b], b).toEqual(empty[b]);
    expect(after[b]!.migrations, b).toBeGreaterThan(0);
    expect(after[b]!.guards, b).toBeGreaterThan(0);
  }
  // A new stub: the old one's object was aborted.
  const stub = hubStub(schoolId);
  await runInDurableObject(stub, async (instance, state) => {
    expect(await state.storage.get("fresh-storage-probe")).toBeUndefined();
    expect((instance as unknown as { probe?: boolean }).probe).toBeUndefined();
  });
  expect(await runDurableObjectAlarm(stub)).toBe(false);
});
