/**
 * `tsx scripts/bench-trees.ts --tree NAME=DIR:DATA … [--rounds N] [--warm-up N]` — a few
 * listing queries served by two or more source trees side by side: each tree's
 * `wrangler dev` (its benchmark entry, src/bench/entry.ts) on its own local D1 state (DATA,
 * prepared by the tree's own migrations and import), requests interleaved one by one in an
 * order that rotates every round, so that this shared machine's drift touches every tree
 * alike. Prints, per tree and query, the p50/p90 latency (ms, client side), the median
 * `Server-Timing` D1 time and the p50 ratio to the tree's floor (`GET /__bench/floor`), with
 * the load average before and after; requests as autocannon sends the mix's
 * (scripts/lib/timed-get.ts). Used for bench/RESULTS.md § "Stored record parts".
 */
import os from "node:os";
import path from "node:path";
import { parseArgs } from "node:util";
import { ALL_INCLUDES_QUERY } from "../src/bench/page-floor";
import { quantile } from "./lib/bench-ab-report";
import type { DevServer } from "./lib/dev-server";
import { pairedRatio, timedGet } from "./lib/timed-get";

const { values: opts } = parseArgs({
  options: {
    tree: { type: "string", multiple: true, default: [] },
    rounds: { type: "string", default: "150" },
    "warm-up": { type: "string", default: "20" },
  },
});

/** The queries: the floor, the plain page and the all-includes page of the mix (scripts/bench.ts), at 100 courses. */
const QUERIES = [
  { name: "floor (SELECT 1)", path: "/__bench/floor" },
  { name: "no includes, limit=100", path: "/v3/courses?limit=100" },
  { name: "all four includes, limit=100", path: `/v3/courses?${ALL_INCLUDES_QUERY}` },
];

interface Sample {
  ms: number[];
  db: number[];
}

async function main() {
  const trees = opts.tree.map((t) => {
    const [name, rest] = t.split("=") as [string, string];
    const [dir, data] = rest.split(":") as [string, string];
    return { name, dir: path.resolve(dir), data: path.resolve(data) };
  });
  if (trees.length < 2) throw new Error("give two --tree NAME=DIR:DATA at least");
  const load = () =>
    os
      .loadavg()
      .map((x) => x.toFixed(2))
      .join(", ");
  const servers: DevServer[] = [];
  try {
    for (const t of trees) {
      // Each tree's own dev-server module: its wrangler.toml, entry and migrations.
      const mod = (await import(path.join(t.dir, "scripts/lib/dev-server.ts"))) as typeof import("./lib/dev-server");
      const wr = (await import(path.join(t.dir, "scripts/lib/wrangler.ts"))) as typeof import("./lib/wrangler");
      servers.push(await mod.startDevServer({ persistTo: t.data, entry: wr.BENCH_ENTRY, quiet: true, timeoutMs: 180_000 }));
    }
    const cells = trees.map(() => QUERIES.map((): Sample => ({ ms: [], db: [] })));
    const pairs = trees.flatMap((_, ti) => QUERIES.map((_, qi) => [ti, qi] as const));
    const loadBefore = load();
    const rounds = Number(opts.rounds);
    const warm = Number(opts["warm-up"]);
    for (let r = 0; r < warm + rounds; r++) {
      for (let k = 0; k < pairs.length; k++) {
        const [ti, qi] = pairs[(k + r) % pairs.length]!;
        const s = await timedGet(servers[ti]!.base, QUERIES[qi]!.path);
        if (r >= warm) {
          cells[ti]![qi]!.ms.push(s.ms);
          cells[ti]![qi]!.db.push(s.db);
        }
      }
    }
    console.log(`load average before: ${loadBefore}; after: ${load()}; ${rounds} rounds (+${warm} warm-up), ${os.cpus().length} cores`);
    // Paired: the median over rounds of a request's time ÷ another's in the same round (same load).
    const paired = (a: number[], b: number[]) => pairedRatio(a, b).toFixed(2);
    console.log(`| tree | query | p50 ms | p90 ms | D1 ms (median) | p50 / floor | paired / floor | paired / ${trees[0]!.name} |`);
    console.log("|---|---|---:|---:|---:|---:|---:|---:|");
    trees.forEach((t, ti) => {
      const floor = cells[ti]![0]!.ms;
      QUERIES.forEach((q, qi) => {
        const c = cells[ti]![qi]!;
        const p50 = quantile(c.ms, 0.5);
        const cols = [p50.toFixed(1), quantile(c.ms, 0.9).toFixed(1), String(quantile(c.db, 0.5)), `${(p50 / quantile(floor, 0.5)).toFixed(2)}×`];
        cols.push(`${paired(c.ms, floor)}×`, `${paired(c.ms, cells[0]![qi]!.ms)}×`);
        console.log(`| ${t.name} | ${q.name} | ${cols.join(" | ")} |`);
      });
    });
  } finally {
    for (const s of servers) await s.stop();
  }
}

await main();
