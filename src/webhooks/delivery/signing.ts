/**
 * Standard Webhooks signing (docs/reference.md § "Event delivery", § "Secret rotation"): secrets, and
 * the headers of one attempt. Synchronous (node:crypto HMAC, `nodejs_compat`), so that a
 * courier checks that it is open and starts the fetch in one step (docs/architecture.md § "Invariants").
 */
import { createHmac } from "node:crypto";

/** Prefix of webhook secrets (Standard Webhooks). */
const SECRET_PREFIX = "whsec_";

function toBase64(bytes: Uint8Array): string {
  let binary = "";
  for (const b of bytes) binary += String.fromCharCode(b);
  return btoa(binary);
}

/** Mints a webhook secret: `whsec_` + base64 of 32 random bytes. */
export function newSecret(): string {
  return SECRET_PREFIX + toBase64(crypto.getRandomValues(new Uint8Array(32)));
}

/** The HMAC key of a secret: the base64-decoded part after `whsec_`. */
function secretKey(secret: string): Uint8Array {
  const b64 = secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret;
  return Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
}

/**
 * The Standard Webhooks headers of one attempt (docs/reference.md § "Event delivery").
 *
 * @param key the HMAC key (`secretKey(secret)`), or the keys of the current and the previous
 *   secret during a rotation's grace (docs/reference.md § "Secret rotation": one signature each,
 *   space-separated, the current one first).
 * @param eventId the event id, sent as `webhook-id` (the same on every retry).
 * @param timestampS unix seconds of the attempt, sent as `webhook-timestamp`.
 * @param body the exact request body.
 * @returns `content-type`, `webhook-id`, `webhook-timestamp` and `webhook-signature`
 *   (`v1,` + base64 HMAC-SHA256 over `{id}.{timestamp}.{body}`).
 */
function signedHeaders(key: Uint8Array | Uint8Array[], eventId: string, timestampS: number, body: string): Record<string, string> {
  const signed = `${eventId}.${timestampS}.${body}`;
  const signature = (Array.isArray(key) ? key : [key]).map((k) => createHmac("sha256", k).update(signed).digest("base64")).join(" v1,");
  return {
    "content-type": "application/json",
    "user-agent": "school-edge-api-webhooks/1",
    "webhook-id": eventId,
    "webhook-timestamp": String(timestampS),
    "webhook-signature": `v1,${signature}`,
  };
}

/** The secrets an attempt is signed with: the current one, and a rotation's previous one until it expires (ms). */
export interface SigningSecrets {
  secret: string;
  previousSecret: string | null;
  previousExpiresAt: number | null;
}

/**
 * The HMAC keys of secrets, decoded once per secret, and the signing of one attempt with
 * them: with the current secret, and during a rotation's grace also with the previous one
 * (docs/reference.md § "Secret rotation").
 */
export class SigningKeys {
  private readonly keys = new Map<string, Uint8Array>();

  /**
   * The Standard Webhooks headers of an attempt of event `eventId` with body `body` at `now`
   * (ms), signed with `secrets.secret` and, while `previousExpiresAt` is after `now`, with
   * `previousSecret` too.
   */
  sign(secrets: SigningSecrets, eventId: string, body: string, now: number): Record<string, string> {
    const { secret, previousSecret, previousExpiresAt } = secrets;
    const all = previousSecret !== null && (previousExpiresAt ?? 0) > now ? [secret, previousSecret] : [secret];
    const keys = all.map((s) => {
      let key = this.keys.get(s);
      if (!key) {
        key = secretKey(s);
        this.keys.set(s, key);
      }
      return key;
    });
    return signedHeaders(keys, eventId, Math.floor(now / 1000), body);
  }
}
