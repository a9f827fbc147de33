/**
 * The client a rate limit counts when a request has no verified credential
 * (docs/reference.md § "Rate limit"): an IPv4 client by its address, an IPv6 client by its
 * /64 (one customer's network: a client that rotates addresses within it is still one) and
 * by its /48 (one site: a client that rotates /64s within it is still one).
 */
import ipaddr from "ipaddr.js";

/**
 * The rate-limit subject of a client address (`cf-connecting-ip`): `a.b.c.d` for IPv4 (an
 * IPv4-mapped IPv6 address included), `x:x:x:x::/64` for IPv6, the text as it is when it
 * does not parse (`unknown` when absent).
 */
export function clientSubject(address: string | null): string {
  if (address === null) return "unknown";
  if (!ipaddr.isValid(address)) return address;
  const parsed = ipaddr.parse(address);
  if (parsed.kind() === "ipv4") return parsed.toString();
  const v6 = parsed as ipaddr.IPv6;
  if (v6.isIPv4MappedAddress()) return v6.toIPv4Address().toString();
  const prefix = v6.parts.slice(0, 4).map((p) => p.toString(16));
  return `${prefix.join(":")}::/64`;
}

/**
 * The wider rate-limit subject of an IPv6 client address (`cf-connecting-ip`): its /48,
 * `x:x:x::/48`, which holds 65,536 /64s. `undefined` for IPv4 (an IPv4-mapped address
 * included), an absent or unparsable address: those have only `clientSubject`.
 */
export function clientNetwork(address: string | null): string | undefined {
  if (address === null || !ipaddr.IPv6.isValid(address)) return undefined;
  const v6 = ipaddr.IPv6.parse(address);
  if (v6.isIPv4MappedAddress()) return undefined;
  return `${v6.parts
    .slice(0, 3)
    .map((p) => p.toString(16))
    .join(":")}::/48`;
}
