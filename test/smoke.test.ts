import { exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";

describe("smoke", () => {
  it("answers 401 without a key", async () => {
    const res = await exports.default.fetch("http://api.test/v3/courses");
    expect(res.status).toBe(401);
    const body = await res.json();
    expect(body).toMatchObject({ status: "error", code: "UNAUTHORIZED" });
  });
});
