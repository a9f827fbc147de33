/**
 * Starts and stops `wrangler dev` for scripts (benchmarks): a child process group on
 * 127.0.0.1 with a chosen local state directory and vars, ready once the API answers.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { createServer } from "node:net";
import { ROOT, wranglerBin, wranglerEnv } from "./wrangler";

/** A running dev server. */
export interface DevServer {
  /** `http://127.0.0.1:<port>` */
  base: string;
  port: number;
  child: ChildProcess;
  /** Stops the whole process group (SIGTERM, then SIGKILL after 5 s). */
  stop(): Promise<void>;
}

/** A free TCP port on 127.0.0.1 (free when asked: another process may take it before it is used). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.on("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => resolve(port));
    });
  });
}

/**
 * Runs `wrangler dev [entry] --ip 127.0.0.1 --port <port> --persist-to <dir> --var K:V…` and
 * waits until `GET /v3/courses` answers (401 without a key), at most `timeoutMs` (default 90 s).
 * `port` defaults to a free one.
 *
 * @param opts.entry the Worker's entry instead of wrangler.toml's `main` (the benchmarks
 *   serve `src/bench/entry.ts`, the production Worker with the `/__bench/*` routes).
 * @throws Error when wrangler exits early or does not answer in time (its output included).
 */
export async function startDevServer(opts: {
  persistTo: string;
  entry?: string;
  vars?: Record<string, string>;
  timeoutMs?: number;
  quiet?: boolean;
  port?: number;
}): Promise<DevServer> {
  const port = opts.port ?? (await freePort());
  const args = [
    "dev",
    ...(opts.entry ? [opts.entry] : []),
    "--ip",
    "127.0.0.1",
    "--port",
    String(port),
    "--persist-to",
    opts.persistTo,
    "--log-level",
    "warn",
    "--show-interactive-dev-session=false",
  ];
  for (const [k, v] of Object.entries(opts.vars ?? {})) args.push("--var", `${k}:${v}`);
  const child = spawn(process.execPath, [wranglerBin(), ...args], { cwd: ROOT, detached: true, stdio: ["ignore", "pipe", "pipe"], env: wranglerEnv() });
  let output = "";
  child.stdout!.on("data", (d) => {
    output += d;
    if (!opts.quiet) process.stderr.write(d);
  });
  child.stderr!.on("data", (d) => {
    output += d;
    if (!opts.quiet) process.stderr.write(d);
  });
  let exited = false;
  child.on("exit", () => (exited = true));
  const base = `http://127.0.0.1:${port}`;
  const stop = async () => {
    if (exited || !child.pid) return;
    try {
      process.kill(-child.pid, "SIGTERM");
    } catch {
      return;
    }
    for (let i = 0; i < 50 && !exited; i++) await new Promise((r) => setTimeout(r, 100));
    if (!exited) {
      try {
        process.kill(-child.pid, "SIGKILL");
      } catch {
        /* gone */
      }
    }
  };
  const deadline = Date.now() + (opts.timeoutMs ?? 90_000);
  while (Date.now() < deadline) {
    if (exited) throw new Error(`wrangler dev exited before it was ready:\n${output}`);
    try {
      const res = await fetch(`${base}/v3/courses`);
      await res.arrayBuffer();
      if (res.status === 401) return { base, port, child, stop };
    } catch {
      /* not yet */
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  await stop();
  throw new Error(`wrangler dev did not answer within ${opts.timeoutMs ?? 90_000} ms:\n${output}`);
}
