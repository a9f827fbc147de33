/**
 * `npm run test:restart`: after a hard restart under `wrangler dev`, nothing owed waits for a
 * request (docs/operations.md § "The cron locally"). Two schools with a registration each get
 * a burst of events; school A also gets one course write whose publish is made to fail (the
 * bench entry's fault switch, src/bench/faults.ts). The dev server is SIGKILLed and started
 * again; then no request to either school, only the cron runner `npm start` uses
 * (scripts/lib/cron-runner.ts). Every event each hub acknowledged (read from its SQLite file
 * once the server is stopped) must reach its registration within 90 s of the restart, A's
 * failed write among them; B, which the cron never touches, shows that a school nobody calls
 * resumes on its own. Prints the counts and PASS, or FAIL with what is missing.
 */
import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { DatabaseSync } from "node:sqlite";
import { FAIL_PUBLISH_HEADER } from "../src/bench/faults";
import { api, type BenchSchool, createHook, prepareState, publish, SERVED_VARS, sleep } from "./lib/bench-hub";
import { startCronRunner } from "./lib/cron-runner";
import { type DevServer, freePort, startDevServer } from "./lib/dev-server";
import { localShardFile } from "./lib/sqlite-alone";
import { BENCH_ENTRY } from "./lib/wrangler";

const A: BenchSchool = { id: "sch_restart_a", key: "sk_test_restart_a" };
const B: BenchSchool = { id: "sch_restart_b", key: "sk_test_restart_b" };
/** Synthetic events published to each school. */
const EVENTS = 1_000;
/** Deliveries received (both schools) before the kill: the rest is queued in the couriers or not handed over yet. */
const KILL_AFTER = 300;
/** Everything acknowledged arrives within this after the restart (ms): the cron's minute, the sweep's 30 s, the start-up. */
const WITHIN_MS = 90_000;
/** Once every event the answers acknowledged has arrived, this long without a new arrival ends the wait (ms). */
const SETTLE_MS = 5_000;

/** Arrivals per receiver path: event id → first arrival (ms). */
const arrivals = new Map<string, Map<string, number>>();
/** Ids of the `course.created` events received (the failed write's). */
const createdIds = new Set<string>();
const receiver = createServer((req, res) => {
  let body = "";
  req.on("data", (c) => (body += c));
  req.on("end", () => {
    const { id, type } = JSON.parse(body) as { id: string; type: string };
    const seen = arrivals.get(req.url ?? "") ?? new Map<string, number>();
    arrivals.set(req.url ?? "", seen);
    if (!seen.has(id)) seen.set(id, Date.now());
    if (type === "course.created") createdIds.add(id);
    setTimeout(() => res.writeHead(204).end(), 50);
  });
});
const receivedAt = (p: string) => arrivals.get(p) ?? new Map<string, number>();
const received = () => [...arrivals.values()].reduce((n, m) => n + m.size, 0);
const lastArrival = () => Math.max(0, ...[...arrivals.values()].flatMap((m) => [...m.values()]));

/** Requests to either school are refused from the restart on: the check must not make one. */
let restarted = false;
function call(base: string, school: BenchSchool, p: string, init: RequestInit = {}): Promise<Response> {
  if (restarted) throw new Error(`a request to ${school.id} after the restart (${p}): the check must make none`);
  return api(base, p, init, school.key);
}

/**
 * The event log of every hub under `state`, read from the objects' SQLite files (the server
 * stopped): school id → its events, in log order.
 */
