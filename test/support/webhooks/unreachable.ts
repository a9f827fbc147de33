/**
 * A course write whose own publish fails (docs/architecture.md § The outbox): sent to the
 * Worker with a `SCHOOL_HUB` whose stubs reject, so its outbox rows stay unpublished with
 * their payload, as after a hub reset, for the sweep or a move's drain to publish.
 */
import { createExecutionContext, env } from "cloudflare:test";
import worker from "../../../src/index";

/** `env` whose hubs cannot be reached: every `publish` rejects. */
const hubUnreachableEnv = {
  ...env,
  SCHOOL_HUB: { idFromName: () => ({}), get: () => ({ publish: () => Promise.reject(new Error("hub unreachable")) }) },
} as unknown as typeof env;

/** Sends `method path` with the JSON body `json` as `key`, the hub unreachable; resolves to the Worker's response. */
export function writeHubUnreachable(key: string, method: string, path: string, json: unknown, headers: Record<string, string> = {}): Promise<Response> {
  return worker.fetch(
    new Request(`http://api.test${path}`, {
      method,
      headers: { ...headers, authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify(json),
    }),
    hubUnreachableEnv,
    createExecutionContext(),
  );
}
