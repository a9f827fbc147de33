/**
 * Where this checkout's `npm start` serves the API: scripts/start.ts records its base URL and
 * process id in `.wrangler/local-api.json` once wrangler is ready and removes it on exit; the
 * CLIs that call the local API (`keys revoke`, `demo:webhooks`) read it, so that
 * `npm start -- --port N` needs no `--base` and another checkout's server is never reached
 * instead (docs/development.md § Other scripts).
 */
import { existsSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { ROOT } from "./wrangler";

/** The record's file: in the checkout's own `.wrangler` directory. */
const LOCAL_API_RECORD = path.join(ROOT, ".wrangler", "local-api.json");

/** The base URL of `wrangler dev` when no `npm start` of this checkout runs (`npm run dev`). */
export const DEFAULT_LOCAL_BASE = "http://127.0.0.1:8787";

/** Records that this process serves the API at `base` (`npm start`, once ready). */
export function recordLocalApi(base: string, file = LOCAL_API_RECORD): void {
  writeFileSync(file, `${JSON.stringify({ base, pid: process.pid })}\n`);
}

/** Removes the record if this process wrote it (`npm start`, on exit). */
export function forgetLocalApi(file = LOCAL_API_RECORD): void {
  try {
    if (JSON.parse(readFileSync(file, "utf8")).pid === process.pid) rmSync(file);
  } catch {
    /* no record, or another's */
  }
}

/** Whether process `pid` is alive (signal 0 checks without signalling). */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}

/**
 * The base URL of this checkout's running `npm start`, or `undefined` when none runs (no
 * record, or its process is gone: a record left by a killed `npm start` is ignored).
 */
export function recordedLocalApi(file = LOCAL_API_RECORD): string | undefined {
  if (!existsSync(file)) return undefined;
  try {
    const { base, pid } = JSON.parse(readFileSync(file, "utf8")) as { base?: unknown; pid?: unknown };
    return typeof base === "string" && typeof pid === "number" && alive(pid) ? base : undefined;
  } catch {
    return undefined;
  }
}

/** The local API's base: `API_BASE`, else this checkout's `npm start`, else `DEFAULT_LOCAL_BASE`. */
export const localApiBase = (file = LOCAL_API_RECORD): string => process.env.API_BASE ?? recordedLocalApi(file) ?? DEFAULT_LOCAL_BASE;
