/**
 * Runs npm scripts side by side (`tsx scripts/side-by-side.ts [-j N] <script>…`, N default 2):
 * at most N at a time, started in the order given, each line of their output prefixed with
 * `[script]`; then one line per script with its exit status and wall time. Exits 1 if any
 * failed (all are run to the end). `npm test` runs the static checks and the self-tests this
 * way (docs/development.md § Suite time): scripts given together must share no state.
 */
import { spawn } from "node:child_process";
import { performance } from "node:perf_hooks";

/** What one script did: its exit code (1 when killed by a signal) and wall time in ms. */
interface Outcome {
  script: string;
  code: number;
  ms: number;
}

/** Writes `stream`'s output to `out`, one whole line at a time, each prefixed. */
function prefixLines(stream: NodeJS.ReadableStream, prefix: string, out: NodeJS.WriteStream): () => void {
  let pending = "";
  stream.setEncoding("utf8");
  stream.on("data", (chunk: string) => {
    const lines = (pending + chunk).split("\n");
    pending = lines.pop() ?? "";
    for (const line of lines) out.write(`${prefix}${line}\n`);
  });
  return () => {
    if (pending) out.write(`${prefix}${pending}\n`);
    pending = "";
  };
}

/** Runs `npm run <script>`; resolves when it exits (never rejects: a spawn error is a failure). */
function runOne(script: string, width: number): Promise<Outcome> {
  const prefix = `[${script}]`.padEnd(width + 3);
  const start = performance.now();
  return new Promise((resolve) => {
    const child = spawn("npm", ["run", "--silent", script], { stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, FORCE_COLOR: "0" } });
    const flushOut = prefixLines(child.stdout, prefix, process.stdout);
    const flushErr = prefixLines(child.stderr, prefix, process.stderr);
    const done = (code: number) => {
      flushOut();
      flushErr();
      resolve({ script, code, ms: performance.now() - start });
    };
    child.on("error", (err) => {
      process.stderr.write(`${prefix}${err.message}\n`);
      done(1);
    });
    child.on("close", (code) => done(code ?? 1));
  });
}

function parseArgs(argv: string[]): { jobs: number; scripts: string[] } {
  let jobs = 2;
  const scripts: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === "-j" || a === "--jobs") {
      jobs = Number(argv[++i]);
      if (!Number.isInteger(jobs) || jobs < 1) throw new Error(`${a} takes a whole number ≥ 1, got ${argv[i]}`);
    } else scripts.push(a);
  }
  if (scripts.length === 0) throw new Error("usage: tsx scripts/side-by-side.ts [-j N] <npm script>…");
  return { jobs, scripts };
}

async function main(): Promise<void> {
  let args: ReturnType<typeof parseArgs>;
  try {
    args = parseArgs(process.argv.slice(2));
  } catch (err) {
    console.error((err as Error).message);
    process.exit(2);
  }
  const width = Math.max(...args.scripts.map((s) => s.length));
  const queue = [...args.scripts];
  const outcomes: Outcome[] = [];
  const lane = async () => {
    for (let script = queue.shift(); script !== undefined; script = queue.shift()) outcomes.push(await runOne(script, width));
  };
  await Promise.all(Array.from({ length: Math.min(args.jobs, args.scripts.length) }, lane));
  for (const script of args.scripts) {
    const o = outcomes.find((x) => x.script === script)!;
    console.log(`${o.code === 0 ? "ok" : "FAILED"} ${script} (exit ${o.code}, ${(o.ms / 1000).toFixed(1)} s)`);
  }
  process.exitCode = outcomes.every((o) => o.code === 0) ? 0 : 1;
}

await main();
