/**
 * A Map of at most `maxEntries` entries, kept in the order they were last set: setting a key
 * moves it last, and the first (least recently set) leaves when one more would not fit. The
 * isolate's bounded caches use it (src/http/rate-limit.ts, src/db/shards.ts).
 */
export class BoundedMap<K, V> {
  private readonly entries = new Map<K, V>();

  constructor(private readonly maxEntries: number) {}

  get(key: K): V | undefined {
    return this.entries.get(key);
  }

  /** Sets `key` as the most recent entry, evicting the least recently set one beyond `maxEntries`. */
  set(key: K, value: V): void {
    this.entries.delete(key);
    this.entries.set(key, value);
    if (this.entries.size > this.maxEntries) this.entries.delete(this.entries.keys().next().value as K);
  }

  delete(key: K): void {
    this.entries.delete(key);
  }

  get size(): number {
    return this.entries.size;
  }
}
