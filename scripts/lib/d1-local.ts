/**
 * The local D1 databases of wrangler.toml as D1 bindings in Node (Miniflare, no Worker
 * served): the small driver through which `npm run shards -- move` runs the move's steps of
 * src/db/move.ts on the same SQLite files `wrangler dev --persist-to DIR` uses. Two
 * processes must not write those files at once: stop the dev server first. Reads that need
 * no Worker (`keys list`, `shards status`) open the SQLite files themselves, read-only
 * (`readLocalD1`, on scripts/lib/d1-file.ts): no workerd to start.
 */
import { existsSync, readdirSync } from "node:fs";
import path from "node:path";
import { DatabaseSync } from "node:sqlite";
import { localD1File, noLocalFile } from "./d1-file";
import { d1DatabaseIdsOfConfig, d1MigrationsOfConfig, ROOT } from "./wrangler";

/** Open local D1 databases (binding → database) and how to close them. */
export interface LocalD1 {
  databases: Record<string, D1Database>;
  dispose(): Promise<void>;
}

/**
 * Opens every D1 binding of wrangler.toml on the local state under `persistTo` (default
 * .wrangler/state, as wrangler).
 */
export async function openLocalD1(persistTo = path.join(ROOT, ".wrangler", "state")): Promise<LocalD1> {
  const ids = await d1DatabaseIdsOfConfig("local");
  // Loaded here only: a read of the files (`readLocalD1`) needs none of it, and it takes seconds to load.
  const { convertV4MiniflareOptions, Miniflare } = await import("miniflare");
  // wrangler describes workers in Miniflare's v4 option shape; miniflare 5 converts it.
  const options = convertV4MiniflareOptions({
    workers: [
      {
        name: "d1-local",
        modules: true,
        script: "export default { fetch() { return new Response(null, { status: 404 }); } }",
        d1Databases: ids,
      },
    ],
  });
  // wrangler dev keeps every resource under <persist-to>/v3/<plugin> (d1, do, …).
  const mf = new Miniflare({ ...options, resourcePersistencePath: path.join(persistTo, "v3") });
  await mf.ready;
  const databases: Record<string, D1Database> = {};
  for (const binding of Object.keys(ids)) databases[binding] = (await mf.getD1Database(binding)) as unknown as D1Database;
  return { databases, dispose: () => mf.dispose() };
}

/**
 * The migrations of wrangler.toml's D1 bindings that the open local databases lack, as
 * `BINDING/name.sql`, in order: each `.sql` file of a binding's `migrations_dir` that its
 * `migrations_table` does not list (every one when the table does not exist yet). Read from
 * the tables directly, so that a start with nothing to apply spawns no
 * `wrangler d1 migrations apply` (about 2.5 s each).
 */
export async function pendingLocalMigrations(local: LocalD1): Promise<string[]> {
  const pending: string[] = [];
  for (const [binding, { dir, table }] of Object.entries(await d1MigrationsOfConfig())) {
    const db = local.databases[binding];
    if (db === undefined) throw new Error(`no local database for the D1 binding ${binding}`);
    const files = readdirSync(dir)
      .filter((f) => f.endsWith(".sql"))
      .sort();
    const exists = await db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?").bind(table).first();
    // The table name comes from wrangler.toml (quoted as an identifier), not from input.
    const applied = exists
      ? new Set((await db.prepare(`SELECT name FROM "${table.replaceAll('"', '""')}"`).all<{ name: string }>()).results.map((r) => r.name))
      : new Set<string>();
    pending.push(...files.filter((f) => !applied.has(f)).map((f) => `${binding}/${f}`));
  }
  return pending;
}

/**
 * A local SQLite file as the part of a D1 binding a read uses: `prepare(sql).bind(…)`, then
 * `all()` (`meta.size_after`: the file's bytes, page count × page size, as D1 reports a
 * database's size) or `first()`. Anything else is absent.
 */
function readOnlyD1(db: DatabaseSync): D1Database {
  const bytes = () => {
    const { n } = db.prepare("SELECT (SELECT page_count FROM pragma_page_count()) * (SELECT page_size FROM pragma_page_size()) AS n").get() as { n: number };
    return n;
  };
  const statement = (sql: string, params: (string | number | null)[]) => ({
    bind: (...values: (string | number | null)[]) => statement(sql, values),
    all: async () => ({ results: db.prepare(sql).all(...params), success: true, meta: { size_after: bytes() } }),
    first: async () => db.prepare(sql).get(...params) ?? null,
  });
  return { prepare: (sql: string) => statement(sql, []) } as unknown as D1Database;
}

/** Local D1 databases opened read-only on their files (binding → database), and how to close them. */
export interface LocalD1Files {
  databases: Record<string, D1Database>;
  dispose(): void;
}

/**
 * Opens every D1 binding of wrangler.toml read-only on its local SQLite file (node:sqlite),
 * as the reads of `readOnlyD1`, without Miniflare: SQLite's own locking lets a running `wrangler dev` write meanwhile, and
 * a read sees the last committed state.
 *
 * @throws Error when a database has no local file yet (with the migration hint).
 */
export async function readLocalD1(persistTo?: string): Promise<LocalD1Files> {
  const files: DatabaseSync[] = [];
  const databases: Record<string, D1Database> = {};
  for (const [binding, id] of Object.entries(await d1DatabaseIdsOfConfig("local"))) {
    const file = localD1File(id, persistTo);
    if (!existsSync(file)) {
      for (const db of files) db.close();
      throw new Error(noLocalFile(binding, file, persistTo));
    }
    const db = new DatabaseSync(file, { readOnly: true });
    files.push(db);
    databases[binding] = readOnlyD1(db);
  }
  return {
    databases,
    dispose: () => {
      for (const db of files) db.close();
    },
  };
}
