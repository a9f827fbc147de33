/**
 * Custom headers may not set hop-by-hop names (docs/reference.md § "POST /v3/webhooks":
 * `headers`): `keep-alive`, `te`, `trailer`, `upgrade` and `proxy-*` are refused like
 * `connection`, `transfer-encoding` and `expect`, in any case, on POST and on PATCH, with the same
 * error code and message.
 */
import { beforeAll, describe, expect, it } from "vitest";
import { callJson } from "../support/helpers";
import { newSchool, register } from "../support/webhooks/harness";

/** [header name as sent, the reserved entry the message names]. */
const HOP_BY_HOP: [string, string][] = [
  ["te", "te"],
  ["TE", "te"],
  ["trailer", "trailer"],
  ["Trailer", "trailer"],
  ["upgrade", "upgrade"],
  ["UPGRADE", "upgrade"],
  ["keep-alive", "keep-alive"],
  ["Keep-Alive", "keep-alive"],
  ["proxy-authorization", "proxy-*"],
  ["Proxy-Connection", "proxy-*"],
  ["connection", "connection"],
  ["Transfer-Encoding", "transfer-encoding"],
  // `Expect: 100-continue` asks the connection to pause before the body (RFC 9110 § 10.1.1).
  ["expect", "expect"],
  ["Expect", "expect"],
];

let key: string;
let hookId: string;
beforeAll(async () => {
  ({ key } = await newSchool("hopbyhop"));
  hookId = (await register(key, "https://hop.example.com/in", { headers: { "x-ok": "1" } })).id;
});

/** Expects `res` to be the 400 of a reserved header `name`, naming it in the details. */
function expectRefused(res: { status: number; body: any }, name: string, reserved: string) {
  expect([res.status, res.body.code]).toEqual([400, "VALIDATION_ERROR"]);
  expect(res.body.details).toContainEqual(
    expect.objectContaining({ message: `is reserved (${reserved}): the delivery or the platform sets it`, path: `headers.${name}` }),
  );
}

describe("hop-by-hop custom header names", () => {
  it.each(HOP_BY_HOP)("POST refuses %s", async (name, reserved) => {
    const res = await callJson("/v3/webhooks", { method: "POST", key, json: { url: "https://hop.example.com/in", headers: { [name]: "x" } } });
    expectRefused(res, name, reserved);
  });

  it.each(HOP_BY_HOP)("PATCH refuses %s and keeps the stored headers", async (name, reserved) => {
    const res = await callJson(`/v3/webhooks/${hookId}`, { method: "PATCH", key, json: { headers: { [name]: "x" } } });
    expectRefused(res, name, reserved);
    const stored = await callJson(`/v3/webhooks/${hookId}`, { key });
    expect(stored.body.result.headerNames).toEqual(["x-ok"]);
  });

  it("a name that only starts like one is accepted (x-upgrade, tea)", async () => {
    const res = await callJson(`/v3/webhooks/${hookId}`, { method: "PATCH", key, json: { headers: { "x-upgrade": "1", tea: "2" } } });
    expect(res.status).toBe(200);
    expect(res.body.result.headerNames).toEqual(["tea", "x-upgrade"]);
    await callJson(`/v3/webhooks/${hookId}`, { method: "PATCH", key, json: { headers: { "x-ok": "1" } } });
  });
});
