/**
 * The portal's client of the API (../shared/API.md § "Webhook registrations", § "Delivery
 * statistics"): same-origin `fetch` with the pasted key as `Authorization: Bearer`, JSON in
 * and out, and every error envelope turned into an {@link ApiError} that carries the API's
 * own `message`, so that a view always has a sentence to show.
 *
 * The key lives only in this tab's sessionStorage (never in a URL, never in localStorage):
 * closing the tab forgets it.
 */

/** sessionStorage entry holding the API key. */
const KEY_ENTRY = "webhook-portal.api-key";

/** The key of this tab, or null when signed out. */
export function storedKey(): string | null {
  try {
    return sessionStorage.getItem(KEY_ENTRY);
  } catch {
    return null;
  }
}

/** Keeps `key` for this tab (`null` forgets it: sign-out). */
export function storeKey(key: string | null): void {
  if (key === null) sessionStorage.removeItem(KEY_ENTRY);
  else sessionStorage.setItem(KEY_ENTRY, key);
}

/** One entry of an error envelope's `details`. */
export interface ErrorDetail {
  parameter?: string;
  path?: string;
  message: string;
}

/**
 * An answer in the error envelope (`{ status: "error", code, message, details?, requestId }`),
 * or a failure to reach the API at all (`status` 0, `code` "NETWORK_ERROR").
 */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details: ErrorDetail[] = [],
    readonly requestId: string | null = null,
  ) {
    super(message);
    this.name = "ApiError";
  }
}

/** Called when the API refuses the stored key with a 401 (set by the app: it signs out). */
let onUnauthorized: (err: ApiError) => void = () => {};

/** Registers what happens on a 401 (the app signs out and shows the message). */
export function setUnauthorizedHandler(handler: (err: ApiError) => void): void {
  onUnauthorized = handler;
}

/** A successful list answer: the items and the contract's `pagination`. */
export interface Page<T> {
  items: T[];
  page: number;
  limit: number;
  hasMore: boolean;
}

/**
 * Calls the API. Resolves with the parsed JSON body of a 2xx answer; rejects with an
 * {@link ApiError} otherwise. `key` defaults to the stored key; `query` entries that are
 * `undefined` or `""` are left out.
 */
async function request<T = unknown>(
  method: string,
  path: string,
  opts: { body?: unknown; query?: Record<string, string | number | undefined>; key?: string; headers?: Record<string, string> } = {},
): Promise<T> {
  const key = opts.key ?? storedKey();
  const headers: Record<string, string> = { accept: "application/json", ...opts.headers };
  if (key) headers.authorization = `Bearer ${key}`;
  if (opts.body !== undefined) headers["content-type"] = "application/json";
  let url = path;
  if (opts.query) {
    const params = new URLSearchParams();
    for (const [k, v] of Object.entries(opts.query)) if (v !== undefined && v !== "") params.set(k, String(v));
    const qs = params.toString();
    if (qs) url += `?${qs}`;
  }
  let res: Response;
  try {
    res = await fetch(url, { method, headers, body: opts.body === undefined ? undefined : JSON.stringify(opts.body) });
  } catch (err) {
    throw new ApiError(0, "NETWORK_ERROR", `The API could not be reached (${(err as Error).message}). Check your connection and try again.`);
  }
  const text = await res.text();
  let json: { status?: unknown; code?: unknown; message?: unknown; details?: unknown; requestId?: string | null } | null = null;
  try {
    json = text ? JSON.parse(text) : null;
  } catch {
    /* not JSON: handled below */
  }
  if (res.ok && json?.status === "success") return json as unknown as T;
  if (json?.status === "error" && typeof json.message === "string") {
    const err = new ApiError(res.status, String(json.code), json.message, Array.isArray(json.details) ? json.details : [], json.requestId ?? null);
    // The stored key refused (revoked meanwhile): sign out. A key being tried (sign-in) is not stored.
    if (res.status === 401 && key && opts.key === undefined) onUnauthorized(err);
    throw err;
  }
  throw new ApiError(res.status, "UNEXPECTED_RESPONSE", `The API answered ${res.status} ${res.statusText || ""} without a readable body.`.replace(/ +/g, " "));
}

// ---------------------------------------------------------------------------------------
// The contract's shapes and endpoints.

/** A registration (API.md § "Webhook registrations": registration record). */
export interface Webhook {
  id: string;
  url: string;
  events: string[];
  description: string | null;
  /** Absent from older servers: treat as enabled. */
  enabled?: boolean;
  disabledReason?: "manual" | "failing" | null;
  disabledAt?: string | null;
  createdAt: string;
  updatedAt?: string;
}

/** POST /v3/webhooks answers the record with its secret (shown only there and by a rotation). */
export interface CreatedWebhook extends Webhook {
  secret: string;
}

