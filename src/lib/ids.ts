/**
 * Ids (docs/reference.md § "Conventions"): opaque strings of 1–64 characters `[A-Za-z0-9_-]`.
 * Minted ids are `<prefix>_` + a time-sortable random part (ULID-like: 10 chars of
 * Crockford base32 ms timestamp + 16 random chars), so ids sort by creation time.
 */

/** The pattern every id read from a client must match. */
export const ID_RE = /^[A-Za-z0-9_-]{1,64}$/;

/** An API key (docs/reference.md § "Conventions": keys start with `sk_`), as a pattern source. */
export const API_KEY_PATTERN = "sk_[A-Za-z0-9_-]{1,200}";

/** A portal session token (docs/reference.md § "Portal sessions": tokens start with `ps_`), as a pattern source. */
export const PORTAL_TOKEN_PATTERN = "ps_[A-Za-z0-9_-]{1,200}";

const CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";

/** Mints `prefix_` + 26 chars (10 time chars, 16 random chars). `prefix` like `crs`, `wh`, `evt`, `key` (API keys). */
export function mintId(prefix: "crs" | "wh" | "evt" | "req" | "key", now = Date.now()): string {
  let time = "";
  let t = now;
  for (let i = 0; i < 10; i++) {
    time = CROCKFORD[t % 32] + time;
    t = Math.floor(t / 32);
  }
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  let rand = "";
  for (const b of bytes) rand += CROCKFORD[b % 32];
  return `${prefix}_${time}${rand}`;
}
