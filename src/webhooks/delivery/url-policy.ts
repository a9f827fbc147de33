/**
 * Webhook URL policy (docs/reference.md § URL policy; docs/choices.md § Webhook URLs). One
 * function, `checkWebhookUrl`, judges every URL a registration may take (POST and PATCH); the
 * courier asks `sendRefusal` again before each attempt, so a URL stored under an older or
 * laxer policy is not sent to.
 *
 * Pure: no DNS, no I/O. The WHATWG parser canonicalizes every spelling of an IP literal
 * (`0x7f000001`, `127.1`, `[::ffff:127.0.0.1]`) before ipaddr.js's IANA special-purpose
 * registries judge it: only `unicast` passes, with the exceptions of `V6_UNICAST_EXCEPTIONS`.
 * A port other than 443 or 8443 is refused. Host names are not resolved: see
 * `checkWebhookUrl` for the egress guarantee relied on.
 */
import ipaddr from "ipaddr.js";
import { ApiError } from "../../http/errors";

/**
 * The verdict on a URL: the normalized URL to store, or a sentence saying why not.
 * `liftable` tells whether WEBHOOK_ALLOW_INSECURE_URLS=true would have accepted it.
 */
export type UrlVerdict = { ok: true; url: string } | { ok: false; reason: string; liftable: boolean };

/** Ports a webhook URL may name besides https's default 443 (`URL.port` is "" for it). */
const ALLOWED_PORTS = ["8443"];

/** Longest accepted webhook URL, in characters. */
const MAX_URL_LENGTH = 2048;

/**
 * What each of ipaddr.js's `range()` names means, for the reason sentence. ipaddr.js (2.5)
 * implements the IANA IPv4 and IPv6 Special-Purpose Address Registries (RFC 6890, RFC 8190)
 * plus multicast; only `unicast` passes. A name missing here (a newer ipaddr.js) is refused
 * all the same, under its own name.
 */
const V4_RANGES: Record<string, string> = {
  unspecified: "unspecified (0.0.0.0/8)",
  broadcast: "broadcast (255.255.255.255)",
  multicast: "multicast (224.0.0.0/4)",
  linkLocal: "link-local (169.254.0.0/16)",
  loopback: "loopback (127.0.0.0/8)",
  carrierGradeNat: "carrier-grade NAT (100.64.0.0/10)",
  private: "private (10.0.0.0/8, 172.16.0.0/12, 192.168.0.0/16)",
  reserved: "reserved (IETF protocol assignments 192.0.0.0/24, documentation, benchmarking 198.18.0.0/15 or future use 240.0.0.0/4)",
  as112: "an AS112 DNS sink (192.31.196.0/24, 192.175.48.0/24)",
  amt: "AMT relay anycast (192.52.193.0/24)",
};

const V6_RANGES: Record<string, string> = {
  unspecified: "unspecified (::)",
  loopback: "loopback (::1)",
  linkLocal: "link-local (fe80::/10)",
  multicast: "multicast (ff00::/8)",
  uniqueLocal: "unique-local (fc00::/7)",
  deprecatedSiteLocal: "site-local (fec0::/10, deprecated)",
  discard: "discard-only (100::/64)",
  rfc6145: "IPv4-translated (::ffff:0:0:0/96)",
  rfc6052: "IPv4/IPv6 translation (NAT64: 64:ff9b::/96, 64:ff9b:1::/48)",
  "6to4": "6to4 (2002::/16)",
  teredo: "Teredo (2001::/32)",
  benchmarking: "benchmarking (2001:2::/48)",
  amt: "AMT (2001:3::/32)",
  as112v6: "an AS112 DNS sink (2001:4:112::/48, 2620:4f:8000::/48)",
  deprecatedOrchid: "ORCHID (2001:10::/28, deprecated)",
  orchid2: "ORCHIDv2 (2001:20::/28)",
  droneRemoteIdProtocolEntityTags: "drone remote ID entity tags (2001:30::/28)",
  segmentRouting: "SRv6 segment identifiers (5f00::/16)",
  reserved: "reserved (IETF protocol assignments 2001::/23, documentation 2001:db8::/32 or 3fff::/20)",
};

/**
 * The exceptions, in one place: IPv6 addresses ipaddr.js 2.5 calls `unicast` that are not
 * globally reachable, each refused with its reason. (Its IPv4 table covers every IPv4 block
 * the IANA registry marks not globally reachable; no exception there.)
 * - `100:0:0:1::/64`, the dummy IPv6 prefix (RFC 9780): in the IANA IPv6 Special-Purpose
 *   Address Registry, globally reachable: false; not yet in ipaddr.js's table.
 * - `::/96`, IPv4-compatible addresses (deprecated by RFC 4291 § 2.5.5.1; `[::127.0.0.1]`).
 * - anything else outside `2000::/3`, the only block of the IANA IPv6 Address Space registry
 *   allocated to global unicast (the rest is reserved by the IETF).
 */
