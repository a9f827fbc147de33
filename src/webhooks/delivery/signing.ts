/**
 * Standard Webhooks signing (docs/reference.md § "Event delivery", § "Secret rotation"): secrets and
 * ed25519 key pairs, and the headers of one attempt. `v1` (HMAC) is synchronous (node:crypto,
 * `nodejs_compat`); `v1a` signs with WebCrypto's Ed25519, asynchronously, so its courier
 * checks again that it is open once the signature is made and starts the fetch in that step
 * (docs/architecture.md § "Invariants").
 */
import { createHmac } from "node:crypto";

/** Prefix of webhook secrets (Standard Webhooks). */
const SECRET_PREFIX = "whsec_";
/** Prefix of `v1a` public keys (Standard Webhooks): base64 of the raw 32-byte ed25519 key. */
const PUBLIC_KEY_PREFIX = "whpk_";
/** Prefix of `v1a` private keys as the hub stores them (Standard Webhooks' `whsk_`): base64 of the PKCS #8 DER. Never answered. */
const PRIVATE_KEY_PREFIX = "whsk_";

/** How a registration's deliveries are signed (docs/reference.md § "Event delivery"): HMAC-SHA256, or ed25519. */
export const SIGNATURE_SCHEMES = ["v1", "v1a"] as const;

/** A signature scheme. */
export type SignatureScheme = (typeof SIGNATURE_SCHEMES)[number];

/**
 * A registration's signing credential: `secret`, what the courier signs with (a `whsec_`
 * secret, or for `v1a` a `whsk_` private key, never answered), and `publicKey` (`whpk_…`,
 * `v1a` only; `null` for `v1`), what a receiver verifies with.
 */
export interface SigningCredential {
  secret: string;
  publicKey: string | null;
}

function toBase64(bytes: Uint8Array): string {
  let binary = "";
  for (const b of bytes) binary += String.fromCharCode(b);
  return btoa(binary);
}

/** Mints a webhook secret: `whsec_` + base64 of 32 random bytes. */
function newSecret(): string {
  return SECRET_PREFIX + toBase64(crypto.getRandomValues(new Uint8Array(32)));
}

/**
 * A new credential of `scheme` (docs/reference.md § "POST /v3/webhooks": `signatureScheme`):
 * a `v1` secret, or a `v1a` ed25519 key pair made by WebCrypto.
 */
export async function newCredential(scheme: SignatureScheme): Promise<SigningCredential> {
  if (scheme === "v1") return { secret: newSecret(), publicKey: null };
  const pair = (await crypto.subtle.generateKey({ name: "Ed25519" }, true, ["sign", "verify"])) as CryptoKeyPair;
  const [pkcs8, raw] = await Promise.all([crypto.subtle.exportKey("pkcs8", pair.privateKey), crypto.subtle.exportKey("raw", pair.publicKey)]);
  return {
    secret: PRIVATE_KEY_PREFIX + toBase64(new Uint8Array(pkcs8 as ArrayBuffer)),
    publicKey: PUBLIC_KEY_PREFIX + toBase64(new Uint8Array(raw as ArrayBuffer)),
  };
}

/** The bytes of a secret or private key: the base64-decoded part after its prefix. */
function keyBytes(key: string, prefix: string): Uint8Array<ArrayBuffer> {
  const b64 = key.startsWith(prefix) ? key.slice(prefix.length) : key;
  return Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
}

/**
 * The Standard Webhooks headers of one attempt (docs/reference.md § "Event delivery").
 *
 * @param signatures the `webhook-signature` value: one signature per key, each `v1,` or
 *   `v1a,` + base64, space-separated, the current key's first.
 * @param eventId the event id, sent as `webhook-id` (the same on every retry).
 * @param timestampS unix seconds of the attempt, sent as `webhook-timestamp`.
 * @returns `content-type`, `user-agent`, `webhook-id`, `webhook-timestamp` and `webhook-signature`.
 */
function signedHeaders(signatures: string, eventId: string, timestampS: number): Record<string, string> {
  return {
    "content-type": "application/json",
    "user-agent": "school-edge-api-webhooks/1",
    "webhook-id": eventId,
    "webhook-timestamp": String(timestampS),
    "webhook-signature": signatures,
  };
}

/**
 * What an attempt is signed with: the scheme (absent in a config stored before it existed:
 * `v1`), the current secret or private key, and a rotation's previous one until it expires (ms).
 */
export interface SigningSecrets {
  signatureScheme?: SignatureScheme;
  secret: string;
  previousSecret: string | null;
  previousExpiresAt: number | null;
}

/**
 * The keys of secrets, decoded (HMAC) or imported (ed25519) once per secret, and the
 * signing of one attempt with them: with the current secret, and during a rotation's grace
 * also with the previous one (docs/reference.md § "Secret rotation").
 */
export class SigningKeys {
  private readonly hmacKeys = new Map<string, Uint8Array>();
  private readonly edKeys = new Map<string, Promise<CryptoKey>>();

  /**
   * The Standard Webhooks headers of an attempt of event `eventId` with body `body` at `now`
   * (ms), signed over `{id}.{timestamp}.{body}` with `secrets.secret` and, while
   * `previousExpiresAt` is after `now`, with `previousSecret` too: for `v1` at once (`v1,` +
   * base64 HMAC-SHA256), for `v1a` once WebCrypto has signed (`v1a,` + base64 ed25519).
   *
   * @throws (`v1a`: rejects) if a stored key cannot be decoded or imported.
   */
  sign(secrets: SigningSecrets, eventId: string, body: string, now: number): Record<string, string> | Promise<Record<string, string>> {
    const { secret, previousSecret, previousExpiresAt } = secrets;
    const all = previousSecret !== null && (previousExpiresAt ?? 0) > now ? [secret, previousSecret] : [secret];
    const timestampS = Math.floor(now / 1000);
    const signed = `${eventId}.${timestampS}.${body}`;
    if (secrets.signatureScheme === "v1a") return this.signEd25519(all, signed).then((signatures) => signedHeaders(signatures, eventId, timestampS));
    const signatures = all.map((s) => `v1,${createHmac("sha256", this.hmacKey(s)).update(signed).digest("base64")}`);
    return signedHeaders(signatures.join(" "), eventId, timestampS);
  }

  private hmacKey(secret: string): Uint8Array {
    let key = this.hmacKeys.get(secret);
    if (!key) {
      key = keyBytes(secret, SECRET_PREFIX);
      this.hmacKeys.set(secret, key);
    }
    return key;
  }

  private async signEd25519(privateKeys: string[], signed: string): Promise<string> {
    const data = new TextEncoder().encode(signed);
    const signatures = await Promise.all(
      privateKeys.map(async (k) => `v1a,${toBase64(new Uint8Array(await crypto.subtle.sign("Ed25519", await this.edKey(k), data)))}`),
    );
    return signatures.join(" ");
  }

  private edKey(privateKey: string): Promise<CryptoKey> {
    let key = this.edKeys.get(privateKey);
    if (!key) {
      key = crypto.subtle.importKey("pkcs8", keyBytes(privateKey, PRIVATE_KEY_PREFIX), { name: "Ed25519" }, false, ["sign"]);
      // A key that cannot be imported is not kept: the next attempt tries again.
      key.catch(() => this.edKeys.delete(privateKey));
      this.edKeys.set(privateKey, key);
    }
    return key;
  }
}
