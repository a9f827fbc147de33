/**
 * `npm run check:restart` — work woken after a hard restart under `wrangler dev`, where no
 * alarm survives one (workers-sdk#7781; docs/architecture.md § Faults are normal, wake-ups):
 * two registrations to a receiver on 127.0.0.1 answering in 50 ms, a burst of synthetic
 * events (POST /__bench/publish, straight to the hub), the dev server's process group killed
 * (SIGKILL) while couriers still hold hundreds of them, the dev server started again on the
 * same state, `GET /v3/webhooks` called once — then nothing but waiting. Every event the hub
 * acknowledged (its log, read through the feed afterwards) must reach both registrations
 * within 60 s. Prints the counts and PASS, or FAIL with what is missing.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { api, createHook, prepareState, publish, SERVED_VARS, sleep } from "./lib/bench-hub";
import { type DevServer, startDevServer } from "./lib/dev-server";
import { BENCH_ENTRY } from "./lib/wrangler";

const EVENTS = 2_000;
/** Deliveries received before the kill: the rest is queued in the couriers or not handed over yet. */
const KILL_AFTER = 300;
const WITHIN_MS = 60_000;

/** Arrivals per receiver path: event id → first arrival (ms). */
const arrivals = new Map<string, Map<string, number>>();
const receiver = createServer((req, res) => {
  let body = "";
  req.on("data", (c) => (body += c));
  req.on("end", () => {
    const id = (JSON.parse(body) as { id: string }).id;
    const seen = arrivals.get(req.url ?? "") ?? new Map<string, number>();
    arrivals.set(req.url ?? "", seen);
    if (!seen.has(id)) seen.set(id, Date.now());
    setTimeout(() => res.writeHead(204).end(), 50);
  });
});
const received = () => [...arrivals.values()].reduce((n, m) => n + m.size, 0);

/** Every event id of the school's log, read through the feed (after the waiting is over). */
async function acknowledged(base: string): Promise<string[]> {
  const ids: string[] = [];
  let query = "?limit=100";
  for (;;) {
    const res = await api(base, `/v3/events${query}`);
    const body = (await res.json()) as { result: { id: string }[]; pagination: { nextCursor: string; hasMore: boolean } };
    ids.push(...body.result.map((e) => e.id));
    if (!body.pagination.hasMore) return ids;
    query = `?limit=100&after=${encodeURIComponent(body.pagination.nextCursor)}`;
  }
}

async function main(): Promise<boolean> {
  await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve));
  const port = (receiver.address() as AddressInfo).port;
  const state = await prepareState(mkdtempSync(path.join(tmpdir(), "restart-check-")));
  let server: DevServer | null = null;
  try {
    server = await startDevServer({ persistTo: state, entry: BENCH_ENTRY, vars: SERVED_VARS, quiet: true });
    const hooks = [await createHook(server.base, `http://127.0.0.1:${port}/a`), await createHook(server.base, `http://127.0.0.1:${port}/b`)];
    console.log(`${hooks.length} registrations; publishing ${EVENTS} events; SIGKILL after ${KILL_AFTER} deliveries`);
    const burst = publish(server.base, EVENTS, 50, 2).catch((err: unknown) => String(err));
    while (received() < KILL_AFTER) await sleep(10);
    process.kill(-server.child.pid!, "SIGKILL");
    const killedAt = Date.now();
    console.log(`killed: ${received()} deliveries received; the burst: ${await burst}`);
    await sleep(1_000);
    server = await startDevServer({ persistTo: state, entry: BENCH_ENTRY, vars: SERVED_VARS, quiet: true });
    const restartedAt = Date.now();
    const list = await api(server.base, "/v3/webhooks");
    console.log(`restarted in ${((restartedAt - killedAt) / 1000).toFixed(1)} s; GET /v3/webhooks → ${list.status}; waiting ${WITHIN_MS / 1000} s`);
    await list.arrayBuffer();
    const before = received();
    await sleep(WITHIN_MS);
    const ids = await acknowledged(server.base);
    let missing = 0;
    for (const p of ["/a", "/b"]) {
      const seen = arrivals.get(p) ?? new Map<string, number>();
      const late = ids.filter((id) => !seen.has(id) || seen.get(id)! > restartedAt + WITHIN_MS);
      missing += late.length;
      console.log(`${p}: ${ids.filter((id) => seen.has(id)).length} of ${ids.length} acknowledged events arrived; ${late.length} missing or late`);
    }
    console.log(`deliveries after the restart: ${received() - before}`);
    return missing === 0 && ids.length > 0;
  } finally {
    if (server) await server.stop();
    receiver.close();
    rmSync(state, { recursive: true, force: true });
  }
}

main().then(
  (ok) => {
    console.log(ok ? "PASS" : "FAIL");
    process.exit(ok ? 0 : 1);
  },
  (err: unknown) => {
    console.error(err);
    console.log("FAIL");
    process.exit(1);
  },
);
