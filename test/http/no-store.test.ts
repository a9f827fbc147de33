/**
 * `Cache-Control: no-store` on every /v3 answer, errors included (docs/reference.md §
 * Conventions: answers may carry secrets). The OpenAPI document declares the header required
 * on every response, so every test's `call()` checks it too; this file names the rule.
 */
import { describe, expect, it } from "vitest";
import { call } from "../support/helpers";
import { newSchool } from "../support/webhooks/harness";

describe("Cache-Control: no-store on every /v3 answer", () => {
  it("successes, creations and every kind of error", async () => {
    const { key } = await newSchool("nostore");
    const token = ((await (await call("/v3/portal-sessions", { method: "POST", key, json: { readOnly: true } })).json()) as any).result.token;
    const answers = [
      ["200 list", await call("/v3/courses?limit=1", { key })],
      ["200 school", await call("/v3/school", { key })],
      ["201 portal session", await call("/v3/portal-sessions", { method: "POST", key, json: {} })],
      ["201 webhook (its secret)", await call("/v3/webhooks", { method: "POST", key, json: { url: "https://no-store.example.com/in" } })],
      ["400", await call("/v3/courses?limit=0", { key })],
      ["401", await call("/v3/webhooks")],
      ["403", await call("/v3/courses", { key: token })],
      ["404 route", await call("/v3/nowhere", { key })],
      ["404 resource", await call("/v3/webhooks/wh_none", { key })],
      ["405", await call("/v3/school", { method: "DELETE", key })],
      ["413", await call("/v3/webhooks", { method: "POST", key, body: "x".repeat(1_048_577), headers: { "content-type": "application/json" } })],
    ] as const;
    expect(answers.map(([name, res]) => [name, res.headers.get("cache-control")])).toEqual(answers.map(([name]) => [name, "no-store"]));
  });
});
