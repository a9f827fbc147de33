/**
 * A course write whose own publish fails (docs/architecture.md § The outbox): sent to the
 * Worker with a `SCHOOL_HUB` whose stubs reject, so its outbox rows stay unpublished with
 * their payload, as after a hub reset, for the sweep or a move's drain to publish.
 */
import { createExecutionContext, env } from "cloudflare:test";
import { failingPublishEnv } from "../../../src/bench/faults";
import worker from "../../../src/index";
import { BASE } from "../helpers";

/** `env` whose hubs cannot be reached: every `publish` rejects. */
const hubUnreachableEnv = failingPublishEnv(env);

/** Sends `method path` with the JSON body `json` as `key`, the hub unreachable; resolves to the Worker's response. */
export function writeHubUnreachable(key: string, method: string, path: string, json: unknown, headers: Record<string, string> = {}): Promise<Response> {
  return worker.fetch(
    new Request(`${BASE}${path}`, {
      method,
      headers: { ...headers, authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify(json),
    }),
    hubUnreachableEnv,
    createExecutionContext(),
  );
}
