/**
 * The portal's client of the API (docs/reference.md § "Webhook registrations", § "Delivery
 * statistics", § "Portal sessions"): same-origin `fetch` with the tab's credential as
 * `Authorization: Bearer`, and every error envelope turned into an {@link ApiError} carrying
 * the API's own `message`, so that a view always has a sentence to show.
 *
 * The credential (a pasted `sk_…` key or a link's `ps_…` token) lives only in this tab's
 * sessionStorage: closing the tab forgets it. For a token, the answers' headers
 * (`x-portal-session-expires-at`, `x-portal-session-read-only`) say when its session ends
 * and whether it is read-only; the portal keeps that beside it, with the credential's scopes
 * as GET /v3/school reports them (`scopes`; null from a server that reports none).
 */

/** sessionStorage entry holding the credential (API key or portal token). */
const CREDENTIAL_ENTRY = "webhook-portal.credential";
/** sessionStorage entry holding the portal session of a token (JSON of {@link PortalSession}). */
const SESSION_ENTRY = "webhook-portal.session";

/** What the API says of a portal token's session. */
export interface PortalSession {
  /** ISO 8601 instant. */
  expiresAt: string;
  readOnly: boolean;
}

/** sessionStorage entry holding the school of the credential (JSON of {@link School}). */
const SCHOOL_ENTRY = "webhook-portal.school";
/** sessionStorage entry holding the credential's scopes (JSON array of names). */
const SCOPES_ENTRY = "webhook-portal.scopes";

/** The school a credential belongs to (GET /v3/school). */
export interface School {
  id: string;
  name: string;
}

/** What the tab signs in with: the credential, its session when it is a portal token, its school and its scopes. */
export interface Credential {
  secret: string;
  session: PortalSession | null;
  school: School | null;
  /** The scope names the API reports for it; null until known (or from a server that reports none). */
  scopes: string[] | null;
}

/** GET /v3/school's answer: the school, and the calling credential's scopes (absent from older servers). */
interface SchoolAnswer extends School {
  scopes?: unknown;
}

/** The credential's scope names in an answer's `scopes`, or null when it has none readable. */
function scopesIn(value: unknown): string[] | null {
  return Array.isArray(value) && value.every((s) => typeof s === "string") ? value : null;
}

/** The credential of this tab, or null when signed out. */
export function storedCredential(): Credential | null {
  try {
    const secret = sessionStorage.getItem(CREDENTIAL_ENTRY);
    if (secret === null) return null;
    const session = sessionStorage.getItem(SESSION_ENTRY);
    const school = sessionStorage.getItem(SCHOOL_ENTRY);
    const scopes = sessionStorage.getItem(SCOPES_ENTRY);
    return {
      secret,
      session: session === null ? null : (JSON.parse(session) as PortalSession),
      school: school === null ? null : (JSON.parse(school) as School),
      scopes: scopes === null ? null : scopesIn(JSON.parse(scopes)),
    };
  } catch {
    return null;
  }
}

/** Keeps `credential` for this tab (`null` forgets it: sign-out). */
export function storeCredential(credential: Credential | null): void {
  if (credential === null) {
    for (const entry of [CREDENTIAL_ENTRY, SESSION_ENTRY, SCHOOL_ENTRY, SCOPES_ENTRY]) sessionStorage.removeItem(entry);
    return;
  }
  sessionStorage.setItem(CREDENTIAL_ENTRY, credential.secret);
  if (credential.session) sessionStorage.setItem(SESSION_ENTRY, JSON.stringify(credential.session));
  else sessionStorage.removeItem(SESSION_ENTRY);
  if (credential.school) sessionStorage.setItem(SCHOOL_ENTRY, JSON.stringify(credential.school));
  else sessionStorage.removeItem(SCHOOL_ENTRY);
  if (credential.scopes) sessionStorage.setItem(SCOPES_ENTRY, JSON.stringify(credential.scopes));
  else sessionStorage.removeItem(SCOPES_ENTRY);
}

/**
 * The token of a portal link (`/portal#token=ps_…`), taken out of the address bar at once
 * (`history.replaceState`, no new history entry) so that it is neither bookmarked, shared
 * with the page's address nor left in the history. Null when the address has none.
 */
