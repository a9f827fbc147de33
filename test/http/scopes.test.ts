/**
 * Scopes (docs/reference.md § Scopes): every operation of the route table (src/api.ts, the
 * list the router and the document are built from, so a new operation is in the matrix by
 * construction) × every scope: a key without a scope the operation needs answers 403
 * FORBIDDEN naming it, having sent nothing to a shard nor to an object (D1 bindings that
 * record what is sent, object namespaces that record what is addressed); a key without any
 * other scope is let through.
 */
import { createExecutionContext, env, waitOnExecutionContext } from "cloudflare:test";
import { beforeAll, describe, expect, it } from "vitest";
import { operations } from "../../src/api";
import { shardsOf } from "../../src/db/shards";
import worker from "../../src/index";
import { recordingD1 } from "../support/d1-statements";
import { BASE } from "../support/helpers";
import { checkResponse } from "../support/openapi-check";
import { ALL_SCOPES, allBut, keyWithScopes } from "../support/scopes";
import { newSchool } from "../support/webhooks/harness";

/** The 403's message for a missing `scope` (docs/reference.md § Scopes). */
const missing = (scope: string) =>
  `This credential lacks the scope ${scope}, which this operation needs; ask the school's administrator for a credential with it.`;

/** A namespace that records every object it is asked for. */
function recordingNamespace<N extends object>(ns: N, touched: string[]): N {
  return new Proxy(ns, {
    get(target, prop) {
      const value = Reflect.get(target, prop, target);
      if (typeof value !== "function") return value;
      return (...args: unknown[]) => {
        touched.push(String(prop));
        return value.apply(target, args);
      };
    },
  });
}

/**
 * Calls the Worker with `key` on bindings that record what the request sends: the
 * directory's and the shards' statements, and the objects addressed. The response is checked
 * against the document.
 */
async function recorded(method: string, path: string, key: string) {
  const d1s = [["DIRECTORY", env.DIRECTORY] as const, ...shardsOf(env).map(({ binding, d1 }) => [binding, d1] as const)].map(
    ([b, d1]) => [b, recordingD1(d1)] as const,
  );
  const objects: string[] = [];
  const recordingEnv = {
    ...env,
    ...Object.fromEntries(d1s.map(([b, r]) => [b, r.db])),
    SCHOOL_HUB: recordingNamespace(env.SCHOOL_HUB, objects),
    WEBHOOK_COURIER: recordingNamespace(env.WEBHOOK_COURIER, objects),
  };
  const headers: Record<string, string> = { authorization: `Bearer ${key}` };
  const hasBody = method === "POST" || method === "PATCH";
  if (hasBody) headers["content-type"] = "application/json";
  const exec = createExecutionContext();
  const res = await worker.fetch(
    new Request(`${BASE}${path}`, { method, headers, body: hasBody ? "{}" : undefined }) as Request<unknown, IncomingRequestCfProperties>,
    recordingEnv,
    exec,
  );
  await waitOnExecutionContext(exec);
  await checkResponse(method, `${BASE}${path}`, res.clone());
  const body = res.headers.get("content-type")?.startsWith("application/json") ? ((await res.json()) as { code?: string; message?: string }) : {};
  const directory = d1s[0]![1].sent;
  const shards = d1s.slice(1).flatMap(([, r]) => r.sent);
  return { status: res.status, body, directory, shards, objects };
}

/** A path of `op` with its parameters filled with ids that exist nowhere (nothing is changed by a call). */
const concrete = (path: string) => path.replace("{id}", path.startsWith("/v3/webhooks") ? "wh_missing" : "crs_missing").replace("{eventId}", "evt_missing");

let schoolId: string;
/** A key with every scope but the one named. */
const without = new Map<string, string>();

beforeAll(async () => {
  ({ schoolId } = await newSchool("scopes"));
  for (const scope of ALL_SCOPES) without.set(scope, await keyWithScopes(schoolId, allBut(scope)));
});

const cases = operations.flatMap((op) => ALL_SCOPES.map((scope) => ({ op, scope, refused: (op.scopes as readonly string[]).includes(scope) })));

describe("every operation × every scope", () => {
  it("the matrix covers every operation of the route table, and each declares its scopes", () => {
    expect(new Set(cases.map((c) => c.op.operationId)).size).toBe(operations.length);
    for (const op of operations) expect(Array.isArray(op.scopes), op.operationId).toBe(true);
  });

  it.each(cases.map((c) => [`${c.op.method} ${c.op.path}`, c.scope, c.refused ? "403" : "allowed", c] as const))(
    "%s without %s: %s",
    async (_key, scope, _expected, { op, refused }) => {
      const r = await recorded(op.method, concrete(op.path), without.get(scope)!);
      if (refused) {
        expect([r.status, r.body.code, r.body.message]).toEqual([403, "FORBIDDEN", missing(scope)]);
        // Before any shard or object: the directory's lookup of the key alone.
        expect(r.shards).toEqual([]);
        expect(r.objects).toEqual([]);
        expect(r.directory.map((s) => s.sql.includes("api_keys"))).toEqual([true]);
      } else {
        expect(r.status).not.toBe(401);
        expect(r.body.message ?? "").not.toContain("lacks the scope");
      }
    },
  );

  it.each(operations.filter((op) => op.scopes.length > 0).map((op) => [`${op.method} ${op.path}`, op] as const))(
    "%s with exactly its declared scopes is let through",
    async (_key, op) => {
      const r = await recorded(op.method, concrete(op.path), await keyWithScopes(schoolId, op.scopes.join(" ")));
      expect(r.status).not.toBe(401);
      expect(r.body.message ?? "").not.toContain("lacks the scope");
    },
  );
});

describe("student data needs students:read", () => {
  it("includeStudents and a studentId filter answer 403 naming it, with no shard read, even once the key's place is cached", async () => {
    const key = without.get("students:read")!;
    // A plain listing is allowed, and the isolate remembers the key's place (the early read's cache).
    expect((await recorded("GET", "/v3/courses", key)).status).toBe(200);
    for (const path of [
      "/v3/courses?includeStudents=true",
      "/v3/courses/crs_missing?includeStudents=1",
      "/v3/courses?studentId=stu_1",
      "/v3/courses/changes?includeStudents=true",
    ]) {
      const r = await recorded("GET", path, key);
      expect([path, r.status, r.body.code, r.body.message]).toEqual([path, 403, "FORBIDDEN", missing("students:read")]);
      expect(r.shards, path).toEqual([]);
    }
    const full = await recorded("GET", "/v3/courses?includeStudents=true", without.get("portal")!);
    expect(full.status).toBe(200);
  });
});