function hubLogs(state: string): Map<string, { id: string; type: string }[]> {
  const root = path.join(state, "v3", "do");
  const logs = new Map<string, { id: string; type: string }[]>();
  for (const dir of readdirSync(root).filter((d) => d.endsWith("-SchoolHub"))) {
    for (const file of readdirSync(path.join(root, dir)).filter((f) => f.endsWith(".sqlite"))) {
      const db = new DatabaseSync(path.join(root, dir, file), { readOnly: true });
      try {
        // Not every file is a hub's database (Miniflare keeps its own metadata beside them).
        if (!db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'events'").get()) continue;
        const rows = db.prepare("SELECT id, type, body ->> '$.schoolId' AS school FROM events ORDER BY seq").all() as {
          id: string;
          type: string;
          school: string;
        }[];
        if (rows[0]) logs.set(rows[0].school, rows);
      } finally {
        db.close();
      }
    }
  }
  return logs;
}

/** When the outbox row of event `eventId` of school `schoolId` was marked published (ms), or `null`. */
function publishedAt(state: string, schoolId: string, eventId: string): number | null {
  const db = new DatabaseSync(localShardFile(state, schoolId), { readOnly: true });
  try {
    const row = db.prepare("SELECT published_at FROM outbox WHERE event_id = ?").get(eventId) as { published_at: number | null } | undefined;
    return row?.published_at ?? null;
  } finally {
    db.close();
  }
}

async function main(): Promise<boolean> {
  await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve));
  const hooksAt = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
  const state = await prepareState(mkdtempSync(path.join(tmpdir(), "restart-check-")), [A, B]);
  // One port for both servers: the cron runner, started once, goes on across the restart.
  const port = await freePort();
  const start = () => startDevServer({ persistTo: state, entry: BENCH_ENTRY, vars: SERVED_VARS, quiet: true, port });
  let server: DevServer | null = await start();
  const cron = startCronRunner(server.base, { log: (line) => console.log(`  ${line}`) });
  try {
    const { base } = server;
    for (const [school, p] of [
      [A, "/a"],
      [B, "/b"],
    ] as const) {
      await createHook(base, `${hooksAt}${p}`, undefined, { key: school.key });
    }
    console.log(`2 schools, 1 registration each; publishing ${EVENTS} events to each; SIGKILL after ${KILL_AFTER} deliveries; cron: ${cron.crons.join(", ")}`);
    const acked = { a: 0, b: 0 };
    const bursts = Promise.all([
      publish(base, EVENTS, 50, 1, "course.updated", A.key, (n) => (acked.a += n)),
      publish(base, EVENTS, 50, 1, "course.updated", B.key, (n) => (acked.b += n)),
    ]).then(
      () => "both complete",
      (err: unknown) => `cut by the kill (${err instanceof Error && err.cause instanceof Error ? err.cause.message : String(err)})`,
    );
    while (received() < KILL_AFTER) await sleep(10);

    // The write whose own publish fails: committed with its outbox row, not in the hub.
    const write = await call(base, A, "/v3/courses", {
      method: "POST",
      headers: { [FAIL_PUBLISH_HEADER]: "1" },
      body: JSON.stringify({ name: "Restart check", startDateTime: "2026-12-01T09:00:00Z", endDateTime: "2026-12-01T11:00:00Z" }),
    });
    const writeAt = Date.now();
    const course = write.status === 201 ? ((await write.json()) as { result: { id: string } }).result.id : null;
    const feed = await call(base, A, "/v3/events?eventType=course.created");
    const inFeed = ((await feed.json()) as { result: unknown[] }).result.length;
    console.log(`A's write with its publish made to fail: ${write.status} ${course ?? (await write.text())}; course.created events in A's feed: ${inFeed}`);

    process.kill(-server.child.pid!, "SIGKILL");
    restarted = true;
    const killedAt = Date.now();
    console.log(`killed: ${received()} deliveries received; the bursts: ${await bursts}`);
    await sleep(1_000);
    server = await start();
    const restartedAt = Date.now();
    console.log(
      `restarted in ${((restartedAt - killedAt) / 1000).toFixed(1)} s on the same port; no request to either school from now on; waiting until everything acknowledged arrived (at most ${WITHIN_MS / 1000} s)`,
    );
    const before = received();
    const deadline = restartedAt + WITHIN_MS;
    // The answers' counts are a lower bound (answers lost to the kill may have been accepted):
    // once they are reached, wait until the arrivals settle.
    while (Date.now() < deadline) {
      if (receivedAt("/a").size > acked.a && receivedAt("/b").size >= acked.b && createdIds.size > 0 && Date.now() - lastArrival() > SETTLE_MS) break;
      await sleep(250);
    }
    const cronAfter = cron.runs.filter((r) => r.scheduledTime > restartedAt);
    await server.stop();
    server = null;

    const logs = hubLogs(state);
    // Whatever the write answered (its D1 batch committed either way), its event must not be
    // in the hub before the kill, and must be delivered after the restart.
    let ok = inFeed === 0;
    for (const [school, p] of [
      [A, "/a"],
      [B, "/b"],
    ] as const) {
      const log = logs.get(school.id) ?? [];
      const seen = receivedAt(p);
      const late = log.filter((e) => !seen.has(e.id) || seen.get(e.id)! > deadline);
      const afterRestart = log.filter((e) => (seen.get(e.id) ?? 0) > restartedAt).length;
      ok &&= late.length === 0 && log.length >= (school === A ? acked.a + 1 : acked.b);
      console.log(
        `${school.id}: ${log.length} events in its hub's log (${school === A ? acked.a : acked.b} acknowledged by answers received); ${log.length - late.length} arrived at ${p} in time (${afterRestart} after the restart), ${late.length} missing or late`,
      );
    }
    const createdEvent = (logs.get(A.id) ?? []).find((e) => e.type === "course.created");
    const createdArrival = createdEvent ? receivedAt("/a").get(createdEvent.id) : undefined;
    const marked = createdEvent ? publishedAt(state, A.id, createdEvent.id) : null;
    ok &&= createdArrival !== undefined && createdArrival > restartedAt && marked !== null;
    console.log(
      `A's failed write: ${createdEvent ? `event ${createdEvent.id}` : "no course.created event in the hub's log"}; outbox row published ${marked === null ? "never" : `${((marked - restartedAt) / 1000).toFixed(1)} s after the restart (${((marked - writeAt) / 1000).toFixed(1)} s after the write's answer)`}; delivered ${createdArrival === undefined ? "never" : `${((createdArrival - restartedAt) / 1000).toFixed(1)} s after the restart`}`,
    );
    console.log(
      `cron runs after the restart: ${cronAfter.length} (${cronAfter.filter((r) => r.ok).length} ok); deliveries after the restart: ${received() - before}; last one ${((lastArrival() - restartedAt) / 1000).toFixed(1)} s after the restart`,
    );
    return ok;
  } finally {
    cron.stop();
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