export function takeLinkToken(): string | null {
  const m = /^#token=(ps_[A-Za-z0-9_-]+)$/.exec(location.hash);
  if (!m) return null;
  history.replaceState(history.state, "", `${location.pathname}${location.search}`);
  return m[1]!;
}

/** The portal session an answer describes, or null (an answer to an API key). */
function sessionOf(res: Response): PortalSession | null {
  const expiresAt = res.headers.get("x-portal-session-expires-at");
  return expiresAt ? { expiresAt, readOnly: res.headers.get("x-portal-session-read-only") === "true" } : null;
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

/** Called when the API refuses the stored credential with a 401 (set by the app: it signs out). */
let onUnauthorized: (err: ApiError) => void = () => {};

/** Registers what happens on a 401 (the app signs out and shows the message). */
export function setUnauthorizedHandler(handler: (err: ApiError) => void): void {
  onUnauthorized = handler;
}

/** Called with the session each answer to the stored token describes (set by the app: it keeps it current). */
let onSession: (session: PortalSession) => void = () => {};

/** Registers what happens when an answer describes the stored token's session. */
export function setSessionHandler(handler: (session: PortalSession) => void): void {
  onSession = handler;
}

/** A successful list answer: the items and the contract's `pagination`. */
export interface Page<T> {
  items: T[];
  page: number;
  limit: number;
  hasMore: boolean;
}

/**
 * Calls the API. Resolves with the parsed JSON body of a 2xx answer and the portal session
 * the answer describes; rejects with an {@link ApiError} otherwise. `key` defaults to the
 * stored credential; `query` entries that are `undefined` or `""` are left out.
 */
async function exchange<T>(
  method: string,
  path: string,
  opts: { body?: unknown; query?: Record<string, string | number | undefined>; key?: string; headers?: Record<string, string> } = {},
): Promise<{ json: T; session: PortalSession | null }> {
  const key = opts.key ?? storedCredential()?.secret;
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
  const session = sessionOf(res);
  // Only about the tab's current credential: not one being tried (sign-in), nor one the tab
  // left while this call was on its way.
  const current = opts.key === undefined && key !== undefined && storedCredential()?.secret === key;
  // The stored token's session as the API sees it now.
  if (session && current) onSession(session);
  if (res.ok && json?.status === "success") return { json: json as unknown as T, session };
  if (json?.status === "error" && typeof json.message === "string") {
    const err = new ApiError(res.status, String(json.code), json.message, Array.isArray(json.details) ? json.details : [], json.requestId ?? null);
    // The stored credential refused (revoked or expired meanwhile): sign out.
    if (res.status === 401 && current) onUnauthorized(err);
    throw err;
  }
  throw new ApiError(res.status, "UNEXPECTED_RESPONSE", `The API answered ${res.status} ${res.statusText || ""} without a readable body.`.replace(/ +/g, " "));
}

/** {@link exchange}, for the body alone. */
async function request<T = unknown>(method: string, path: string, opts: Parameters<typeof exchange>[2] = {}): Promise<T> {
  return (await exchange<T>(method, path, opts)).json;
}

// ---------------------------------------------------------------------------------------
// The contract's shapes and endpoints.

/** A registration's filter on the school's dimensions (each list 1–100 ids; at least one field). */
export interface WebhookFilter {
  trainingId?: string[];
  groupId?: string[];
  professorId?: string[];
}

/** The fields of POST /v3/webhooks. */
export interface WebhookCreate {
  url: string;
  events: string[];
  description?: string;
  filter?: WebhookFilter;
  /** Name → value, at most 10 (values are write-only). */
  headers?: Record<string, string>;
  maxPerSecond?: number;
  /** Absent: `course`. */
  ordering?: Ordering;
  /** Set at creation only; absent: `v1`. */
  signatureScheme?: SignatureScheme;
  /** Absent: `full`. */
  payload?: PayloadForm;
}

/** How deliveries are signed: `v1` (HMAC-SHA256 with a secret) or `v1a` (ed25519: a public key verifies). */
export type SignatureScheme = "v1" | "v1a";

/** `course`: a course's events are delivered in order, one at a time; `none`: every event on its own. */
export type Ordering = "course" | "none";

/** How the form and the detail name each `ordering`. */
export const ORDERING_LABELS: Record<Ordering, string> = { course: "Per course: a course's events in order", none: "None: every event on its own" };

/** What deliveries carry: full events, or course events with the course's id and version only. */
export type PayloadForm = "full" | "thin";

/** The fields of PATCH /v3/webhooks/{id}; `null` clears (`headers` replaces the whole set). */
export type WebhookPatch = Partial<{
  url: string;
  events: string[];
  description: string | null;
  filter: WebhookFilter | null;
  headers: Record<string, string> | null;
  maxPerSecond: number | null;
  ordering: Ordering;
  payload: PayloadForm;
  enabled: boolean;
}>;

/** A registration (docs/reference.md § "Webhook registrations": registration record). */
export interface Webhook {
  id: string;
  url: string;
  events: string[];
  description: string | null;
  /** Which of the school's courses the registration hears of; null: every event it subscribes to. */
  filter?: WebhookFilter | null;
  /** Names of its custom headers, lower case, sorted (values are never shown again). */
  headerNames?: string[];
  /** The throttle: attempts started per second at most; null: none. */
  maxPerSecond?: number | null;
  /** Absent from older servers: `none`. */
  ordering?: Ordering;
  /** Absent from older servers: `v1`. */
  signatureScheme?: SignatureScheme;
  /** `v1a`: the public key deliveries verify with (`whpk_…`); null for `v1`. */
  publicKey?: string | null;
  /** Absent from older servers: `full`. */
  payload?: PayloadForm;
  /** Absent from older servers: treat as enabled. */
  enabled?: boolean;
  /** `gone`: the receiver answered 410 Gone; `receiver`: it answered `webhook-delivery: disable`. */
  disabledReason?: "manual" | "failing" | "gone" | "receiver" | null;
  disabledAt?: string | null;
  /** While its attempts keep failing (4 or more in a row, no success since): the streak's first failed attempt; null otherwise (absent from older servers). */
  failingSince?: string | null;
  createdAt: string;
  updatedAt?: string;
}

/** POST /v3/webhooks answers the record with its secret (`v1`: shown only there and by a rotation; a `v1a` one has `publicKey` instead). */
export interface CreatedWebhook extends Webhook {
  secret?: string;
}

/** POST /v3/webhooks/{id}/secret/rotate: the new secret (`v1`) or public key (`v1a`), and when the previous one stops signing. */
export interface RotatedSecret {
  id: string;
  secret?: string;
  publicKey?: string;
  previousSecretExpiresAt: string | null;
}

/**
 * The words of the delivery log's `status` and of the statistics' counts (docs/reference.md §
 * "Delivery log"): each attempt's own outcome, a delivery not attempted yet, a skipped entry.
 * The log's column, its filter and the chart all label them so.
 */
export const DELIVERY_STATUS_LABELS = { succeeded: "Succeeded", failed: "Failed", pending: "Pending", skipped: "Skipped" } as const;

/** One entry of the delivery log (§ "Delivery log"). */
export interface Delivery {
  eventId: string;
  eventType: string;
  attempt: number;
  status: keyof typeof DELIVERY_STATUS_LABELS;
  responseStatus: number | null;
  error: string | null;
  attemptedAt: string | null;
  nextAttemptAt: string | null;
  /** What started the attempt (absent from older servers). */
  trigger?: "event" | "retry" | "resend" | "recover" | "test";
  /** The URL this attempt was sent to. */
  url?: string | null;
  /** Milliseconds until the status line arrived (or the timeout, or the error); null when nothing was sent. */
  durationMs?: number | null;
  /** The first 1,024 bytes of the answer's body, as UTF-8; null without an answer. */
  responseBody?: string | null;
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

/** p50, p95 and p99 of one latency in a stats bucket, in ms (within 5 %); `null`: no success in it. */
type Percentiles = { p50: number; p95: number; p99: number } | null;

/** One bucket of GET /v3/webhooks/{id}/stats (the latencies absent from a server without them). */
export interface StatsBucket {
  start: string;
  succeeded: number;
  failed: number;
  pending: number;
  skipped: number;
  delayMs?: Percentiles;
  durationMs?: Percentiles;
}

/** An entry of GET /v3/event-types. */
export interface EventType {
  type: string;
  description: string;
}

const enc = encodeURIComponent;

/** The school of GET /v3/school's answer, without what it says of the credential. */
const schoolOf = (r: SchoolAnswer): School => ({ id: r.id, name: r.name });

/** The webhook endpoints the portal calls, one function each. */
export const api = {
  /** GET /v3/webhooks. */
  async listWebhooks(): Promise<Webhook[]> {
    return (await request<{ result: Webhook[] }>("GET", "/v3/webhooks")).result;
  },
  /** GET /v3/webhooks/{id}. */
  async getWebhook(id: string): Promise<Webhook> {
    return (await request<{ result: Webhook }>("GET", `/v3/webhooks/${enc(id)}`)).result;
  },
  /**
   * Checks a credential before it is kept (GET /v3/school: 401 when refused) and returns it
   * with its school, its portal session (a token's end and mode; null for an API key) and its scopes.
   */
  async checkCredential(secret: string): Promise<Credential> {
    const { json, session } = await exchange<{ result: SchoolAnswer }>("GET", "/v3/school", { key: secret });
    return { secret, session, school: schoolOf(json.result), scopes: scopesIn(json.result.scopes) };
  },
  /**
   * Redeems a portal link's token (POST /v3/portal-sessions/redeem): a link opens once. The
   * new token, with the same scope and end, replaces it; the link's token is refused from
   * then on (401: the link was used already, or its session ended or was revoked).
   */
  async redeemLink(token: string): Promise<Credential> {
    const { json } = await exchange<{ result: { token: string; expiresAt: string; readOnly: boolean; school: School; scopes?: unknown } }>(
      "POST",
      "/v3/portal-sessions/redeem",
      { key: token },
    );
    const r = json.result;
    return { secret: r.token, session: { expiresAt: r.expiresAt, readOnly: r.readOnly }, school: r.school, scopes: scopesIn(r.scopes) };
  },
  /** GET /v3/school with the tab's credential: its school, and its scopes (null when the answer has none). */
  async getSchool(): Promise<{ school: School; scopes: string[] | null }> {
    const result = (await request<{ result: SchoolAnswer }>("GET", "/v3/school")).result;
    return { school: schoolOf(result), scopes: scopesIn(result.scopes) };
  },
  /** POST /v3/webhooks with an `Idempotency-Key`, so a double submit creates one registration. */
  async createWebhook(body: WebhookCreate, idempotencyKey: string): Promise<CreatedWebhook> {
    return (await request<{ result: CreatedWebhook }>("POST", "/v3/webhooks", { body, headers: { "idempotency-key": idempotencyKey } })).result;
  },
  /**
   * PATCH /v3/webhooks/{id}: any of `url`, `events`, `description`, `filter`, `headers`,
   * `maxPerSecond` (null clears; `headers` replaces the whole set), `payload`, `enabled`.
   */
  async updateWebhook(id: string, body: WebhookPatch): Promise<Webhook> {
    return (await request<{ result: Webhook }>("PATCH", `/v3/webhooks/${enc(id)}`, { body })).result;
  },
  /** DELETE /v3/webhooks/{id}. */
  async deleteWebhook(id: string): Promise<void> {
    await request("DELETE", `/v3/webhooks/${enc(id)}`);
  },
  /** POST /v3/webhooks/{id}/secret/rotate → the new secret (or public key) and when the previous one stops signing. */
  async rotateSecret(id: string, graceSeconds: number): Promise<RotatedSecret> {
    return (await request<{ result: RotatedSecret }>("POST", `/v3/webhooks/${enc(id)}/secret/rotate`, { body: { graceSeconds } })).result;
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
  /** POST /v3/webhooks/{id}/recover → how many events it queues again (counted up to 10,000: `exact` false beyond). */
  async recover(id: string, since: string, until?: string): Promise<{ queued: number; exact: boolean }> {
    return (
      await request<{ result: { queued: number; exact: boolean } }>("POST", `/v3/webhooks/${enc(id)}/recover`, { body: until ? { since, until } : { since } })
    ).result;
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
