/**
 * The test set-up's shards (vitest.config.ts binds the directory and two shards, as
 * wrangler.toml does): loading an import file through the same model and placement as
 * `npm run import`, and finding the shard that holds a school.
 */
import { env } from "cloudflare:test";
import { importFileSchema } from "../../src/db/import";
import { directorySteps, type ImportPublish, shardSteps } from "../../src/db/import-rows";
import { type ImportStep, renderBound } from "../../src/db/import-sql";
import { estimateBytes, knownSchools, partOn, placeSchools, type ShardSize, schoolsOf, shardSize } from "../../src/db/placement";
import { shardBindings } from "../../src/db/shard-names";
import { shardFor } from "../../src/db/shards";
import { publishEvents } from "../../src/events/outbox";
import type { SchoolEvent } from "../../src/events/types";

/** The D1 bindings a fixture is loaded into: the test env's, or some replaced (a simulated replica). */
export type Databases = Pick<Env, "DIRECTORY"> & object;

/** Runs import steps on a D1 database in one batch, and returns each statement's rows. */
export async function runSteps<T = Record<string, unknown>>(d1: D1Database, steps: readonly ImportStep[]): Promise<T[][]> {
  const statements = renderBound(steps);
  if (statements.length === 0) return [];
  const results = await d1.batch<T>(statements.map((s) => d1.prepare(s.sql).bind(...s.params)));
  return results.map((r) => r.results);
}

/** The shard binding the directory names for `schoolId`. @throws Error when the school is unknown. */
export async function shardNameOf(schoolId: string): Promise<string> {
  const row = await env.DIRECTORY.prepare("SELECT shard FROM schools WHERE id = ?").bind(schoolId).first<{ shard: string }>();
  if (!row) throw new Error(`no school ${schoolId} in the directory`);
  return row.shard;
}

/** The D1 database of the shard that holds `schoolId`. */
export async function shardOf(schoolId: string): Promise<D1Database> {
  return shardFor(env, await shardNameOf(schoolId));
}

/**
 * Loads an import file (docs/operations.md § Data import) as `npm run import` does: placed
 * by the same rule, the directory's rows first, then each shard's part in one batch. Its
 * events only with `publish` (`importEvents`, src/events/import-events.ts): a fixture is
 * data that was there before the test, so by default it publishes nothing.
 */
export async function loadFixture(
  data: unknown,
  now = Date.parse("2026-08-01T00:00:00Z"),
  into: Databases = env,
  chosen?: string,
  publish?: ImportPublish,
): Promise<void> {
  const file = importFileSchema.parse(data);
  const [known = []] = await runSteps<{ id: string; shard: string }>(into.DIRECTORY, [knownSchools(schoolsOf(file))]);
  const bytes = new Map<string, number>();
  for (const b of shardBindings(env)) {
    // A chosen shard needs no sizes: placement then only checks that it exists.
    const [[size] = []] = chosen === undefined ? await runSteps<ShardSize>(shardFor(into, b), [shardSize]) : [];
    bytes.set(b, size ? estimateBytes(size) : 0);
  }
  const placed = placeSchools(file, { known: new Map(known.map((r) => [r.id, r.shard])), bytes }, chosen);
  await runSteps(into.DIRECTORY, await directorySteps(file, placed, now));
  for (const b of new Set(placed.values())) await runSteps(shardFor(into, b), shardSteps(partOn(file, placed, b), now, publish));
}

/** A move's `publish` (src/db/move.ts): the outbox rows' JSON payloads published to the school's hub. */
export const publishPayloads = (shard: D1Database, schoolId: string, payloads: string[]) =>
  publishEvents(
    env,
    shard,
    schoolId,
    payloads.map((p) => JSON.parse(p) as SchoolEvent),
  );

/**
 * `env` whose hubs accept every publish and record, per event, the school published to (in
 * `published`); `bindings` replace others (a shard recorded or broken), for the cron's sweep.
 */
export function recordingHubs(published: string[], bindings: Partial<Env> = {}): typeof env {
  const SCHOOL_HUB = {
    idFromName: (name: string) => ({ name }),
    get: ({ name }: { name: string }) => ({
      publish: async (events: SchoolEvent[]) => {
        published.push(...events.map(() => name));
        return {};
      },
    }),
  };
  return { ...env, ...bindings, SCHOOL_HUB } as unknown as typeof env;
}
