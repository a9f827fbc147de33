/**
 * Batches bounded by construction (docs/architecture.md § Invariants): every list that
 * travels as one bound value (`json_each(?)`), or as one call, is cut here by count and by
 * its JSON's UTF-8 bytes, so that no bound value crosses the platform's 2,000,000-byte limit
 * per string (D1 and Durable Object SQLite) whatever the items weigh.
 */

/** The bounds of one batch: at most `count` items, its JSON array at most `bytes` (UTF-8). */
export interface BatchBounds {
  count: number;
  bytes: number;
}

/**
 * The default bounds of a bound list: 1,000,000 bytes, half the platform's 2,000,000 per
 * value, so that a batch and what a statement builds from it stay well within the limit.
 */
export const BOUND_LIST: BatchBounds = { count: 1_000, bytes: 1_000_000 };

/** One batch: its items and their JSON array, ready to bind. */
export interface Batch<T> {
  items: T[];
  json: string;
}

/** Thrown when one item alone is over `bytes`: it cannot travel in any batch. */
export class ItemTooLarge extends Error {
  constructor(
    readonly itemBytes: number,
    readonly limitBytes: number,
  ) {
    super(`an item of ${itemBytes} bytes is over the batch limit of ${limitBytes} bytes`);
  }
}

/** UTF-8 length of `s`, in bytes (an unpaired surrogate counts 3, as its replacement would). */
export function utf8Bytes(s: string): number {
  let n = s.length;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x80) continue;
    n += c < 0x800 ? 1 : 2;
    // A surrogate pair is one code point of 4 bytes: its second half adds nothing more.
    if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length && (s.charCodeAt(i + 1) & 0xfc00) === 0xdc00) i++;
  }
  return n;
}

/**
 * Cuts `items`, in order, into consecutive slices within `bounds` (count, and the bytes of the
 * JSON array of their encodings, `bytesOf` giving each one's UTF-8 bytes), lazily: a slice is
 * cut when the one before it has been taken, and no encoding is kept, so that a caller that
 * sends each slice before taking the next holds one slice's encoding at a time.
 *
 * @throws ItemTooLarge (when the slice is taken) when one item's JSON array alone is over `bounds.bytes`.
 */
export function* slices<T>(items: Iterable<T>, bounds: BatchBounds, bytesOf: (item: T) => number): Generator<T[]> {
  let current: T[] = [];
  // Bytes of the array being built: its brackets and commas included.
  let size = 0;
  for (const item of items) {
    const bytes = bytesOf(item);
    if (bytes + 2 > bounds.bytes) throw new ItemTooLarge(bytes + 2, bounds.bytes);
    if (current.length > 0 && (current.length >= bounds.count || size + 1 + bytes > bounds.bytes)) {
      yield current;
      current = [];
    }
    size = current.length === 0 ? bytes + 2 : size + 1 + bytes;
    current.push(item);
  }
  if (current.length > 0) yield current;
}

/**
 * Cuts `items`, in order, into consecutive batches within `bounds` (`slices`): each item is
 * encoded once by `encode` (JSON text of the item; `JSON.stringify` by default — an encoder may
 * splice JSON text it already holds, such as an event body, instead of escaping it again)
 * and each batch's `json` is the JSON array of its items' encodings.
 *
 * @returns the batches; none for no items.
 * @throws ItemTooLarge when one item's JSON array alone (`[item]`) is over `bounds.bytes`.
 */
export function cutBatches<T>(items: readonly T[], bounds: BatchBounds = BOUND_LIST, encode: (item: T) => string = JSON.stringify): Batch<T>[] {
  const encoded = items.map((item) => ({ item, text: encode(item) }));
  return [...slices(encoded, bounds, (e) => utf8Bytes(e.text))].map((batch) => ({
    items: batch.map((e) => e.item),
    json: `[${batch.map((e) => e.text).join(",")}]`,
  }));
}
