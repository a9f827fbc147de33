/**
 * Webhook URL policy (API.md § "POST /v3/webhooks" URL policy, § "Error codes"
 * INVALID_WEBHOOK_URL, § "Deployment settings" WEBHOOK_ALLOW_INSECURE_URLS). One function,
 * `checkWebhookUrl`, judges every URL a registration may take (POST, and PATCH when it
 * exists).
 *
 * A pure function: no DNS, no I/O. The URL is parsed with the WHATWG parser first, so every
 * spelling of an IPv4 address (`0x7f000001`, `2130706433`, `127.1`, `0177.0.0.1`,
 * `127.0.0.1.`) is judged in its canonical dotted form, and IPv6 literals in their
 * canonical bracketed form (`[::ffff:127.0.0.1]` becomes `[::ffff:7f00:1]`).
 *
 * Host names are not resolved: a public name that resolves to a private address is not
 * caught here (the Workers runtime itself refuses private destinations in production).
 */
import { ApiError } from "../../http/errors";

/** The verdict on a URL: the normalized URL to store, or a sentence saying why not. */
export type UrlVerdict = { ok: true; url: string } | { ok: false; reason: string };

/** Longest accepted webhook URL, in characters. */
const MAX_URL_LENGTH = 2048;

/** IPv4 ranges a webhook may not target: [network address, prefix length, name]. */
const BLOCKED_V4: ReadonlyArray<readonly [string, number, string]> = [
  ["0.0.0.0", 8, "unspecified (0.0.0.0/8)"],
  ["10.0.0.0", 8, "private (10.0.0.0/8)"],
  ["100.64.0.0", 10, "carrier-grade NAT (100.64.0.0/10)"],
  ["127.0.0.0", 8, "loopback (127.0.0.0/8)"],
  ["169.254.0.0", 16, "link-local (169.254.0.0/16)"],
  ["172.16.0.0", 12, "private (172.16.0.0/12)"],
  ["192.0.0.0", 24, "IETF protocol assignments (192.0.0.0/24)"],
  ["192.0.2.0", 24, "documentation (192.0.2.0/24)"],
  ["192.168.0.0", 16, "private (192.168.0.0/16)"],
  ["198.18.0.0", 15, "benchmarking (198.18.0.0/15)"],
  ["198.51.100.0", 24, "documentation (198.51.100.0/24)"],
  ["203.0.113.0", 24, "documentation (203.0.113.0/24)"],
  ["224.0.0.0", 4, "multicast (224.0.0.0/4)"],
  ["240.0.0.0", 4, "reserved or broadcast (240.0.0.0/4)"],
];

const v4ToInt = (dotted: string): number => dotted.split(".").reduce((acc, part) => acc * 256 + Number(part), 0);

const BLOCKED_V4_INT = BLOCKED_V4.map(([base, bits, name]) => {
  const size = 2 ** (32 - bits);
  return { start: v4ToInt(base), size, name };
});

/** The name of the blocked IPv4 range holding `addr` (a 32-bit unsigned integer), if any. */
function blockedV4(addr: number): string | undefined {
  for (const range of BLOCKED_V4_INT) {
    if (addr >= range.start && addr < range.start + range.size) return range.name;
  }
  return undefined;
}

/** Parses a canonical (WHATWG-serialized) IPv6 literal without brackets into 8 16-bit groups. */
function parseV6(text: string): number[] | undefined {
  const halves = text.split("::");
  if (halves.length > 2) return undefined;
  const part = (s: string) => (s === "" ? [] : s.split(":"));
  const head = part(halves[0]!);
  const tail = halves.length === 2 ? part(halves[1]!) : [];
  // The serializer never emits an embedded dotted quad, but accept one to stay safe.
  const expand = (groups: string[]): number[] | undefined => {
    const out: number[] = [];
    for (const g of groups) {
      if (/^\d+\.\d+\.\d+\.\d+$/.test(g)) {
        const n = v4ToInt(g);
        out.push(Math.floor(n / 65536), n % 65536);
      } else if (/^[0-9a-f]{1,4}$/i.test(g)) {
        out.push(parseInt(g, 16));
      } else {
        return undefined;
      }
    }
    return out;
  };
  const h = expand(head);
  const t = expand(tail);
  if (!h || !t) return undefined;
  const missing = 8 - h.length - t.length;
  if (halves.length === 1 ? missing !== 0 : missing < 0) return undefined;
  return [...h, ...new Array<number>(missing).fill(0), ...t];
}

