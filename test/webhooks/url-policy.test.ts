/**
 * URL policy (API.md § "POST /v3/webhooks" URL policy, § "Error codes" INVALID_WEBHOOK_URL;
 * WEBHOOK_ALLOW_INSECURE_URLS), case by case on the pure function, the courier's check before
 * sending, then through POST /v3/webhooks.
 */
import { beforeAll, describe, expect, it } from "vitest";
import { checkWebhookUrl, sendRefusal } from "../../src/webhooks/delivery/url-policy";
import { callJson } from "../support/helpers";
import { newSchool } from "../support/webhooks/harness";

const rejected: [string, RegExp][] = [
  // scheme
  ["http://example.com/hook", /must use https/],
  ["ftp://example.com/hook", /scheme "ftp"/],
  ["javascript:alert(1)", /scheme "javascript"/],
  ["file:///etc/passwd", /scheme "file"/],
  // not a URL
  ["example.com/hook", /cannot be parsed/],
  ["", /cannot be parsed/],
  ["https://", /cannot be parsed/],
  [`https://example.com/${"a".repeat(2100)}`, /longer than 2048/],
  // loopback names
  ["https://localhost/hook", /loopback name/],
  ["https://LOCALHOST:8443/hook", /loopback name/],
  ["https://localhost./hook", /loopback name/],
  ["https://api.localhost/hook", /loopback name/],
  ["https://a.b.localhost./hook", /loopback name/],
  // IPv4 loopback in every spelling
  ["https://127.0.0.1/hook", /loopback/],
  ["https://127.255.255.254/hook", /loopback/],
  ["https://127.1/hook", /loopback/],
  ["https://0x7f000001/hook", /loopback/],
  ["https://0x7f.0.0.1/hook", /loopback/],
  ["https://2130706433/hook", /loopback/],
  ["https://0177.0.0.1/hook", /loopback/],
  ["https://127.0.0.1./hook", /loopback/],
  // other IPv4 ranges
  ["https://0.0.0.0/hook", /unspecified/],
  ["https://0/hook", /unspecified/],
  ["https://10.0.0.1/hook", /private/],
  ["https://10.255.255.255/hook", /private/],
  ["https://172.16.0.1/hook", /private/],
  ["https://172.31.255.255/hook", /private/],
  ["https://192.168.1.1/hook", /private/],
  ["https://169.254.169.254/latest/meta-data", /link-local/],
  ["https://100.64.0.1/hook", /carrier-grade NAT/],
  ["https://100.127.255.255/hook", /carrier-grade NAT/],
  ["https://192.0.0.8/hook", /IETF/],
  ["https://198.18.0.1/hook", /benchmarking/],
  ["https://224.0.0.1/hook", /multicast/],
  ["https://255.255.255.255/hook", /broadcast/],
  ["https://192.0.2.10/hook", /documentation/],
  // IPv6
  ["https://[::1]/hook", /loopback \(::1\)/],
  ["https://[0:0:0:0:0:0:0:1]/hook", /loopback \(::1\)/],
  ["https://[::]/hook", /unspecified/],
  ["https://[::ffff:127.0.0.1]/hook", /IPv4-mapped loopback/],
  ["http://[::ffff:127.0.0.1]/hook", /must use https/],
  ["https://[::ffff:7f00:1]/hook", /IPv4-mapped loopback/],
  ["https://[::ffff:10.1.2.3]/hook", /IPv4-mapped private/],
  ["https://[::ffff:169.254.169.254]/hook", /IPv4-mapped link-local/],
  ["https://[::127.0.0.1]/hook", /IPv4-compatible|loopback/],
  ["https://[64:ff9b::10.0.0.1]/hook", /NAT64/],
  ["https://[64:ff9b::8.8.8.8]/hook", /NAT64/],
  ["https://[2002:7f00:1::]/hook", /6to4/],
  ["https://[fc00::1]/hook", /unique-local/],
  ["https://[fd12:3456:789a::1]/hook", /unique-local/],
  ["https://[fe80::1]/hook", /link-local/],
  ["https://[febf::1]/hook", /link-local/],
  ["https://[fec0::1]/hook", /site-local/],
  ["https://[ff02::1]/hook", /multicast/],
  ["https://[2001:db8::1]/hook", /documentation/],
  // userinfo
  ["https://user:pass@example.com/", /credentials/],
  ["https://user@example.com/hook", /credentials/],
  ["https://:secret@example.com/hook", /credentials/],
  // single-label hosts, any case, with or without a trailing dot
  ["https://internal/", /single-label|\.internal/],
  ["https://internal./", /single-label|\.internal/],
  ["https://INTERNAL/", /single-label|\.internal/],
  ["https://metadata/computeMetadata/v1/", /single-label/],
  ["https://mylocalhost/hook", /single-label/],
  ["https://intranet-server:8443/hook", /single-label/],
  ["https://com/hook", /single-label/],
  // special-use and internal names, any case, with or without a trailing dot
  ["https://metadata.google.internal/computeMetadata/v1/", /internal name \(\.internal\)/],
  ["https://foo.internal/", /\.internal/],
  ["https://foo.internal./", /\.internal/],
  ["https://FOO.Internal/", /\.internal/],
  ["https://METADATA.GOOGLE.INTERNAL./", /\.internal/],
  ["https://printer.local/hook", /\.local\)/],
  ["https://router.home.arpa/hook", /\.home\.arpa/],
  ["https://home.arpa/hook", /\.home\.arpa/],
  ["https://nas.lan/hook", /\.lan\)/],
  ["https://wiki.intranet/hook", /\.intranet/],
  ["https://erp.corp/hook", /\.corp/],
  ["https://abcdefghijklmnop.onion/hook", /\.onion/],
  ["https://api.test/hook", /\.test/],
  ["https://x.invalid/hook", /\.invalid/],
  ["https://hooks.example/hook", /\.example\)/],
  ["https://bücher.example/hook", /\.example\)/],
  ["https://Hooks.EXAMPLE./hook", /\.example\)/],
  ["https://local%68ost/hook", /loopback name/],
  ["https://ｌｏｃａｌｈｏｓｔ/hook", /loopback name/],
  ["https://a..example.com/hook", /empty label/],
];