const V6_UNICAST_EXCEPTIONS: ReadonlyArray<readonly [ipaddr.IPv6, number, string]> = [
  [ipaddr.IPv6.parse("100:0:0:1::"), 64, "the dummy IPv6 prefix (100:0:0:1::/64, RFC 9780)"],
  [ipaddr.IPv6.parse("::"), 96, "IPv4-compatible (::/96, deprecated)"],
];
const V6_GLOBAL_UNICAST: readonly [ipaddr.IPv6, number] = [ipaddr.IPv6.parse("2000::"), 3];

/**
 * Why an IP literal (the WHATWG-serialized host: dotted IPv4, or bracketed IPv6) is refused,
 * if it is. IPv4-mapped IPv6 (`[::ffff:a.b.c.d]`) is judged by its IPv4 address.
 */
function blockedAddress(host: string): string | undefined {
  const v6 = host.startsWith("[");
  let addr: ipaddr.IPv4 | ipaddr.IPv6;
  try {
    addr = ipaddr.parse(v6 ? host.slice(1, -1) : host);
  } catch {
    return `the address ${host} is not a valid IP address`;
  }
  if (addr.kind() === "ipv6" && (addr as ipaddr.IPv6).isIPv4MappedAddress()) {
    const inner = blockedV4((addr as ipaddr.IPv6).toIPv4Address());
    return inner ? `the address ${host} is IPv4-mapped ${inner}` : undefined;
  }
  const range = addr.kind() === "ipv4" ? blockedV4(addr as ipaddr.IPv4) : blockedV6(addr as ipaddr.IPv6);
  return range ? `the address ${host} is ${range}` : undefined;
}

/** The description of the range holding an IPv4 address, unless it is public unicast. */
function blockedV4(addr: ipaddr.IPv4): string | undefined {
  const range = addr.range();
  return range === "unicast" ? undefined : (V4_RANGES[range] ?? `reserved (${range})`);
}

/** The description of the range holding an IPv6 address, unless it is public unicast. */
function blockedV6(addr: ipaddr.IPv6): string | undefined {
  const range = addr.range();
  if (range !== "unicast") return V6_RANGES[range] ?? `reserved (${range})`;
  const exception = V6_UNICAST_EXCEPTIONS.find(([net, bits]) => addr.match(net, bits));
  if (exception) return exception[2];
  if (!addr.match(...V6_GLOBAL_UNICAST)) return "outside the global unicast space (2000::/3)";
  return undefined;
}

/**
 * Special-use and internal names (docs/reference.md § "POST /v3/webhooks"): the name itself and every
 * name under it. `localhost` (RFC 6761), `local` (mDNS, RFC 6762), `internal` (ICANN's
 * private-use TLD; cloud metadata lives at `metadata.google.internal`), `home.arpa`
 * (RFC 8375), `lan`, `intranet`, `corp` (common private names), `onion` (RFC 7686), `test`,
 * `invalid`, `example` (RFC 2606 / 6761).
 */
const RESERVED_NAME_SUFFIXES = ["localhost", "local", "internal", "home.arpa", "lan", "intranet", "corp", "onion", "test", "invalid", "example"] as const;

/** The reason a host name (lower case, WHATWG-parsed, not an IP literal) is refused, if it is. */
function blockedName(host: string): string | undefined {
  const bare = host.endsWith(".") ? host.slice(0, -1) : host;
  const labels = bare.split(".");
  if (labels.some((label) => label === "")) return `the host "${host}" has an empty label`;
  const reserved = RESERVED_NAME_SUFFIXES.find((suffix) => bare === suffix || bare.endsWith(`.${suffix}`));
  if (reserved === "localhost") return `the host "${host}" is a loopback name`;
  if (reserved) return `the host "${host}" is a special-use or internal name (.${reserved})`;
  if (labels.length === 1) return `the host "${host}" is a single-label name; use a fully qualified public name`;
  return undefined;
}

