/**
 * Test helpers: calls into the Worker's own `fetch`, and fixture loading through the same
 * import model as `npm run import` (test/support/shards.ts).
 *
 * Every response that goes through `call` (and so `callJson`) is checked against the
 * OpenAPI document (`checkResponse`, test/support/openapi-check.ts): an undocumented operation,
 * status, header or body field fails the test that made the request.
 */
import { env } from "cloudflare:test";
import { exports } from "cloudflare:workers";
import { expect } from "vitest";
import { shardBindings } from "../../src/db/shard-names";
import { shardFor } from "../../src/db/shards";
import { checkResponse } from "./openapi-check";

export { loadFixture } from "./shards";

export const BASE = "http://api.test";

/**
 * Calls the Worker. `key` adds `Authorization: Bearer <key>`; a `json` body is sent as JSON;
 * `redirect: "manual"` returns a redirect itself (the binding follows it by default).
 * The response is checked against the OpenAPI document before it is returned (its body is
 * read from a clone, so the caller can still read it).
 *
 * @throws Error when the response is not as documented (see `checkResponse`).
 */
export async function call(
  path: string,
  init: { method?: string; key?: string; json?: unknown; headers?: Record<string, string>; body?: BodyInit; redirect?: "follow" | "manual" } = {},
): Promise<Response> {
  const headers: Record<string, string> = { ...init.headers };
  if (init.key) headers.authorization = `Bearer ${init.key}`;
  let body = init.body;
  if (init.json !== undefined) {
    body = JSON.stringify(init.json);
    headers["content-type"] ??= "application/json";
  }
  const method = init.method ?? "GET";
  const res = await exports.default.fetch(new Request(`${BASE}${path}`, { method, headers, body, redirect: init.redirect ?? "follow" }));
  await checkResponse(method, `${BASE}${path}`, res);
  return res;
}

/** Calls the Worker and decodes the JSON body, checking the envelope's shape and headers. */
export async function callJson<T = any>(path: string, init: Parameters<typeof call>[1] = {}): Promise<{ status: number; body: T; res: Response }> {
  const res = await call(path, init);
  expect(res.headers.get("content-type")).toBe("application/json; charset=utf-8");
  expect(res.headers.get("x-request-id")).toBeTruthy();
  expect(res.headers.get("server-timing")).toMatch(/db;dur=[\d.]+.*total;dur=[\d.]+/);
  const body = (await res.json()) as any;
  if (res.status >= 400) {
    expect(body.status).toBe("error");
    expect(body.code).toMatch(/^[A-Z_]+$/);
    expect(typeof body.message).toBe("string");
    expect(body.requestId).toBe(res.headers.get("x-request-id"));
  } else {
    expect(body.status).toBe("success");
  }
  return { status: res.status, body, res };
}

/** Every table the import model writes, in dependency order (docs/operations.md § Data import (operators)): the directory's, then each shard's. */
export const IMPORT_TABLES = [
  "schools",
  "api_keys",
  "held_schools",
  "trainings",
  "groups",
  "students",
  "professors",
  "survey_templates",
  "courses",
  "course_groups",
  "course_students",
  "course_professors",
  "course_survey_templates",
];

/** The databases that hold `table` (one of `IMPORT_TABLES`): the directory, or every shard. */
export const databasesOf = (table: string): D1Database[] =>
  table === "schools" || table === "api_keys" ? [env.DIRECTORY] : shardBindings(env).map((b) => shardFor(env, b));
