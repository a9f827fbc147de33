/**
 * The cron under `wrangler dev` (docs/operations.md § "The cron locally"): Miniflare never
 * triggers a scheduled handler by itself, so `npm start` (and `npm run test:restart`, to prove
 * what `npm start` does) calls it the way Cloudflare's cron would — at the start of every
 * minute whose time matches one of wrangler.toml's `[triggers] crons`, through the dev
 * server's `GET /cdn-cgi/local/scheduled?cron=…&time=…`, with the minute itself as the
 * scheduled time (so the handler's hourly branch runs at minute 0).
 *
 * Robust by construction: a run that fails (the server restarting, killed, not up yet) is
 * reported and the next minute tries again; nothing is queued or retried in between, as with
 * production's cron, whose missed runs are not replayed.
 */
import { readFileSync } from "node:fs";
import path from "node:path";
import { ROOT } from "./wrangler";

/** One minute (ms). */
const MINUTE_MS = 60_000;
/** A run not answered within this is abandoned (ms): the next minute's run starts anyway. */
const RUN_TIMEOUT_MS = 55_000;

/**
 * The cron expressions of wrangler.toml's `[triggers] crons` (e.g. `["* * * * *"]`), `[]`
 * when it declares none.
 *
 * @throws Error when the `crons` line is not a TOML array of strings.
 */
