/**
 * `npm run bench -- --mirror [--courses 30000] [--mirror-runs 20]`: the mirror recipe
 * (scripts/lib/mirror.ts, docs/api-guide.md § "Keeping a mirror") against `wrangler dev` at
 * scale. Each run syncs the demo school by cursor while PATCHes move courses across pages,
 * courses are created and an import (`npm run import`'s own code) renames courses; then, away
 * for longer than the feed's retention (its feed cursor aged 8 days), more writes and an import;
 * then it catches up. A run passes when the mirror equals a full re-read, course by course,
 * version by version. Prints per run the requests and bytes of the full sync, of the catch-up,
 * and of a full re-read, and a verdict.
 */
import type { ImportFileInput } from "../dataset/build";
import { importData } from "../import";
import { agedFeedCursor, CourseMirror, type MirrorAnswer } from "./mirror";

/** What one run found. */
export interface MirrorRun {
  converged: boolean;
  courses: number;
  fullSync: { requests: number; bytes: number };
  catchUp: { requests: number; bytes: number };
  reread: { requests: number; bytes: number };
}

const DAY = 86_400_000;

/**
 * Runs `runs` mirror runs against the Worker at `base` (the demo school of `data`, whose key is
 * `key`), importing into `persistTo` while the server runs.
 */
export async function runMirrorBench(opts: {
  base: string;
  key: string;
  schoolId: string;
  data: ImportFileInput;
  persistTo: string;
  runs: number;
  log: (line: string) => void;
}): Promise<MirrorRun[]> {
  const { base, key, schoolId, log } = opts;
  const get = async (path: string): Promise<MirrorAnswer> => {
    const res = await fetch(`${base}${path}`, { headers: { authorization: `Bearer ${key}` } });
    const text = await res.text();
    return { status: res.status, body: JSON.parse(text), bytes: Buffer.byteLength(text) };
  };
  const send = async (method: string, path: string, json: unknown) => {
    const res = await fetch(`${base}${path}`, {
      method,
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify(json),
    });
    await res.arrayBuffer();
    if (res.status >= 300) throw new Error(`${method} ${path} answered ${res.status}`);
  };
  const school = opts.data.courses!.filter((c) => c.schoolId === schoolId);
  // An import of the school's courses with `share` of them renamed (tagged by run), nothing else.
  const importRenaming = (run: number, share: number) =>
    importData(
      {
        schools: opts.data.schools!.filter((s) => s.id === schoolId),
        courses: school.filter((_, i) => i % share === run % share).map((c) => ({ ...c, name: `${c.name} · r${run}` })),
      },
      { persistTo: opts.persistTo, progress: false },
    );
  const results: MirrorRun[] = [];
  for (let run = 1; run <= opts.runs; run++) {
    let pages = 0;
    const during = async (path: string) => {
      const answer = await get(path);
      if (path.startsWith("/v3/courses?")) {
        pages += 1;
        const a = school[(run * 7919) % school.length]!.id;
        const b = school[(run * 104_729) % school.length]!.id;
        if (pages === 2) {
          await send("PATCH", `/v3/courses/${a}`, { startDateTime: "2020-01-01T06:00:00Z", endDateTime: "2020-01-01T07:00:00Z" });
          await send("PATCH", `/v3/courses/${b}`, { startDateTime: "2099-01-01T06:00:00Z", endDateTime: "2099-01-01T07:00:00Z" });
        }
        if (pages === 3)
          await send("POST", "/v3/courses", { name: `Mirror run ${run}`, startDateTime: "2026-10-01T08:00:00Z", endDateTime: "2026-10-01T09:00:00Z" });
        if (pages === 4) await importRenaming(run, 50);
      }
      return answer;
    };
    const mirror = new CourseMirror(during);
    await mirror.fullSync();
    await mirror.follow();
    const synced = { ...mirror.cost.fullSync };
    const before = { ...mirror.cost.catchUp };
    // Away past the retention: writes and an import meanwhile, then back with an 8-day-old cursor.
    await send("PATCH", `/v3/courses/${school[run % school.length]!.id}`, { name: `Away ${run}` });
    await importRenaming(run + 1, 100);
    if (mirror.feedCursor) mirror.feedCursor = agedFeedCursor(mirror.feedCursor, 8 * DAY);
    await mirror.follow();
    const catchUp = { requests: mirror.cost.catchUp.requests - before.requests, bytes: mirror.cost.catchUp.bytes - before.bytes };
    // The truth: a full re-read by page number.
    const reread = { requests: 0, bytes: 0 };
    const truth = new Map<string, unknown>();
    for (let page = 1; ; page++) {
      const answer = await get(`/v3/courses?limit=100&page=${page}`);
      reread.requests += 1;
      reread.bytes += answer.bytes;
      for (const c of answer.body.result) truth.set(c.id, c);
      if (!answer.body.pagination.hasMore) break;
    }
    const converged = truth.size === mirror.courses.size && [...truth].every(([id, c]) => JSON.stringify(mirror.courses.get(id)?.record) === JSON.stringify(c));
    results.push({ converged, courses: truth.size, fullSync: synced, catchUp, reread });
    log(
      `run ${run}: ${converged ? "converged" : "DIVERGED"} (${truth.size} courses); full sync ${synced.requests} requests ${(synced.bytes / 1e6).toFixed(1)} MB; ` +
        `catch-up after the outage ${catchUp.requests} requests ${(catchUp.bytes / 1e6).toFixed(2)} MB; a full re-read ${reread.requests} requests ${(reread.bytes / 1e6).toFixed(1)} MB`,
    );
  }
  return results;
}
