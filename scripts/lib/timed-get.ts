/**
 * One timed GET of the benchmarks that interleave requests by hand (scripts/bench-trees.ts,
 * scripts/bench-page-floor.ts), sent as autocannon sends the mix's (scripts/bench.ts): the
 * demo key, and no `Accept-Encoding` the runtime would compress for (`identity`; fetch would
 * otherwise ask for gzip, and `wrangler dev` compresses a JSON answer then).
 */
import { DEMO_API_KEY } from "../dataset/build";
import { quantile } from "./bench-ab-report";

/**
 * GETs `base` + `path` and reads the whole body: the client-side time (ms), the Worker's
 * `Server-Timing` `db` duration (ms; NaN when absent) and the body's bytes.
 *
 * @throws Error when the answer is not 200 (its first 300 characters included).
 */
export async function timedGet(base: string, path: string): Promise<{ ms: number; db: number; bytes: number }> {
  const t0 = performance.now();
  const res = await fetch(`${base}${path}`, { headers: { authorization: `Bearer ${DEMO_API_KEY}`, "accept-encoding": "identity" } });
  const body = await res.arrayBuffer();
  const ms = performance.now() - t0;
  if (res.status !== 200) throw new Error(`${path}: ${res.status} ${new TextDecoder().decode(body).slice(0, 300)}`);
  const db = Number(/db;dur=([\d.]+)/.exec(res.headers.get("server-timing") ?? "")?.[1] ?? Number.NaN);
  return { ms, db, bytes: body.byteLength };
}

/** The median over rounds of `a[k] ÷ b[k]` (two requests' times in the same round, so under the same load). */
export const pairedRatio = (a: number[], b: number[]): number =>
  quantile(
    a.map((x, k) => x / b[k]!),
    0.5,
  );