/**
 * IP literals outside public unicast, as ipaddr.js's `range()` names them from the IANA
 * special-purpose address registries, and the exceptions the policy adds to it.
 */
const specialPurpose: [string, RegExp][] = [
  ["https://[::ffff:0:127.0.0.1]/", /IPv4-translated/],
  ["https://[64:ff9b:1::a9fe:a9fe]/", /IPv4\/IPv6 translation/],
  ["https://[2001::1]/", /Teredo/],
  ["https://[100::1]/", /discard-only/],
  ["https://[3fff::1]/", /documentation/],
  ["https://[5f00::1]/", /SRv6/],
  ["https://198.18.0.1/", /benchmarking/],
  ["https://224.0.0.1/", /multicast/],
  ["https://255.255.255.255/", /broadcast/],
  ["https://192.0.0.192/", /IETF protocol assignments/],
  ["https://240.0.0.1/", /future use/],
  ["https://192.0.2.1/", /documentation/],
  ["https://192.31.196.1/", /AS112/],
  ["https://[2001:2::1]/", /IETF protocol assignments|benchmarking/],
  ["https://[::ffff:100.64.0.1]/", /IPv4-mapped carrier-grade NAT/],
  // The exceptions: ipaddr.js 2.5 calls these `unicast`.
  ["https://[100:0:0:1::1]/", /dummy IPv6 prefix/],
  ["https://[::8.8.8.8]/", /IPv4-compatible/],
  ["https://[4000::1]/", /outside the global unicast space/],
];

