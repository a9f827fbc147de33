/**
 * Delivery rules of docs/reference.md § "Event delivery" and docs/operations.md § "Deployment settings (wrangler vars)": the retry
 * schedule with its jitter, the attempt timeout, auto-disable's span and what an answer means.
 */

/** Default WEBHOOK_RETRY_SCHEDULE: seconds to wait after each failed attempt (7 retries). */
export const DEFAULT_RETRY_SCHEDULE_S: readonly number[] = [5, 300, 1800, 7200, 18000, 36000, 36000];
/** Default WEBHOOK_TIMEOUT_MS: one attempt's timeout, in ms. */
const DEFAULT_TIMEOUT_MS = 15_000;

/**
 * Reads WEBHOOK_RETRY_SCHEDULE: comma-separated non-negative seconds, e.g. `5,300,1800`.
 * An empty string means "no retries". Missing or malformed values fall back to the default
 * (a malformed value is logged, not thrown, so a typo in a var never stops deliveries).
 *
 * @returns the waits in seconds; `schedule[n - 1]` is the wait after failed attempt `n`.
 */
export function parseRetrySchedule(text: string | undefined): number[] {
  if (text === undefined) return [...DEFAULT_RETRY_SCHEDULE_S];
  if (text.trim() === "") return [];
  const parts = text.split(",").map((s) => s.trim());
  if (parts.every((p) => /^\d{1,9}(\.\d+)?$/.test(p))) return parts.map(Number);
  console.warn(`WEBHOOK_RETRY_SCHEDULE "${text}" is malformed; using the default schedule.`);
  return [...DEFAULT_RETRY_SCHEDULE_S];
}

/**
 * Reads WEBHOOK_TIMEOUT_MS: a positive integer of ms; missing or malformed → 15000.
 */
export function parseTimeoutMs(text: string | undefined): number {
  if (text !== undefined && /^\d{1,9}$/.test(text.trim()) && Number(text) > 0) return Number(text);
  if (text !== undefined) console.warn(`WEBHOOK_TIMEOUT_MS "${text}" is malformed; using ${DEFAULT_TIMEOUT_MS} ms.`);
  return DEFAULT_TIMEOUT_MS;
}

/** Default WEBHOOK_DISABLE_AFTER_HOURS (docs/reference.md § "Auto-disable"). */
const DEFAULT_DISABLE_AFTER_HOURS = 120;

/**
 * Reads WEBHOOK_DISABLE_AFTER_HOURS: decimal hours (`0.01` is 36 s) of nothing but failures
 * before a registration is disabled; missing or malformed → 120.
 *
 * @returns the span in ms.
 */
export function parseDisableAfterMs(text: string | undefined): number {
  if (text !== undefined && /^\d{1,6}(\.\d+)?$/.test(text.trim()) && Number(text) > 0) return Math.round(Number(text) * 3_600_000);
  if (text !== undefined) console.warn(`WEBHOOK_DISABLE_AFTER_HOURS "${text}" is malformed; using ${DEFAULT_DISABLE_AFTER_HOURS} h.`);
  return DEFAULT_DISABLE_AFTER_HOURS * 3_600_000;
}

/** Longest wait a `Retry-After` can impose, in ms (docs/reference.md § "Event delivery": 24 h). */
export const MAX_RETRY_AFTER_MS = 24 * 60 * 60 * 1000;

/** The three HTTP-date forms a recipient must accept (RFC 9110 § 5.6.7). */
const HTTP_DATE_RE = [
  /^(Mon|Tue|Wed|Thu|Fri|Sat|Sun), \d{2} [A-Z][a-z]{2} \d{4} \d{2}:\d{2}:\d{2} GMT$/, // IMF-fixdate
  /^[A-Z][a-z]+day, \d{2}-[A-Z][a-z]{2}-\d{2} \d{2}:\d{2}:\d{2} GMT$/, // RFC 850
  /^[A-Z][a-z]{2} [A-Z][a-z]{2} [ \d]\d \d{2}:\d{2}:\d{2} \d{4}$/, // asctime
];

/**
 * Reads a `Retry-After` value (RFC 9110 § 10.2.3): delay-seconds (`120`) or an HTTP-date
 * (`Wed, 21 Oct 2026 07:28:00 GMT`), the latter relative to `nowMs` (the end of the attempt).
 *
 * @returns the wait in ms — 0 for a date already past, at most MAX_RETRY_AFTER_MS — or
 *   `null` when the value is absent or malformed (then only the schedule applies).
 */
