/**
 * The import row model (src/db/import-sql.ts): its two renderings — bound (the tests' D1
 * batch) and literal (`npm run import`'s SQL files) — write the same rows, and each keeps to
 * its limit (D1's 100 bound parameters; the longest INSERT asked for).
 */
import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { ImportFile } from "../../src/db/import";
import { importFileSchema } from "../../src/db/import";
import { directorySteps, shardSteps } from "../../src/db/import-rows";
import { type ImportStep, renderBound, renderLiteral, rowCount } from "../../src/db/import-sql";
import { importEvents } from "../../src/events/import-events";
import { fixture } from "../support/fixtures";
import { databasesOf, IMPORT_TABLES as TABLES } from "../support/helpers";

const NOW = Date.parse("2026-08-01T00:00:00Z");

/** The shard's tables an import's events write, beside `TABLES`. */
const EVENT_TABLES = ["school_changes", "outbox", "event_bytes"];

async function snapshot(): Promise<Record<string, unknown[]>> {
  const out: Record<string, unknown[]> = {};
  // The events in the order written; `created_at` is the database's clock at the write.
  out.outbox = (await env.SHARD_0.prepare("SELECT event_id, school_id, payload FROM outbox ORDER BY rowid").all()).results;
  out.school_changes = (await env.SHARD_0.prepare("SELECT * FROM school_changes ORDER BY school_id").all()).results;
  out.event_bytes = (await env.SHARD_0.prepare("SELECT * FROM event_bytes ORDER BY school_id").all()).results;
  for (const t of TABLES) {
    out[t] = [];
    for (const d1 of databasesOf(t)) out[t].push(...(await d1.prepare(`SELECT * FROM ${t}`).all()).results.map((r) => JSON.stringify(r)));
    out[t].sort();
  }
  return out;
}

async function clear(): Promise<void> {
  for (const t of TABLES) for (const d1 of databasesOf(t)) await d1.prepare(`DELETE FROM ${t}`).run();
  for (const t of EVENT_TABLES) await env.SHARD_0.prepare(`DELETE FROM ${t}`).run();
}

/** The import's steps of `file` with its events, every school placed on SHARD_0: the directory's, then the shard's. */
async function stepsOf(file: ImportFile): Promise<{ directory: ImportStep[]; shard: ImportStep[] }> {
  const placed = new Map(file.schools.map((s) => [s.id, "SHARD_0"]));
  return { directory: await directorySteps(file, placed, NOW), shard: shardSteps(file, NOW, importEvents(NOW)) };
}

/** Runs each part on its database, through `run`. */
async function write(steps: { directory: ImportStep[]; shard: ImportStep[] }, run: (d1: D1Database, steps: ImportStep[]) => Promise<void>) {
  await run(env.DIRECTORY, steps.directory);
  await run(env.SHARD_0, steps.shard);
}

describe("the import row model", () => {
  it("bound and literal renderings write the same rows, and as many as rowCount says", async () => {
    const steps = await stepsOf(importFileSchema.parse(fixture));
    await clear();
    await write(steps, async (d1, part) => {
      await d1.batch(renderBound(part).map((s) => d1.prepare(s.sql).bind(...s.params)));
    });
    const bound = await snapshot();
    await clear();
    // A short limit, so that every upsert is cut into several INSERTs.
    await write(steps, async (d1, part) => {
      for (const sql of renderLiteral(part, 300)) await d1.prepare(sql).run();
    });
    const literal = await snapshot();
    expect(literal).toEqual(bound);
    // One event per course of the fixture, all new: the events are not rows of the import's count.
    expect(bound.outbox!.length).toBe(importFileSchema.parse(fixture).courses.length);
    const { outbox: _o, school_changes: _c, event_bytes: _b, ...rows } = bound;
    expect(Object.values(rows).reduce((n, r) => n + r.length, 0)).toBe(rowCount([...steps.directory, ...steps.shard]));
  });

  it("keeps each rendering within its limit", async () => {
    const { directory, shard } = await stepsOf(importFileSchema.parse(fixture));
    const steps = [...directory, ...shard];
    for (const s of renderBound(steps)) expect(s.params.length).toBeLessThanOrEqual(100);
    const literal = renderLiteral(steps, 300);
    // An INSERT of several rows stays within the limit (a single row may not fit in it).
    for (const sql of literal) if (sql.includes("), (")) expect(sql.length).toBeLessThanOrEqual(300);
    expect(literal.filter((sql) => sql.startsWith("INSERT INTO course_students ")).length).toBeGreaterThan(1);
    expect(literal.every((sql) => sql.endsWith(";"))).toBe(true);
  });

  it("renders quotes and NULL as SQL literals", async () => {
    const file = importFileSchema.parse({
      schools: [{ id: "sch_q", name: "L'école", apiKeys: [] }],
      courses: [
        { id: "crs_q", schoolId: "sch_q", name: "Cours d'été", startDateTime: "2026-09-07T08:00:00Z", endDateTime: "2026-09-07T10:00:00Z", classroom: null },
      ],
    });
    const { directory, shard } = await stepsOf(file);
    const sql = renderLiteral([...directory, ...shard], 10_000).join("\n");
    expect(sql).toContain("'L''école'");
    expect(sql).toContain("'Cours d''été', 'cours d''ete'");
    expect(sql).toMatch(/'cours d''ete', 1788768000000, 1788775200000, NULL, NULL, NULL, NULL, 0, 0,/);
  });
});