const accepted: [string, string][] = [
  ["https://example.com/hook", "https://example.com/hook"],
  ["https://Hooks.Example.COM:8443/a/b?x=1", "https://hooks.example.com:8443/a/b?x=1"],
  ["https://example.com", "https://example.com/"],
  ["https://8.8.8.8/hook", "https://8.8.8.8/hook"],
  ["https://172.15.255.255/hook", "https://172.15.255.255/hook"],
  ["https://172.32.0.1/hook", "https://172.32.0.1/hook"],
  ["https://100.63.255.255/hook", "https://100.63.255.255/hook"],
  ["https://100.128.0.1/hook", "https://100.128.0.1/hook"],
  ["https://[2606:4700:4700::1111]/hook", "https://[2606:4700:4700::1111]/hook"],
  ["https://[::ffff:8.8.8.8]/hook", "https://[::ffff:808:808]/hook"],
  ["https://[2a00:1450:4007:80e::200e]/hook", "https://[2a00:1450:4007:80e::200e]/hook"],
  ["https://1.1.1.1/hook", "https://1.1.1.1/hook"],
  ["https://localhost.example.com/hook", "https://localhost.example.com/hook"],
  ["https://xn--bcher-kva.example.com/hook", "https://xn--bcher-kva.example.com/hook"],
  ["https://bücher.example.com/hook", "https://xn--bcher-kva.example.com/hook"],
  ["https://hooks.example.com./hook", "https://hooks.example.com./hook"],
  ["https://internal.example.com/hook", "https://internal.example.com/hook"],
  ["https://test.example.org/hook", "https://test.example.org/hook"],
  ["https://local.example.net/hook", "https://local.example.net/hook"],
  ["https://example.corporate.com/hook", "https://example.corporate.com/hook"],
];

describe("checkWebhookUrl (strict)", () => {
  it.each(rejected)("rejects %s", (url, reason) => {
    const verdict = checkWebhookUrl(url, false);
    expect(verdict.ok).toBe(false);
    if (!verdict.ok) expect(verdict.reason).toMatch(reason);
  });

  it.each(specialPurpose)("refuses the special-purpose address %s", (url, reason) => {
    const verdict = checkWebhookUrl(url, false);
    expect(verdict).toMatchObject({ ok: false, liftable: true });
    if (!verdict.ok) expect(verdict.reason).toMatch(reason);
  });

  it.each(accepted)("accepts %s as %s", (url, normalized) => {
    expect(checkWebhookUrl(url, false)).toEqual({ ok: true, url: normalized });
  });
});

describe("ports: 443 and 8443 only, unless insecure URLs are allowed", () => {
  it.each(["https://hooks.example.com:6379/in", "https://hooks.example.com:80/in", "https://hooks.example.com:8080/in", "https://93.184.215.14:22/"])(
    "refuses %s, naming the port",
    (url) => {
      const verdict = checkWebhookUrl(url, false);
      expect(verdict).toMatchObject({ ok: false, liftable: true });
      if (!verdict.ok) expect(verdict.reason).toMatch(/^the port \d+ is not allowed; use 443 or 8443$/);
    },
  );

  it.each([
    ["https://hooks.example.com:443/in", "https://hooks.example.com/in"],
    ["https://hooks.example.com:8443/in", "https://hooks.example.com:8443/in"],
  ])("accepts %s", (url, normalized) => {
    expect(checkWebhookUrl(url, false)).toEqual({ ok: true, url: normalized });
  });

  it("lets any port through with WEBHOOK_ALLOW_INSECURE_URLS=true", () => {
    expect(checkWebhookUrl("https://hooks.example.com:6379/in", true)).toEqual({ ok: true, url: "https://hooks.example.com:6379/in" });
  });

  it("POST and PATCH answer 400 INVALID_WEBHOOK_URL with the port in the reason", async () => {
    const { key } = await newSchool("port");
    const created = await callJson("/v3/webhooks", { method: "POST", key, json: { url: "https://hooks.example.com:6379/" } });
    expect([created.status, created.body.code, created.body.details]).toEqual([
      400,
      "INVALID_WEBHOOK_URL",
      [{ path: "url", message: "the port 6379 is not allowed; use 443 or 8443" }],
    ]);
    const hook = await callJson("/v3/webhooks", { method: "POST", key, json: { url: "https://hooks.example.com:8443/" } });
    expect(hook.status).toBe(201);
    const patched = await callJson(`/v3/webhooks/${hook.body.result.id}`, { method: "PATCH", key, json: { url: "https://hooks.example.com:25/" } });
    expect([patched.status, patched.body.code]).toEqual([400, "INVALID_WEBHOOK_URL"]);
    expect(patched.body.message).toContain("the port 25 is not allowed");
  });
});