/** One entry of the delivery log (§ "Delivery log"). */
export interface Delivery {
  eventId: string;
  eventType: string;
  attempt: number;
  status: "pending" | "succeeded" | "failed" | "skipped";
  responseStatus: number | null;
  error: string | null;
  attemptedAt: string | null;
  nextAttemptAt: string | null;
}

/** Filters of the delivery log; empty strings mean "no filter". */
export interface DeliveryFilters {
  status?: string;
  eventType?: string;
  eventId?: string;
  /** ISO 8601 instant with zone. */
  since?: string;
  until?: string;
}

/** One bucket of GET /v3/webhooks/{id}/stats. */
export interface StatsBucket {
  start: string;
  succeeded: number;
  failed: number;
  pending: number;
  skipped: number;
}

/** An entry of GET /v3/event-types. */
export interface EventType {
  type: string;
  description: string;
}

const enc = encodeURIComponent;

/** The webhook endpoints the portal calls, one function each. */
export const api = {
  /** GET /v3/webhooks (also how a pasted key is checked: 401 when refused). */
  async listWebhooks(key?: string): Promise<Webhook[]> {
    return (await request<{ result: Webhook[] }>("GET", "/v3/webhooks", { key })).result;
  },
  /** POST /v3/webhooks with an `Idempotency-Key`, so a double submit creates one registration. */
  async createWebhook(body: { url: string; events: string[]; description?: string }, idempotencyKey: string): Promise<CreatedWebhook> {
    return (await request<{ result: CreatedWebhook }>("POST", "/v3/webhooks", { body, headers: { "idempotency-key": idempotencyKey } })).result;
  },
  /** PATCH /v3/webhooks/{id}: any of `url`, `events`, `description` (null clears), `enabled`. */
  async updateWebhook(id: string, body: Partial<{ url: string; events: string[]; description: string | null; enabled: boolean }>): Promise<Webhook> {
    return (await request<{ result: Webhook }>("PATCH", `/v3/webhooks/${enc(id)}`, { body })).result;
  },
  /** DELETE /v3/webhooks/{id}. */
  async deleteWebhook(id: string): Promise<void> {
    await request("DELETE", `/v3/webhooks/${enc(id)}`);
  },
  /** POST /v3/webhooks/{id}/secret/rotate → the new secret and when the previous one stops signing. */
  async rotateSecret(id: string, graceSeconds: number): Promise<{ id: string; secret: string; previousSecretExpiresAt: string | null }> {
    return (
      await request<{ result: { id: string; secret: string; previousSecretExpiresAt: string | null } }>("POST", `/v3/webhooks/${enc(id)}/secret/rotate`, {
        body: { graceSeconds },
      })
    ).result;
  },
  /** POST /v3/webhooks/{id}/test → the test event's id. */
  async sendTest(id: string): Promise<{ eventId: string }> {
    return (await request<{ result: { eventId: string } }>("POST", `/v3/webhooks/${enc(id)}/test`)).result;
  },
  /** GET /v3/webhooks/{id}/deliveries with filters and pagination. */
  async listDeliveries(id: string, filters: DeliveryFilters, page: number, limit: number): Promise<Page<Delivery>> {
    const res = await request<{ result: Delivery[]; pagination: { page: number; limit: number; hasMore: boolean } }>(
      "GET",
      `/v3/webhooks/${enc(id)}/deliveries`,
      {
        query: { ...filters, page: page === 1 ? undefined : page, limit: limit === 100 ? undefined : limit },
      },
    );
    return { items: res.result, ...res.pagination };
  },
  /** POST /v3/webhooks/{id}/deliveries/{eventId}/resend. */
  async resend(id: string, eventId: string): Promise<{ eventId: string }> {
    return (await request<{ result: { eventId: string } }>("POST", `/v3/webhooks/${enc(id)}/deliveries/${enc(eventId)}/resend`)).result;
  },
  /** POST /v3/webhooks/{id}/recover → how many events were queued again. */
  async recover(id: string, since: string, until?: string): Promise<{ queued: number }> {
    return (await request<{ result: { queued: number } }>("POST", `/v3/webhooks/${enc(id)}/recover`, { body: until ? { since, until } : { since } })).result;
  },
  /** GET /v3/webhooks/{id}/stats. */
  async stats(id: string, since: string, until: string, bucket: "hour" | "day"): Promise<StatsBucket[]> {
    return (await request<{ result: { buckets: StatsBucket[] } }>("GET", `/v3/webhooks/${enc(id)}/stats`, { query: { since, until, bucket } })).result.buckets;
  },
  /** GET /v3/event-types (no authentication). */
  async eventTypes(): Promise<EventType[]> {
    return (await request<{ result: EventType[] }>("GET", "/v3/event-types")).result;
  },
};