export function parseRetryAfter(value: string | null | undefined, nowMs: number): number | null {
  const text = value?.trim();
  if (!text) return null;
  if (/^\d{1,12}$/.test(text)) return Math.min(Number(text) * 1000, MAX_RETRY_AFTER_MS);
  const form = HTTP_DATE_RE.findIndex((re) => re.test(text));
  if (form < 0) return null;
  // asctime carries no zone; HTTP dates are always UTC.
  const at = Date.parse(form === 2 ? `${text} GMT` : text);
  if (!Number.isFinite(at)) return null;
  return Math.min(Math.max(0, at - nowMs), MAX_RETRY_AFTER_MS);
}

/** Whether an answer with this status may carry a `Retry-After` the hub honours (429, 503). */
export const honoursRetryAfter = (status: number | undefined): boolean => status === 429 || status === 503;

/**
 * What a receiver may ask in its answer's `webhook-delivery` header (docs/reference.md §
 * "Event delivery", Standard Webhooks PR #291): `abort-message` ends that delivery at once,
 * `disable` also disables the registration.
 */
export type DeliveryControl = "abort-message" | "disable";

/**
 * Reads a `webhook-delivery` header value: `abort-message` or `disable`, matched trimmed and
 * case-insensitively; `null` for an absent header or any other value (ignored).
 */
export function parseDeliveryControl(value: string | null): DeliveryControl | null {
  const text = value?.trim().toLowerCase();
  return text === "abort-message" || text === "disable" ? text : null;
}

/**
 * The delivery log's `error` for an HTTP answer, or `null` for a 2xx, in the service's own
 * words only (printable ASCII; docs/reference.md § "Delivery log"): `HTTP 500`,
 * `HTTP 302 (redirects are not followed)`, `HTTP 410 Gone: retries stopped`,
 * `HTTP 429 (Retry-After: 120 s)` — the delay as parsed at `nowMs` (ms), or
 * `(Retry-After not understood)` — and a receiver's `control`, e.g.
 * `HTTP 500 (webhook-delivery: abort-message): retries stopped`.
 */
export function describeAnswer(status: number, retryAfter: string | null, control: DeliveryControl | null = null, nowMs = Date.now()): string | null {
  if (status >= 200 && status <= 299) return null;
  if (control === "abort-message") return `HTTP ${status} (webhook-delivery: abort-message): retries stopped`;
  if (control === "disable") return `HTTP ${status} (webhook-delivery: disable): retries stopped, registration disabled`;
  if (status === 410) return "HTTP 410 Gone: retries stopped";
  if (status >= 300 && status <= 399) return `HTTP ${status} (redirects are not followed)`;
  // The receiver's own text never goes further (a notice carries it to other registrations): the delay as parsed.
  if (honoursRetryAfter(status) && retryAfter !== null) {
    const waitMs = parseRetryAfter(retryAfter, nowMs);
    return `HTTP ${status} (${waitMs === null ? "Retry-After not understood" : `Retry-After: ${Math.ceil(waitMs / 1000)} s`})`;
  }
  return `HTTP ${status}`;
}

/** What becomes of a delivery after an attempt. */
export type AttemptVerdict = { status: "succeeded" } | { status: "pending"; retryInMs: number } | { status: "failed" };

/** The largest jitter added to a scheduled wait, as a fraction of it (docs/reference.md: 0–10 %). */
const MAX_JITTER = 0.1;

/**
 * Decides the fate of a delivery after attempt number `attempt` (1-based).
 *
 * Any 2xx is a success; a 410 stops retries (`failed`); anything else (other statuses,
 * network errors, timeouts: `responseStatus` undefined) is retried after
 * `schedule[attempt - 1]` seconds lengthened by `jitter` × `MAX_JITTER` (`jitter` in [0, 1),
 * so that receivers back from an outage are not hit by every retry at once), and is `failed`
 * once the schedule is exhausted. A 429 or 503 with a `Retry-After` (`retryAfterMs`, see
 * `parseRetryAfter`) waits at least that long.
 */
export function judgeAttempt(
  responseStatus: number | undefined,
  attempt: number,
  schedule: readonly number[],
  retryAfterMs: number | null = null,
  jitter = 0,
): AttemptVerdict {
  if (responseStatus !== undefined && responseStatus >= 200 && responseStatus <= 299) return { status: "succeeded" };
  if (responseStatus === 410) return { status: "failed" };
  const wait = schedule[attempt - 1];
  if (wait === undefined) return { status: "failed" };
  const floor = honoursRetryAfter(responseStatus) && retryAfterMs !== null ? retryAfterMs : 0;
  return { status: "pending", retryInMs: Math.max(Math.round(wait * 1000 * (1 + MAX_JITTER * jitter)), floor) };
}

/** Whether `status` is a success (2xx). */
export const isSuccess = (status: number | null | undefined): boolean => status != null && status >= 200 && status <= 299;
