/**
 * Time helpers of the portal. The API speaks ISO 8601 UTC instants with milliseconds
 * (docs/reference.md § Conventions) and refuses an instant without a zone; `<input type="datetime-local">`
 * speaks the browser's local time without a zone. These convert between the two.
 */

/** How `formatInstant` writes an instant: the year in full (`dateStyle: "short"` writes "26"). */
const INSTANT_FORMAT: Intl.DateTimeFormatOptions = { year: "numeric", month: "2-digit", day: "2-digit", hour: "2-digit", minute: "2-digit", second: "2-digit" };

/**
 * An instant shown to a person: local date and time to the second, with a four-digit year,
 * in the browser's locale, e.g. "21/11/2026, 18:04:05" or "11/21/2026, 06:04:05 PM".
 */
export function formatInstant(iso: string | null | undefined): string {
  if (!iso) return "—";
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? iso : d.toLocaleString(undefined, INSTANT_FORMAT);
}

/**
 * A `datetime-local` value (`2026-11-21T18:04` or with seconds), read as local time, to the
 * API's ISO 8601 UTC form; `""` stays `""` (no filter).
 *
 * @throws RangeError when the value is not a date.
 */
export function localInputToIso(value: string): string {
  if (value === "") return "";
  const d = new Date(value);
  if (Number.isNaN(d.getTime())) throw new RangeError(`"${value}" is not a date and time`);
  return d.toISOString();
}

/**
 * A bucket's start as a table label, in UTC like the buckets themselves (docs/reference.md § "Delivery
 * statistics": UTC hours and days; a local date would name the day before west of UTC):
 * "21/11, 18:00" for hours, "21/11" for days, in the browser's locale.
 */
export function formatBucket(iso: string, bucket: "hour" | "day"): string {
  const d = new Date(iso);
  return bucket === "hour"
    ? d.toLocaleString(undefined, { day: "2-digit", month: "2-digit", hour: "2-digit", minute: "2-digit", timeZone: "UTC" })
    : d.toLocaleDateString(undefined, { day: "2-digit", month: "2-digit", timeZone: "UTC" });
}
