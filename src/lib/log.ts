/**
 * The service's log lines (docs/operations.md § "Keys, logs"): each is one JSON object
 * on one console line, which Workers Logs (`[observability]` in wrangler.toml) indexes field
 * by field. Every line of the Worker and its Durable Objects goes through this module.
 *
 * No line may carry an API key, a portal token, a webhook secret, a signature or a custom
 * header value, so a line is built from whitelisted fields only: each kind of line declares
 * its fields and the form of each (`FIELDS`), and `write` copies exactly those, in that form,
 * whatever else the object passed holds (a request, a registration with its secret, headers).
 * Strings are also scrubbed of anything shaped like a credential (`sk_…`, `ps_…`, `whsec_…`,
 * `whsk_…`, a `v1,…`/`v1a,…` signature): an id or a message holding one writes `[redacted]`.
 */

/** One line per request (written by the Worker's `fetch`, src/index.ts). */
export interface RequestLine {
  requestId: string;
  /** The school of the request's credential, once verified. */
  schoolId?: string;
  /**
   * The id of the API key behind the verified credential (`key_…`): the key itself or the one
   * that minted the portal session used; `null` for a session minted before sessions
   * recorded it. Never the credential.
   */
  keyId?: string | null;
  /** The operation the router matched; absent for an unknown path. */
  operationId?: string;
  method: string;
  /** The URL path (never the query string), cut to 200 characters. */
  path: string;
  status: number;
  /** An error response's `code` (`EVENT_QUOTA_EXCEEDED`, `RATE_LIMITED`, …): what alerts count by. */
  code?: string;
  /** From the request's arrival to its response, ms. */
  durationMs: number;
  /** Spent waiting on D1, ms. */
  dbMs: number;
  /** A 500's exception: its name and message, then its stack. */
  error?: string;
  stack?: string;
}

/** One line per delivery attempt (written by the webhook courier). */
export interface DeliveryAttemptLine {
  /** The registration's school: failed deliveries are counted per school by it. */
  schoolId: string;
  webhookId: string;
  eventId: string;
  /** 1 for the first attempt of a delivery. */
  attempt: number;
  trigger: "event" | "retry" | "resend" | "recover" | "test";
  /** The attempt's outcome, as the delivery log shows it. */
  status: "succeeded" | "failed" | "skipped";
  /** The receiver's HTTP status; `null` without an answer. */
  responseStatus: number | null;
  /** From sending the request until its status line, the timeout or the error, ms; `null` when nothing was sent. */
  durationMs: number | null;
  /** Why it failed, as the delivery log's `error` says (never a header value or a body). */
  error?: string;
}

/** A publish of outbox events to a school's hub that failed (src/events/outbox.ts). */
export interface PublishFailureLine {
  schoolId: string;
  events: number;
  error: string;
}

/** A shard whose outbox the cron sweep could not read (src/events/outbox.ts): its schools wait for the next sweep. */
export interface ShardSweepFailureLine {
  /** The shard's binding, `SHARD_<n>`. */
  shard: string;
  error: string;
}

/** One line per cron sweep of the outbox (src/events/outbox.ts). */
export interface SweepLine {
  /** Schools with due rows handled by this sweep. */
  schools: number;
  republished: number;
  /** Rows whose hub failed, timed out or was not reached within the sweep's budget, plus shards that failed. */
  failed: number;
  /** D1 statements and hub calls the whole cron run sent (its prunes included), against its budget (src/lib/invocation-budget.ts). */
  queries: number;
  calls: number;
  durationMs: number;
}

/**
 * One line per database and cron run whose prunes removed rows: idempotency keys
 * (src/db/idempotency.ts), event-quota counters (src/db/event-quota.ts), published outbox rows
 * (src/events/outbox.ts) of a shard, or portal sessions (src/portal/sessions.ts) of the directory.
 */
export interface PruneLine {
  /** The database's binding: `DIRECTORY` or `SHARD_<n>`. */
  database: string;
  idempotencyKeys?: number;
  portalSessions?: number;
  /** Counters of the daily event quota of past UTC days (one per school and day). */
  eventBytes?: number;
  /** Outbox rows published more than 7 days ago (src/events/outbox.ts). */
  outboxRows?: number;
}

/** One line per failed call between Durable Objects (a hand-over, a report), retried later. */
export interface ObjectCallFailureLine {
  /** Which object called: `hub` or `courier`. */
  from: string;
  /** The registration concerned. */
  webhookId: string;
  /** What failed: `handover`, `configure`, `close`, `report`. */
  call: string;
  /** Failures in a row. */
  failures: number;
  retryInMs: number;
  error: string;
}

/** How a field is written: an id (1–128 characters), a word (an enum or a method), a free text, an integer, a duration (ms, 0.1 precision). */
type Form = "id" | "word" | "text" | "int" | "ms";

interface Lines {
  request: RequestLine;
  delivery_attempt: DeliveryAttemptLine;
  outbox_publish_failed: PublishFailureLine;
  outbox_sweep: SweepLine;
  outbox_shard_failed: ShardSweepFailureLine;
  prune: PruneLine;
  object_call_failed: ObjectCallFailureLine;
}

