/**
 * The fuzz generators cover the router: every route has one — the API's operations
 * (src/api.ts) and the benchmark entry's /__bench/* routes (src/bench/entry.ts), which the
 * production Worker answers 404 — (test/fuzz/contract.ts lists them from docs/reference.md), and the
 * two fuzz files share them all.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { operations } from "../../src/api";
import { benchRoutes } from "../../src/bench/entry";

/** Every route, its path written as test/fuzz/contract.ts writes it (`:id`). */
const routes = [...operations, ...benchRoutes].map((r) => ({ method: r.method, path: r.path.replace(/\{(\w+)\}/g, ":$1") }));

import { ROUTES } from "./contract";
import { routeArbitraries } from "./requests";

const ctx = {
  readKey: "sk_test_a",
  writeKey: "sk_test_w",
  refusedKeys: [],
  readCourseIds: [],
  writeCourseIds: [],
  writeRefs: { groupIds: [], studentIds: [], professorIds: [], trainingIds: [], surveyTemplateIds: [] },
  readRefs: { groupIds: [], studentIds: [], professorIds: [], trainingIds: [], surveyTemplateIds: [] },
  readWebhookIds: [],
  writeWebhookIds: [],
  deletableWebhookIds: [],
  webhookUrls: [],
  insecureUrls: false,
};

describe("fuzz generators", () => {
  it("cover every route of the router, and only those", () => {
    const table = routes.map((r) => `${r.method} ${r.path}`).sort();
    expect(ROUTES.map((r) => `${r.method} ${r.path}`).sort()).toEqual(table);
    const generated = Object.keys(routeArbitraries(ctx)).filter((k) => k !== "misrouted" && k !== "unknown path");
    expect(generated.sort()).toEqual(table);
  });

  it("generate for a run without webhook targets: no valid registration then", () => {
    const hooks = fc.sample(routeArbitraries(ctx)["POST /v3/webhooks"]!, { numRuns: 200, seed: 1 });
    expect(hooks.every((r) => r.faults.length > 0)).toBe(true);
  });
});
