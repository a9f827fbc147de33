/**
 * The Worker under Miniflare directly, without `wrangler dev`'s proxy worker and devtools
 * relay in front of it: the benchmark serves the same mix this way too, so that what is the
 * Worker's and what is the dev stack's can be told apart (bench/RESULTS.md).
 *
 * The bundle is wrangler's own (`wrangler deploy --dry-run --outdir`), the bindings are
 * wrangler.toml's (`unstable_getMiniflareWorkerOptions`), and the D1 / Durable Object state is
 * the `--persist-to` directory of the wrangler run (same database file).
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { convertV4MiniflareOptions, Miniflare } from "miniflare";
import { unstable_getMiniflareWorkerOptions } from "wrangler";
import { ROOT, wranglerBin, wranglerEnv } from "./wrangler";

/** A running Miniflare instance. */
export interface MiniflareServer {
  /** `http://127.0.0.1:<port>` */
  base: string;
  stop(): Promise<void>;
}

/**
 * Bundles `entry` with wrangler and serves it with Miniflare on 127.0.0.1:`port` (0, the
 * default: a free port),
 * state read from `persistTo` (`<dir>/v3/d1`, `<dir>/v3/do`, as `wrangler dev --persist-to`).
 * `ratelimits` replaces wrangler.toml's rate-limiting bindings (e.g. a limit a benchmark
 * never reaches), `d1Databases` its D1 bindings' database ids.
 *
 * @throws Error when the bundle fails (wrangler's output included).
 */
export async function startMiniflare(opts: {
  persistTo: string;
  entry: string;
  vars?: Record<string, string>;
  ratelimits?: Record<string, { namespace_id: string; simple: { limit: number; period: 10 | 60 } }>;
  port?: number;
  /** D1 bindings → database ids, replacing wrangler.toml's (the shard benchmark's one-database layout). */
  d1Databases?: Record<string, string>;
}): Promise<MiniflareServer> {
  const outdir = mkdtempSync(path.join(os.tmpdir(), "school-bench-bundle-"));
  const built = spawnSync(process.execPath, [wranglerBin(), "deploy", "--dry-run", "--outdir", outdir, opts.entry], {
    cwd: ROOT,
    env: wranglerEnv(),
    encoding: "utf8",
  });
  if (built.status !== 0) throw new Error(`wrangler deploy --dry-run failed:\n${built.stdout}\n${built.stderr}`);
  const script = readdirSync(outdir).find((f) => f.endsWith(".js"));
  if (!script) throw new Error(`no bundle in ${outdir}`);
  // The bundle is one ES module already: wrangler's module rules are not needed (and
  // miniflare 5 refuses to convert them).
  const { modulesRules: _rules, ...workerOptions } = unstable_getMiniflareWorkerOptions(path.join(ROOT, "wrangler.toml")).workerOptions;
  // wrangler describes the Worker in Miniflare's v4 option shape; miniflare 5 converts it.
  const options = convertV4MiniflareOptions({
    host: "127.0.0.1",
    port: opts.port ?? 0,
    workers: [
      {
        ...workerOptions,
        modules: true,
        scriptPath: path.join(outdir, script),
        modulesRoot: outdir,
        bindings: { ...(workerOptions.bindings ?? {}), ...opts.vars },
        ...(opts.ratelimits ? { ratelimits: opts.ratelimits } : {}),
        ...(opts.d1Databases ? { d1Databases: opts.d1Databases } : {}),
      },
    ],
  });
  // wrangler dev keeps every resource under <persist-to>/v3/<plugin> (d1, do, …).
  const mf = new Miniflare({ ...options, resourcePersistencePath: path.join(opts.persistTo, "v3") });
  const url = await mf.ready;
  return {
    base: url.origin,
    stop: async () => {
      await mf.dispose();
      rmSync(outdir, { recursive: true, force: true });
    },
  };
}