/** The reason an IPv6 address (8 groups) is blocked, if it is. */
function blockedV6(g: number[]): string | undefined {
  const embeddedV4 = (hi: number, lo: number) => hi * 65536 + lo;
  const allZero = (from: number, to: number) => g.slice(from, to).every((x) => x === 0);
  if (allZero(0, 8)) return "unspecified (::)";
  if (allZero(0, 7) && g[7] === 1) return "loopback (::1)";
  // ::ffff:a.b.c.d (IPv4-mapped) and ::a.b.c.d (IPv4-compatible): judge the IPv4 address.
  if (allZero(0, 5) && (g[5] === 0xffff || g[5] === 0)) {
    const v4 = blockedV4(embeddedV4(g[6]!, g[7]!));
    return v4 ? `IPv4-mapped ${v4}` : g[5] === 0 ? "IPv4-compatible (::/96)" : undefined;
  }
  // 64:ff9b::/96 (NAT64) embeds an IPv4 address in its last 32 bits.
  if (g[0] === 0x64 && g[1] === 0xff9b && allZero(2, 6)) {
    const v4 = blockedV4(embeddedV4(g[6]!, g[7]!));
    if (v4) return `NAT64-mapped ${v4}`;
  }
  // 2002::/16 (6to4) embeds an IPv4 address in bits 16–47.
  if (g[0] === 0x2002) {
    const v4 = blockedV4(embeddedV4(g[1]!, g[2]!));
    if (v4) return `6to4-mapped ${v4}`;
  }
  if ((g[0]! & 0xfe00) === 0xfc00) return "unique-local (fc00::/7)";
  if ((g[0]! & 0xffc0) === 0xfe80) return "link-local (fe80::/10)";
  if ((g[0]! & 0xffc0) === 0xfec0) return "site-local (fec0::/10)";
  if ((g[0]! & 0xff00) === 0xff00) return "multicast (ff00::/8)";
  if (g[0] === 0x2001 && g[1] === 0x0db8) return "documentation (2001:db8::/32)";
  return undefined;
}

/**
 * Special-use and internal names (API.md § "POST /v3/webhooks"): the name itself and every
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
 * - the host is not an IP literal in a loopback, private, link-local, unique-local,
 *   unspecified, carrier-grade NAT, multicast, reserved or documentation range, IPv4 or
 *   IPv6 (IPv4-mapped, IPv4-compatible, NAT64 and 6to4 forms judged by their IPv4 part);
 * - a host name is not single-label (`https://metadata/`), has no empty label, and is not a
 *   special-use or internal name (`RESERVED_NAME_SUFFIXES`: `localhost`, `*.internal`,
 *   `*.local`, …), whatever its case and with or without a trailing dot.
 *
 * Always: at most 2,048 characters, `http:` or `https:` only, a host present.
 *
 * @param raw the URL as the client sent it.
 * @param allowInsecure `true` when WEBHOOK_ALLOW_INSECURE_URLS is `"true"` (local development).
 * @returns `{ ok: true, url }` with the WHATWG-normalized URL (what the hub will POST to), or
 *   `{ ok: false, reason }` with a sentence for the INVALID_WEBHOOK_URL message.
 */
export function checkWebhookUrl(raw: string, allowInsecure: boolean): UrlVerdict {
  if (raw.length > MAX_URL_LENGTH) return { ok: false, reason: `the URL is longer than ${MAX_URL_LENGTH} characters` };
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return { ok: false, reason: "the URL cannot be parsed; send an absolute URL such as https://example.com/hooks" };
  }
  if (url.protocol !== "https:" && url.protocol !== "http:") {
    return { ok: false, reason: `the scheme "${url.protocol.slice(0, -1)}" is not allowed; use https` };
  }
  if (url.hostname === "") return { ok: false, reason: "the URL has no host" };
  if (allowInsecure) return { ok: true, url: url.href };
  if (url.protocol !== "https:") return { ok: false, reason: "the URL must use https" };
  if (url.username !== "" || url.password !== "") return { ok: false, reason: "the URL must not carry credentials (user:pass@)" };

  // The WHATWG parser has already lower-cased the host, decoded %-escapes and mapped
  // Unicode (IDNA), so `LOCALHOST`, `local%68ost` and full-width letters arrive as `localhost`.
  const host = url.hostname.toLowerCase();
  if (/^\d+\.\d+\.\d+\.\d+$/.test(host)) {
    const range = blockedV4(v4ToInt(host));
    if (range) return { ok: false, reason: `the address ${host} is ${range}` };
  } else if (host.startsWith("[") && host.endsWith("]")) {
    const groups = parseV6(host.slice(1, -1));
    if (!groups) return { ok: false, reason: `the address ${host} is not a valid IPv6 address` };
    const range = blockedV6(groups);
    if (range) return { ok: false, reason: `the address ${host} is ${range}` };
  } else {
    const reason = blockedName(host);
    if (reason) return { ok: false, reason };
  }
  return { ok: true, url: url.href };
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
    throw new ApiError("INVALID_WEBHOOK_URL", `The webhook URL is not accepted: ${verdict.reason}.`, [{ path: "url", message: verdict.reason }]);
  }
  return verdict.url;
}
