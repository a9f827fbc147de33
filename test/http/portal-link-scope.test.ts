/**
 * A link's token is no bearer (docs/reference.md § Portal sessions): a token minted by POST
 * /v3/portal-sessions works only on the redeem; anywhere else it is 401 UNAUTHORIZED saying
 * to open the link. The session token the redeem answers works.
 */
import { beforeAll, describe, expect, it } from "vitest";
import { callJson } from "../support/helpers";
import { mintPortalSession, newSchool } from "../support/webhooks/harness";

let school: { schoolId: string; key: string };

beforeAll(async () => {
  school = await newSchool("linkscope");
});

describe("a link's token before its redeem", () => {
  it("GET and POST /v3/webhooks and GET /v3/courses answer 401 saying to open the link; redeemed, the session token works", async () => {
    const link = await mintPortalSession(school.key);
    const calls = [
      callJson("/v3/webhooks", { key: link.token }),
      callJson("/v3/webhooks", { method: "POST", key: link.token, json: { url: "https://hooks.example.com/link" } }),
      callJson("/v3/school", { key: link.token }),
      callJson("/v3/courses?limit=1", { key: link.token }),
    ];
    for (const { status, body } of await Promise.all(calls)) {
      expect([status, body.code]).toEqual([401, "UNAUTHORIZED"]);
      expect(body.message).toContain("open the link");
    }
    const redeemed = await callJson("/v3/portal-sessions/redeem", { method: "POST", key: link.token });
    expect(redeemed.status).toBe(201);
    const token = redeemed.body.result.token;
    const created = await callJson("/v3/webhooks", { method: "POST", key: token, json: { url: "https://hooks.example.com/session" } });
    expect(created.status).toBe(201);
    const list = await callJson("/v3/webhooks", { key: token });
    expect([list.status, list.body.result.map((w: { url: string }) => w.url)]).toEqual([200, ["https://hooks.example.com/session"]]);
  });

  it("a read-only link's token is refused the same way", async () => {
    const link = await mintPortalSession(school.key, { readOnly: true });
    const { status, body } = await callJson("/v3/webhooks", { key: link.token });
    expect([status, body.code]).toEqual([401, "UNAUTHORIZED"]);
    expect(body.message).toContain("open the link");
  });
});