/** The whitelist: for each kind of line, every field it may carry and its form. */
const FIELDS: { [K in keyof Lines]: Record<keyof Lines[K], Form> } = {
  request: {
    requestId: "id",
    schoolId: "id",
    keyId: "id",
    operationId: "word",
    method: "word",
    path: "text",
    status: "int",
    code: "word",
    durationMs: "ms",
    dbMs: "ms",
    error: "text",
    stack: "text",
  },
  delivery_attempt: {
    schoolId: "id",
    webhookId: "id",
    eventId: "id",
    attempt: "int",
    trigger: "word",
    status: "word",
    responseStatus: "int",
    durationMs: "ms",
    error: "text",
  },
  outbox_publish_failed: { schoolId: "id", events: "int", error: "text" },
  outbox_sweep: { schools: "int", republished: "int", failed: "int", queries: "int", calls: "int", durationMs: "ms" },
  outbox_shard_failed: { shard: "word", error: "text" },
  prune: { database: "word", idempotencyKeys: "int", portalSessions: "int", eventBytes: "int", outboxRows: "int" },
  object_call_failed: { from: "word", webhookId: "id", call: "word", failures: "int", retryInMs: "ms", error: "text" },
};

/** Longest text field, in characters (a stack keeps its first frames). */
const MAX_TEXT = 2000;

/**
 * Credential shapes: API keys and portal tokens (`sk_`, `ps_` + the id alphabet), webhook
 * secrets and ed25519 private keys (`whsec_`, `whsk_` + base64), Standard Webhooks signatures
 * (`v1,`, `v1a,` + base64).
 */
// No word boundary: `x_sk_live_…` is redacted too (a text that loses a harmless `…ps_x` loses little).
const CREDENTIAL_RE = /(?:sk|ps)_[A-Za-z0-9_-]+|wh(?:sec|sk)_[A-Za-z0-9+/=]+|v1a?,[A-Za-z0-9+/=]+/g;

const scrub = (s: string) => s.replace(CREDENTIAL_RE, "[redacted]");

/** `value` in `form`, or `undefined` (the field is left out) when it is not of that form. */
function formatted(value: unknown, form: Form): string | number | null | undefined {
  if (value === null) return null;
  switch (form) {
    case "int":
      return typeof value === "number" && Number.isFinite(value) ? Math.round(value) : undefined;
    case "ms":
      return typeof value === "number" && Number.isFinite(value) ? Math.round(value * 10) / 10 : undefined;
    case "word":
      return typeof value === "string" && /^[A-Za-z0-9_.-]{1,64}$/.test(value) ? value : undefined;
    case "id":
      return typeof value === "string" && value.length > 0 ? scrub(value.slice(0, 128)) : undefined;
    case "text":
      return typeof value === "string" ? scrub(value.slice(0, MAX_TEXT)) : undefined;
  }
}

/** Writes one line of `kind` with the whitelisted fields of `fields`. */
function write<K extends keyof Lines>(kind: K, fields: Lines[K], level: "log" | "warn" | "error"): void {
  const line: Record<string, unknown> = { kind };
  const source = fields as unknown as Record<string, unknown>;
  for (const [name, form] of Object.entries(FIELDS[kind] as Record<string, Form>)) {
    const value = formatted(source[name], form);
    if (value !== undefined) line[name] = value;
  }
  console[level](JSON.stringify(line));
}

/**
 * The line of one request: `{"kind":"request","requestId",…}` at level `log`, `error` for a
 * 5xx. Never throws.
 */
export function logRequest(fields: RequestLine): void {
  write("request", fields, fields.status >= 500 ? "error" : "log");
}

/**
 * The line of one delivery attempt (docs/operations.md § "Keys, logs"):
 * `{"kind":"delivery_attempt","webhookId","eventId","attempt","trigger","status",
 * "responseStatus","durationMs"}`, at level `log`, `warn` when it failed. The courier calls it
 * once per attempt it finishes or refuses to send (an attempt to a URL the policy now
 * refuses: `status: "failed"`, `responseStatus: null`, `durationMs: null`, `error`: the
 * reason). Never throws.
 */
export function logDeliveryAttempt(fields: DeliveryAttemptLine): void {
  write("delivery_attempt", fields, fields.status === "failed" ? "warn" : "log");
}

/** The line of a failed publish to a school's hub (level `warn`); the sweep retries it. Never throws. */
export function logPublishFailure(fields: PublishFailureLine): void {
  write("outbox_publish_failed", fields, "warn");
}

/** The line of a shard the sweep could not read (level `warn`). Never throws. */
export function logShardSweepFailure(fields: ShardSweepFailureLine): void {
  write("outbox_shard_failed", fields, "warn");
}

/** The line of one outbox sweep (level `log`, `warn` when some school failed). Never throws. */
export function logSweep(fields: SweepLine): void {
  write("outbox_sweep", fields, fields.failed > 0 ? "warn" : "log");
}

/** The line of one database's prunes in a cron run (level `log`); written only when they removed rows. Never throws. */
export function logPrune(fields: PruneLine): void {
  const { database: _name, ...counts } = fields;
  if (Object.values(counts).some((n) => n > 0)) write("prune", fields, "log");
}

/** Writes the line of a failed call between Durable Objects (warning level). */
export function logObjectCallFailure(fields: ObjectCallFailureLine): void {
  write("object_call_failed", fields, "warn");
}

/** The name and message of a thrown value, and its stack when it has one (for a line's `error` and `stack`). */
export function describeError(err: unknown): { error: string; stack?: string } {
  if (err instanceof Error) return { error: `${err.name}: ${err.message}`, ...(err.stack ? { stack: err.stack } : {}) };
  try {
    return { error: String(err) };
  } catch {
    return { error: "an unprintable value was thrown" };
  }
}
