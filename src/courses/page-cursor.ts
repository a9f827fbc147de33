/**
 * Page cursors of the course listing (docs/reference.md § "GET /v3/courses", `cursor`): opaque
 * to clients; here `p1.` + base64url of the JSON `[query, page, id, values]`, where `query` is
 * the fingerprint of the filters and sort the cursor was minted for, `page` the number of the
 * page it leads to, and `id`/`values` the last row of the previous page (its id and sort-key
 * values). Not signed: a forged cursor only moves where a page of the client's own school
 * starts, its values bound as parameters after being checked against the sort.
 */
import { ID_RE } from "../lib/ids";

/** What a cursor carries (see the file header). */
export interface PageCursor {
  query: string;
  page: number;
  id: string;
  values: unknown[];
}

/**
 * The longest cursor accepted, in characters. A cursor of a `name` or `classroom` sort carries
 * the folded text (200 characters that NFKD may expand up to 18-fold, 4 UTF-8 bytes each, then
 * base64): under 40,000 characters for both; integer keys take a few dozen.
 */
export const MAX_CURSOR_CHARS = 65_536;

const PREFIX = "p1.";
const CURSOR_RE = /^p1\.[A-Za-z0-9_-]+$/;

/** The cursor text of `c`. */
export function encodePageCursor(c: PageCursor): string {
  const bytes = new TextEncoder().encode(JSON.stringify([c.query, c.page, c.id, c.values]));
  let binary = "";
  for (const b of bytes) binary += String.fromCharCode(b);
  return PREFIX + btoa(binary).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

/**
 * What a cursor text carries, or `undefined` when it is not a cursor this API minted (callers
 * answer 400 INVALID_PARAMETER). `values` are checked against the sort by the caller.
 */
export function decodePageCursor(text: string): PageCursor | undefined {
  if (text.length > MAX_CURSOR_CHARS || !CURSOR_RE.test(text)) return undefined;
  let parsed: unknown;
  try {
    const binary = atob(text.slice(PREFIX.length).replace(/-/g, "+").replace(/_/g, "/"));
    parsed = JSON.parse(new TextDecoder("utf-8", { fatal: true, ignoreBOM: true }).decode(Uint8Array.from(binary, (ch) => ch.charCodeAt(0))));
  } catch {
    return undefined;
  }
  if (!Array.isArray(parsed) || parsed.length !== 4) return undefined;
  const [query, page, id, values] = parsed as unknown[];
  if (typeof query !== "string" || !Number.isSafeInteger(page) || (page as number) < 2) return undefined;
  if (typeof id !== "string" || !ID_RE.test(id) || !Array.isArray(values)) return undefined;
  return { query, page: page as number, id, values };
}

/**
 * The fingerprint of a canonical JSON value (the filters and sort of a query): 64 bits of two
 * FNV-1a hashes in hex. It tells a cursor replayed with other filters or another sort apart;
 * it is no secret and no signature.
 */
export function fingerprint(canonical: unknown): string {
  const text = JSON.stringify(canonical);
  let a = 0x811c9dc5;
  let b = 0x01000193 ^ text.length;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    a = Math.imul(a ^ c, 0x01000193);
    b = Math.imul(b ^ c, 0x01000193) ^ (b >>> 13);
  }
  return (a >>> 0).toString(16).padStart(8, "0") + (b >>> 0).toString(16).padStart(8, "0");
}