/**
 * Judges a webhook target URL.
 *
 * Rules (all lifted, except "must parse as an http(s) URL", when `allowInsecure`):
 * - the scheme is `https:`;
 * - no userinfo (`https://user:pass@host/`);
 * - an IP literal is a globally reachable unicast address: ipaddr.js's `range()` (the IANA
 *   IPv4 and IPv6 special-purpose address registries, and multicast) says `unicast`, and it
 *   is none of `V6_UNICAST_EXCEPTIONS` and, for IPv6, within 2000::/3; an IPv4-mapped IPv6
 *   address (`[::ffff:10.0.0.1]`) is judged by its IPv4 address;
 * - a host name is not single-label (`https://metadata/`), has no empty label, and is not a
 *   special-use or internal name (`RESERVED_NAME_SUFFIXES`: `localhost`, `*.internal`,
 *   `*.local`, …), whatever its case and with or without a trailing dot;
 * - the port, when given, is 443 or 8443 (so that a registration cannot probe other
 *   services, `POST …/test` showing the first 1 KB of their answer).
 *
 * Host names are not resolved (docs/reference.md § GET /v3/webhooks/{id}, URL policy): a
 * public name that resolves to a private address is not caught here. The egress guarantee is
 * Cloudflare's: a deployed Worker's fetch() reaches a private network only through a Workers
 * VPC binding over Cloudflare Tunnel, never by a name or address in a URL
 * (https://developers.cloudflare.com/workers-vpc/configuration/vpc-services/), and a
 * subrequest cannot target an IP address directly
 * (https://developers.cloudflare.com/workers/platform/known-issues/#fetch-to-ip-addresses).
 * A deployment elsewhere must provide the same egress guarantee.
 *
 * Always: at most 2,048 characters, `http:` or `https:` only, a host present.
 *
 * @param raw the URL as the client sent it.
 * @param allowInsecure `true` when WEBHOOK_ALLOW_INSECURE_URLS is `"true"` (local development).
 * @returns `{ ok: true, url }` with the WHATWG-normalized URL (what the courier will POST
 *   to), or `{ ok: false, reason, liftable }` with a sentence for the INVALID_WEBHOOK_URL
 *   message, `liftable` when WEBHOOK_ALLOW_INSECURE_URLS=true would accept the URL.
 */
export function checkWebhookUrl(raw: string, allowInsecure: boolean): UrlVerdict {
  const refuse = (reason: string, liftable = false): UrlVerdict => ({ ok: false, reason, liftable });
  if (raw.length > MAX_URL_LENGTH) return refuse(`the URL is longer than ${MAX_URL_LENGTH} characters`);
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return refuse("the URL cannot be parsed; send an absolute URL such as https://example.com/hooks");
  }
  if (url.protocol !== "https:" && url.protocol !== "http:") return refuse(`the scheme "${url.protocol.slice(0, -1)}" is not allowed; use https`);
  if (url.hostname === "") return refuse("the URL has no host");
  if (allowInsecure) return { ok: true, url: url.href };
  if (url.protocol !== "https:") return refuse("the URL must use https", true);
  if (url.username !== "" || url.password !== "") return refuse("the URL must not carry credentials (user:pass@)", true);
  // The WHATWG parser drops a default port (`:443` on https), so `port` is "" for 443.
  if (url.port !== "" && !ALLOWED_PORTS.includes(url.port)) return refuse(`the port ${url.port} is not allowed; use 443 or 8443`, true);

  // The WHATWG parser has already lower-cased the host, decoded %-escapes and mapped
  // Unicode (IDNA), so `LOCALHOST`, `local%68ost` and full-width letters arrive as `localhost`;
  // a host whose last label is numeric is always parsed as IPv4 (or the URL fails to parse).
  const host = url.hostname.toLowerCase();
  const isIp = /^\d+\.\d+\.\d+\.\d+$/.test(host) || (host.startsWith("[") && host.endsWith("]"));
  const reason = isIp ? blockedAddress(host) : blockedName(host);
  return reason ? refuse(reason, true) : { ok: true, url: url.href };
}

/**
 * Whether the courier may send an attempt to `url` under the current policy (docs/reference.md § "POST
 * /v3/webhooks" URL policy): the same judgement as `checkWebhookUrl`, for a URL already
 * stored, so that an attempt to a URL the policy now refuses (WEBHOOK_ALLOW_INSECURE_URLS
 * turned off since, or a range refused since) is not sent.
 *
 * @param url the registration's stored URL.
 * @param allowInsecure `env.WEBHOOK_ALLOW_INSECURE_URLS === "true"`.
 * @returns the reason (a sentence, for the attempt log's `error`), or `null` when it may be sent.
 */
export function sendRefusal(url: string, allowInsecure: boolean): string | null {
  const verdict = checkWebhookUrl(url, allowInsecure);
  return verdict.ok ? null : `refused by the URL policy: ${verdict.reason}`;
}

/**
 * The policy as operations apply it (POST /v3/webhooks, and PATCH /v3/webhooks/{id} for a
 * new `url`): the normalized URL to store.
 *
 * @param allowInsecure `env.WEBHOOK_ALLOW_INSECURE_URLS === "true"`.
 * @throws ApiError 400 INVALID_WEBHOOK_URL with the reason in `message` and in `details`
 *   (path `url`).
 */
export function requireWebhookUrl(raw: string, allowInsecure: boolean): string {
  const verdict = checkWebhookUrl(raw, allowInsecure);
  if (!verdict.ok) {
    // Name the switch only where it would help: it does not make a malformed URL acceptable.
    const hint = verdict.liftable ? " For local development, WEBHOOK_ALLOW_INSECURE_URLS=true lifts this policy." : "";
    throw new ApiError("INVALID_WEBHOOK_URL", `The webhook URL is not accepted: ${verdict.reason}.${hint}`, [{ path: "url", message: verdict.reason }]);
  }
  return verdict.url;
}
