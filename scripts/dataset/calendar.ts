/**
 * The calendar of the demo dataset: the school year of a French lycée in Europe/Paris, its
 * teaching weeks and holidays, and local times written with their offset.
 */

/** A school day and its Europe/Paris offset from UTC. */
export interface SchoolDay {
  year: number;
  /** 0-based. */
  month: number;
  day: number;
  /** Hours ahead of UTC (1 in winter, 2 in summer). */
  offset: number;
}

/** Weeks (0 = the first) of the autumn, Christmas, winter and spring holidays, roughly zone C. */
const HOLIDAY_WEEKS = new Set([6, 7, 15, 16, 23, 24, 31, 32]);
/** Public holidays on weekdays in 2026–2027 (and the Ascension bridge), as `M-D` (0-based month). */
const PUBLIC_HOLIDAYS = new Set(["10-11", "2-29", "4-6", "4-7", "4-17"]);

const DAY_MS = 86_400_000;
const HOUR_MS = 3_600_000;

const PARIS = new Intl.DateTimeFormat("en-US", { timeZone: "Europe/Paris", timeZoneName: "longOffset" });

/** The Europe/Paris offset from UTC at an instant, in hours (the time zone database's rule). */
function parisOffset(ms: number): number {
  const name = PARIS.formatToParts(ms).find((p) => p.type === "timeZoneName")!.value; // "GMT+02:00"
  const m = /^GMT([+-])(\d{2}):(\d{2})$/.exec(name);
  if (!m) return 0; // "GMT": UTC itself
  return (m[1] === "-" ? -1 : 1) * (Number(m[2]) + Number(m[3]) / 60);
}

/** Monday of the first school week: the first Monday of September `year` (UTC midnight, ms). */
function firstMondayOfSeptember(year: number): number {
  const d = new Date(Date.UTC(year, 8, 1));
  return Date.UTC(year, 8, 1 + ((8 - d.getUTCDay()) % 7));
}

/** The weekdays of `weeks` school weeks from the first Monday of September `year`, holidays skipped. */
export function schoolDays(year: number, weeks = 36): SchoolDay[] {
  const first = firstMondayOfSeptember(year);
  const days: SchoolDay[] = [];
  for (let week = 0, taught = 0; taught < weeks; week++) {
    if (HOLIDAY_WEEKS.has(week)) continue;
    taught++;
    for (let wd = 0; wd < 5; wd++) {
      const d = new Date(first + (week * 7 + wd) * DAY_MS);
      const [y, m, dd] = [d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate()];
      if (PUBLIC_HOLIDAYS.has(`${m}-${dd}`)) continue;
      // Offsets change at night, on Sundays: noon stands for the whole school day.
      days.push({ year: y, month: m, day: dd, offset: parisOffset(Date.UTC(y, m, dd, 12)) });
    }
  }
  return days;
}

const pad = (n: number) => String(n).padStart(2, "0");

/** `2026-09-07T08:00:00+02:00` for a school day and a local time in minutes since midnight. */
export function localIso(d: SchoolDay, minutes: number): string {
  return `${d.year}-${pad(d.month + 1)}-${pad(d.day)}T${pad(Math.floor(minutes / 60))}:${pad(minutes % 60)}:00+${pad(d.offset)}:00`;
}

/** ms since the epoch of a school day's local time in minutes. */
export function localMs(d: SchoolDay, minutes: number): number {
  return Date.UTC(d.year, d.month, d.day, 0, minutes) - d.offset * HOUR_MS;
}