describe("sendRefusal (the courier's check before each attempt)", () => {
  it("refuses, with the reason, a stored URL the current policy refuses", () => {
    expect(sendRefusal("https://[::ffff:7f00:1]/hook", false)).toMatch(/^refused by the URL policy: .*IPv4-mapped loopback/);
    expect(sendRefusal("http://127.0.0.1:9000/hook", false)).toMatch(/must use https/);
  });

  it("lets through what the policy accepts, and everything but a bad scheme with WEBHOOK_ALLOW_INSECURE_URLS=true", () => {
    expect(sendRefusal("https://hooks.example.com/in", false)).toBeNull();
    expect(sendRefusal("http://127.0.0.1:9000/hook", true)).toBeNull();
    expect(sendRefusal("ftp://127.0.0.1/x", true)).toMatch(/scheme "ftp"/);
  });
});

describe("checkWebhookUrl with WEBHOOK_ALLOW_INSECURE_URLS=true", () => {
  it.each([
    ["http://127.0.0.1:9000/hook", "http://127.0.0.1:9000/hook"],
    ["http://localhost:9000/hook", "http://localhost:9000/hook"],
    ["https://[::ffff:127.0.0.1]/hook", "https://[::ffff:7f00:1]/hook"],
    ["http://0x7f000001/hook", "http://127.0.0.1/hook"],
    ["https://10.0.0.1/hook", "https://10.0.0.1/hook"],
    ["https://metadata.google.internal/", "https://metadata.google.internal/"],
    ["https://internal/", "https://internal/"],
    ["https://user:pass@example.com/", "https://user:pass@example.com/"],
  ])("lifts the policy for %s", (url, normalized) => {
    expect(checkWebhookUrl(url, true)).toEqual({ ok: true, url: normalized });
  });

  it.each(["ftp://127.0.0.1/x", "not a url", `https://example.com/${"a".repeat(2100)}`])("still rejects %s", (url) => {
    expect(checkWebhookUrl(url, true).ok).toBe(false);
  });
});

describe("POST /v3/webhooks applies the policy", () => {
  let key: string;
  beforeAll(async () => {
    ({ key } = await newSchool("url"));
  });

  it.each([
    "http://example.com/hook",
    "https://localhost./hook",
    "https://0x7f000001/hook",
    "https://2130706433/hook",
    "https://127.1/hook",
    "https://[::ffff:127.0.0.1]/hook",
    "https://169.254.169.254/",
    "https://[fd00::1]/hook",
    "not a url",
    "https://metadata.google.internal/",
    "https://foo.internal/",
    "https://internal/",
    "https://INTERNAL./",
    "https://Foo.Internal./",
    "https://user:pass@example.com/",
    "https://hooks.example/",
    "https://localhost/",
    "https://[2001::1]/",
    "https://[64:ff9b:1::a9fe:a9fe]/",
  ])("400 INVALID_WEBHOOK_URL for %s", async (url) => {
    const { status, body } = await callJson("/v3/webhooks", { method: "POST", key, json: { url } });
    expect(status).toBe(400);
    expect(body.code).toBe("INVALID_WEBHOOK_URL");
    expect(body.details).toEqual([{ path: "url", message: expect.any(String) }]);
  });

  it("names WEBHOOK_ALLOW_INSECURE_URLS as the local-development switch, where it would lift the refusal", async () => {
    const local = await callJson("/v3/webhooks", { method: "POST", key, json: { url: "http://127.0.0.1:9000/hook" } });
    expect(local.body.message).toBe(
      "The webhook URL is not accepted: the URL must use https. For local development, WEBHOOK_ALLOW_INSECURE_URLS=true lifts this policy.",
    );
    const malformed = await callJson("/v3/webhooks", { method: "POST", key, json: { url: "not a url" } });
    expect(malformed.body.message).not.toMatch(/WEBHOOK_ALLOW_INSECURE_URLS/);
  });

  it("stores the normalized URL of an accepted one", async () => {
    const { status, body } = await callJson("/v3/webhooks", { method: "POST", key, json: { url: "https://Hooks.Example.com/in" } });
    expect(status).toBe(201);
    expect(body.result.url).toBe("https://hooks.example.com/in");
  });
});
