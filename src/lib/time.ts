/**
 * Instants (docs/reference.md § "Conventions"): written as ISO 8601 UTC with milliseconds; read from
 * clients only with a zone (`Z` or `±hh:mm`).
 */

/** The first and last instants `formatInstant` writes as `YYYY-…Z` (years 0000–9999), in ms. */
const FIRST_INSTANT_MS = Date.parse("0000-01-01T00:00:00.000Z");
const LAST_INSTANT_MS = Date.parse("9999-12-31T23:59:59.999Z");

const INSTANT_RE = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?(Z|[+-](\d{2}):(\d{2}))$/;

/** An instant without its zone: what a client sends when it forgets `Z` or `±hh:mm`. */
const ZONELESS_RE = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?$/;

/**
 * Reads an ISO 8601 instant that carries a zone: its ms since the epoch, or what is wrong
 * with it (docs/reference.md § "Conventions"), in the words of a 400's `details` message:
 * `has no time zone`, `is not a real date or time` (Feb 30, hours ≥ 24, offsets beyond
 * ±23:59), `is outside years 0000–9999 in UTC` (`9999-12-31T23:00:00-05:00`, which the API
 * could not write back in its own form), or `is not an ISO 8601 instant`.
 */
export function readInstant(text: string): { ms: number } | { problem: string } {
  const m = INSTANT_RE.exec(text);
  if (!m) return { problem: ZONELESS_RE.test(text) ? "has no time zone" : "is not an ISO 8601 instant" };
  const [, y, mo, d, h, mi, s = "0", , , oh = "0", om = "0"] = m;
  const year = Number(y),
    month = Number(mo),
    day = Number(d);
  const hour = Number(h),
    minute = Number(mi),
    second = Number(s);
  const unreal = { problem: "is not a real date or time" };
  if (month < 1 || month > 12 || day < 1 || hour > 23 || minute > 59 || second > 59) return unreal;
  if (Number(oh) > 23 || Number(om) > 59) return unreal;
  // Not Date.UTC(year, …): it reads years 0–99 as 1900–1999 (0000 is a leap year, 1900 not).
  const last = new Date(0);
  last.setUTCFullYear(year, month, 0);
  if (day > last.getUTCDate()) return unreal;
  // Date.parse keeps milliseconds only; sub-ms digits are truncated, as documented.
  const ms = Date.parse(text);
  if (Number.isNaN(ms)) return unreal;
  if (ms < FIRST_INSTANT_MS || ms > LAST_INSTANT_MS) return { problem: "is outside years 0000–9999 in UTC" };
  return { ms };
}

/**
 * Parses an ISO 8601 instant that carries a zone into ms since the epoch; `undefined` for
 * anything `readInstant` finds a problem with.
 */
export function parseInstant(text: string): number | undefined {
  const read = readInstant(text);
  return "ms" in read ? read.ms : undefined;
}

/** Formats ms since the epoch as `2026-09-07T08:00:00.000Z`. */
export function formatInstant(ms: number): string {
  return new Date(ms).toISOString();
}

/**
 * Query-string repair (docs/reference.md § "Conventions"): a `+` of an offset sent unencoded arrives
 * as a space; `2026-09-07T10:00:00 02:00` is read as `2026-09-07T10:00:00+02:00`.
 */
export function repairQueryInstant(text: string): string {
  return text.replace(/ (\d{2}:\d{2})$/, "+$1");
}

/** One UTC day, in ms. */
export const DAY_MS = 86_400_000;

/** The UTC day of `ms` (ms since the epoch): whole days since 1970-01-01. */
export const utcDay = (ms: number): number => Math.floor(ms / DAY_MS);
