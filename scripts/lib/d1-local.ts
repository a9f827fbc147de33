/**
 * The local D1 databases of wrangler.toml as D1 bindings in Node (Miniflare, no Worker
 * served): the small driver through which `npm run shards -- move` runs the move's steps of
 * src/db/move.ts on the same SQLite files `wrangler dev --persist-to DIR` uses. Two
 * processes must not write those files at once: stop the dev server first.
 */
import path from "node:path";
import { convertV4MiniflareOptions, Miniflare } from "miniflare";
import { d1DatabaseIdsOfConfig, ROOT } from "./wrangler";

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
