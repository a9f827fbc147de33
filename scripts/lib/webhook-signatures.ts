/**
 * A receiver's check of a Standard Webhooks `v1a` signature (ed25519) by Node's own crypto —
 * an implementation other than the Workers runtime's that signed it (docs/api-guide.md shows
 * the same check). Used by `npm run demo:webhooks` and the portal's e2e receiver.
 */
import { createPublicKey, verify } from "node:crypto";
import type { IncomingHttpHeaders } from "node:http";

/**
 * Whether a delivery (its headers and raw body) carries a `v1a,` signature over
 * `{webhook-id}.{webhook-timestamp}.{body}` that verifies with `publicKey` (`whpk_` + base64
 * of the 32-byte key); during a rotation's grace, either of the two may.
 */
export function verifyV1a(delivery: { headers: IncomingHttpHeaders | Record<string, string>; body: string }, publicKey: string): boolean {
  const x = Buffer.from(publicKey.slice("whpk_".length), "base64").toString("base64url");
  const key = createPublicKey({ key: { kty: "OKP", crv: "Ed25519", x }, format: "jwk" });
  const { headers, body } = delivery;
  const signed = Buffer.from(`${headers["webhook-id"]}.${headers["webhook-timestamp"]}.${body}`);
  return String(headers["webhook-signature"] ?? "")
    .split(" ")
    .some((s) => s.startsWith("v1a,") && verify(null, signed, key, Buffer.from(s.slice("v1a,".length), "base64")));
}