export function wranglerCrons(toml = readFileSync(path.join(ROOT, "wrangler.toml"), "utf8")): string[] {
  const triggers = /^\[triggers\]\s*$([\s\S]*?)(?=^\[|(?![\s\S]))/m.exec(toml)?.[1] ?? "";
  const line = /^\s*crons\s*=\s*(\[.*\])\s*$/m.exec(triggers)?.[1];
  if (line === undefined) return [];
  const crons: unknown = JSON.parse(line);
  if (!Array.isArray(crons) || !crons.every((c) => typeof c === "string")) throw new Error(`wrangler.toml: crons must be an array of strings, not ${line}`);
  return crons;
}

/** The fields of a cron expression: minute, hour, day of month, month, day of week (0 = Sunday). */
const FIELDS = [
  { min: 0, max: 59 },
  { min: 0, max: 23 },
  { min: 1, max: 31 },
  { min: 1, max: 12 },
  { min: 0, max: 6 },
] as const;

/** The values one field of a cron expression allows (`*`, `n`, `a-b`, any of them with `/step`, lists). */
function fieldValues(spec: string, { min, max }: { min: number; max: number }, expr: string): Set<number> {
  const out = new Set<number>();
  for (const part of spec.split(",")) {
    const m = /^(\*|(\d+)(?:-(\d+))?)(?:\/(\d+))?$/.exec(part);
    if (!m) throw new Error(`cron "${expr}": "${part}" is not supported (numbers, ranges, steps and lists only)`);
    const from = m[1] === "*" ? min : Number(m[2]);
    const to = m[1] === "*" ? max : m[3] === undefined ? (m[4] === undefined ? from : max) : Number(m[3]);
    const step = m[4] === undefined ? 1 : Number(m[4]);
    if (from < min || to > max || from > to || step < 1) throw new Error(`cron "${expr}": "${part}" is out of range ${min}–${max}`);
    for (let v = from; v <= to; v += step) out.add(v);
  }
  return out;
}

/**
 * Whether cron expression `expr` (five fields, UTC, as Cloudflare reads it) fires at the
 * minute of `at`. Day of month and day of week: either matches when both are restricted.
 *
 * @throws Error for syntax this runner does not read (names, `L`, `W`, `#`).
 */
function cronMatches(expr: string, at: Date): boolean {
  const specs = expr.trim().split(/\s+/);
  if (specs.length !== 5) throw new Error(`cron "${expr}": five fields expected`);
  const [minute, hour, dom, month, dow] = specs.map((s, i) => fieldValues(s, FIELDS[i]!, expr)) as [
    Set<number>,
    Set<number>,
    Set<number>,
    Set<number>,
    Set<number>,
  ];
  const day = specs[2] !== "*" && specs[4] !== "*" ? dom.has(at.getUTCDate()) || dow.has(at.getUTCDay()) : dom.has(at.getUTCDate()) && dow.has(at.getUTCDay());
  return minute.has(at.getUTCMinutes()) && hour.has(at.getUTCHours()) && month.has(at.getUTCMonth() + 1) && day;
}

/** One call of the scheduled handler: the cron, the minute (ms), whether it answered `ok`, why not. */
interface CronRun {
  cron: string;
  scheduledTime: number;
  ok: boolean;
  error?: string;
}

/** A running cron runner. */
export interface CronRunner {
  /** The crons it runs. */
  crons: readonly string[];
  /** Every run so far, in order. */
  runs: CronRun[];
  /** Stops it (idempotent): no run starts after this; one under way is abandoned. */
  stop(): void;
}

/** `HH:MM` UTC of `ms`. */
const minuteOf = (ms: number) => new Date(ms).toISOString().slice(11, 16);

/**
 * Calls the scheduled handler of the dev server at `base` (`http://127.0.0.1:<port>`) at the
 * start of every minute matching one of `crons` (default: wrangler.toml's), from the next one
 * on. It keeps going whatever the server does (down, restarting, back on the same port).
 *
 * @param opts.log where its lines go (default `console.log`): one when a run fails (with why
 *   and when it tries again) and one when runs succeed again; a successful run prints nothing
 *   itself (the Worker logs the sweep's and the prunes' lines).
 * @throws Error when a cron expression is not one `cronMatches` reads.
 */
export function startCronRunner(base: string, opts: { crons?: readonly string[]; log?: (line: string) => void } = {}): CronRunner {
  const crons = opts.crons ?? wranglerCrons();
  const log = opts.log ?? ((line: string) => console.log(line));
  for (const c of crons) cronMatches(c, new Date(0));
  const runs: CronRun[] = [];
  const running = new Set<AbortController>();
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  let failing = 0;

  const call = async (cron: string, scheduledTime: number): Promise<CronRun> => {
    const abort = new AbortController();
    running.add(abort);
    const timeout = setTimeout(() => abort.abort(new Error(`no answer within ${RUN_TIMEOUT_MS / 1000} s`)), RUN_TIMEOUT_MS);
    try {
      const url = `${base}/cdn-cgi/local/scheduled?${new URLSearchParams({ cron, time: String(scheduledTime), format: "json" })}`;
      const res = await fetch(url, { signal: abort.signal });
      const body = await res.text();
      const outcome = res.headers.get("content-type")?.includes("json") ? (JSON.parse(body) as { outcome?: string }).outcome : body;
      return outcome === "ok" ? { cron, scheduledTime, ok: true } : { cron, scheduledTime, ok: false, error: `HTTP ${res.status}, outcome ${outcome}` };
    } catch (err) {
      const cause = err instanceof Error && err.cause instanceof Error ? `: ${err.cause.message}` : "";
      return { cron, scheduledTime, ok: false, error: `${err instanceof Error ? err.message : String(err)}${cause}` };
    } finally {
      clearTimeout(timeout);
      running.delete(abort);
    }
  };

  const tick = (scheduledTime: number) => {
    if (stopped) return;
    schedule(scheduledTime + MINUTE_MS);
    for (const cron of crons) {
      if (!cronMatches(cron, new Date(scheduledTime))) continue;
      void call(cron, scheduledTime).then((run) => {
        if (stopped) return;
        runs.push(run);
        if (!run.ok) {
          failing += 1;
          log(`cron: "${run.cron}" at ${minuteOf(run.scheduledTime)} UTC failed (${run.error}); the next minute runs it again`);
        } else if (failing > 0) {
          log(`cron: "${run.cron}" ran at ${minuteOf(run.scheduledTime)} UTC, after ${failing} failed run(s)`);
          failing = 0;
        }
      });
    }
  };

  /** Arms the timer for the minute starting at `at` (ms); a late wake-up still runs that minute. */
  const schedule = (at: number) => {
    timer = setTimeout(() => tick(at), Math.max(0, at - Date.now()));
  };

  schedule(Math.ceil(Date.now() / MINUTE_MS) * MINUTE_MS);
  return {
    crons,
    runs,
    stop() {
      stopped = true;
      clearTimeout(timer);
      for (const abort of running) abort.abort(new Error("the cron runner stopped"));
    },
  };
}
