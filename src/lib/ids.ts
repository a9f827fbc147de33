/**
 * Ids (docs/reference.md § "Conventions"): opaque strings of 1–64 characters `[A-Za-z0-9_-]`.
 * Minted ids are `<prefix>_` + a time-sortable random part (ULID-like: 10 chars of
 * Crockford base32 ms timestamp + 16 random chars), so ids sort by creation time; ids minted
 * together by `mintOrderedIds` also sort in the order they were minted within their millisecond.
 */

/** The pattern every id read from a client must match. */
export const ID_RE = /^[A-Za-z0-9_-]{1,64}$/;

/**
 * The characters of a credential after its `sk_` or `ps_`: base64url (`[A-Za-z0-9_-]`), the
 * alphabet `randomCredential` (src/lib/crypto.ts) mints from, as a pattern source. One
 * alphabet for minting, reading and importing (docs/operations.md § "API keys").
 */
const CREDENTIAL_CHARS = "[A-Za-z0-9_-]";

/** An API key (docs/reference.md § "Conventions": keys start with `sk_`), as a pattern source. */
export const API_KEY_PATTERN = `sk_${CREDENTIAL_CHARS}{1,200}`;

/**
 * A key the import accepts (docs/operations.md § "Data import"): `sk_` then at least 32
 * characters of `CREDENTIAL_CHARS`, so every key `npm run keys -- create` mints
 * (`sk_live_` + 43 base64url characters) can be carried to another environment.
 */
export const STRONG_API_KEY_RE = new RegExp(`^sk_${CREDENTIAL_CHARS}{32,}$`);

/** A portal session token (docs/reference.md § "Portal sessions": tokens start with `ps_`), as a pattern source. */
export const PORTAL_TOKEN_PATTERN = `ps_${CREDENTIAL_CHARS}{1,200}`;

const CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";

/** The 10 time chars of an id minted at `now` (ms since the epoch). */
function timePart(now: number): string {
  let time = "";
  let t = now;
  for (let i = 0; i < 10; i++) {
    time = CROCKFORD[t % 32] + time;
    t = Math.floor(t / 32);
  }
  return time;
}

/** 16 random Crockford chars; with `headroom`, the first is below `G` (16), so that adding up to 2^75 never carries out. */
function randomPart(headroom = false): string {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  let rand = "";
  for (const [i, b] of bytes.entries()) rand += CROCKFORD[i === 0 && headroom ? b % 16 : b % 32];
  return rand;
}

/** `part` (Crockford base32) plus one, the same length; the caller leaves headroom so it never overflows. */
function increment(part: string): string {
  const digits = [...part];
  for (let i = digits.length - 1; i >= 0; i--) {
    const v = CROCKFORD.indexOf(digits[i]!) + 1;
    digits[i] = CROCKFORD[v % 32]!;
    if (v < 32) break;
  }
  return digits.join("");
}

/** Mints `prefix_` + 26 chars (10 time chars, 16 random chars). `prefix` like `crs`, `wh`, `evt`, `key` (API keys). */
export function mintId(prefix: "crs" | "wh" | "evt" | "req" | "key", now = Date.now()): string {
  return `${prefix}_${timePart(now)}${randomPart()}`;
}

/**
 * Mints `count` ids of one instant that sort (as strings) in the order they are returned,
 * ULID's monotonic mode: the first has a random part (with headroom), each next one the
 * previous part plus one. The events of one write take them, so that their ids sort in the
 * order the feed lists them (docs/reference.md § Conventions: ids).
 *
 * @param now ms since the epoch, the time part of every id.
 */
export function mintOrderedIds(prefix: "evt", count: number, now = Date.now()): string[] {
  const time = timePart(now);
  const ids: string[] = [];
  let rand = randomPart(true);
  for (let i = 0; i < count; i++, rand = increment(rand)) ids.push(`${prefix}_${time}${rand}`);
  return ids;
}

/** Crockford digits of a change number in an id minted by `numberedIdSql`: 8, so numbers below 2^40. */
const NUMBER_DIGITS = 8;

/**
 * SQL text of ids minted in SQL for rows numbered by an integer SQL expression `numberSql`
 * (an import's events, numbered by their change: src/events/import-events.ts): `prefix_` +
 * the 10 time chars of `now` + 8 random chars fixed per call + the number in 8 Crockford
 * digits. The ids of one call sort (as strings) by their number, below 2^40; two calls share
 * an id only if their random chars, instant and number all match (1 in 2^40 per pair).
 *
 * @param now ms since the epoch, the time part of every id.
 */
export function numberedIdSql(prefix: "evt", now: number, numberSql: string): string {
  const digits = Array.from({ length: NUMBER_DIGITS }, (_, i) => `substr('${CROCKFORD}', (((${numberSql}) >> ${5 * (NUMBER_DIGITS - 1 - i)}) & 31) + 1, 1)`);
  return `concat('${prefix}_${timePart(now)}${randomPart().slice(0, 16 - NUMBER_DIGITS)}', ${digits.join(", ")})`;
}
