/** Lowercase hex SHA-256 of a UTF-8 string (API keys and portal tokens are stored only as this hash). */
export async function sha256Hex(text: string): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text));
  return [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

/**
 * A new bearer credential: `prefix` + 32 random bytes in base64url without padding (43
 * characters of `[A-Za-z0-9_-]`, `CREDENTIAL_CHARS` of src/lib/ids.ts, 256 bits), e.g.
 * `sk_live_…` keys and `ps_…` portal tokens: an `sk_live_` key passes the import's
 * `STRONG_API_KEY_RE`.
 * Runs in workerd and in Node (Web Crypto).
 */
export function randomCredential(prefix: string): string {
  const bytes = crypto.getRandomValues(new Uint8Array(32));
  return (
    prefix +
    btoa(String.fromCharCode(...bytes))
      .replace(/\+/g, "-")
      .replace(/\//g, "_")
      .replace(/=+$/, "")
  );
}
