/**
 * The local D1 databases' SQLite files themselves (node:sqlite, no Workers types, no
 * Miniflare): where Miniflare keeps each, and one statement on one, in milliseconds where a
 * `wrangler d1 execute --local` takes seconds. What the import's checks and `keys list` read
 * locally (docs/development.md § "Operator CLIs"), and the self-tests' set-up writes.
 */
import { createHash, createHmac } from "node:crypto";
import { existsSync } from "node:fs";
import path from "node:path";
import { DatabaseSync } from "node:sqlite";
import { DIRECTORY_BINDING, d1DatabaseIdsOfConfig, migrationHint, ROOT } from "./wrangler";

/** Miniflare's Durable Object class of local D1 databases: its name keys the ids of their files. */
const D1_OBJECT_CLASS = "miniflare-D1DatabaseObject";

/**
 * The SQLite file of the local D1 database `databaseId` under `persistTo`: Miniflare keeps each
 * in the Durable Object named by the id, so the file is `<hex object id>.sqlite`, the id
 * computed as workerd's `idFromName` does (HMAC-SHA-256 keyed by the SHA-256 of the class's
 * unique key; its last 16 bytes an HMAC of the first 16).
 */
export function localD1File(databaseId: string, persistTo = path.join(ROOT, ".wrangler", "state")): string {
  const key = createHash("sha256").update(D1_OBJECT_CLASS).digest();
  const base = createHmac("sha256", key).update(databaseId).digest().subarray(0, 16);
  const mac = createHmac("sha256", key).update(base).digest().subarray(0, 16);
  return path.join(persistTo, "v3", "d1", D1_OBJECT_CLASS, `${Buffer.concat([base, mac]).toString("hex")}.sqlite`);
}

/** Why a database has no local file: wrangler never opened it, so no migration is applied. */
export const noLocalFile = (binding: string, file: string, persistTo?: string) =>
  `no local ${binding} database yet (${file})${migrationHint("no such table", "local", persistTo)}`;

/**
 * Opens the local file of D1 binding `binding` under `persistTo` (read-only unless `write`).
 *
 * @throws Error when wrangler.toml has no such binding or the database has no local file yet
 *   (with the migration hint).
 */
async function openLocalFile(binding: string, persistTo: string | undefined, write: boolean): Promise<DatabaseSync> {
  const id = (await d1DatabaseIdsOfConfig("local"))[binding];
  if (id === undefined) throw new Error(`wrangler.toml declares no D1 binding ${binding}`);
  const file = localD1File(id, persistTo);
  if (!existsSync(file)) throw new Error(noLocalFile(binding, file, persistTo));
  return new DatabaseSync(file, { readOnly: !write });
}

/**
 * Runs one read-only statement on the local file of D1 binding `binding` (the directory by
 * default) and returns its rows: what `wrangler d1 execute --local --command` answers, in
 * milliseconds rather than seconds.
 *
 * @throws Error when the database has no local file yet, or lacks the table (both with the
 *   migration hint), or the statement writes (the file is open read-only).
 */
export async function queryLocalD1<T>(sql: string, persistTo?: string, binding = DIRECTORY_BINDING): Promise<T[]> {
  const db = await openLocalFile(binding, persistTo, false);
  try {
    return db.prepare(sql).all() as T[];
  } catch (err) {
    throw new Error(`${(err as Error).message}${migrationHint((err as Error).message, "local", persistTo)}`);
  } finally {
    db.close();
  }
}

/**
 * Runs one writing statement `sql` with `params` bound (`?` in order) on the local file of D1
 * binding `binding` (the directory by default) under `persistTo`: a self-test's set-up, where
 * `wrangler d1 execute` takes seconds. Nothing else may write the file meanwhile (no
 * `wrangler dev` on it).
 *
 * @throws Error when the database has no local file or the statement fails.
 */
export async function execLocalD1(sql: string, params: (string | number | null)[], persistTo: string, binding = DIRECTORY_BINDING): Promise<void> {
  const db = await openLocalFile(binding, persistTo, true);
  try {
    db.prepare(sql).run(...params);
  } finally {
    db.close();
  }
}
