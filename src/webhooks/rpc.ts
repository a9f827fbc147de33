/**
 * Shapes exchanged over RPC between the Worker, the SchoolHub and the WebhookCouriers (docs/reference.md
 * § "Webhook registrations"): the only thing the three know of each other besides the
 * bindings' stub types. Records are the `z.infer`s of their schemas (api/schemas.ts).
 */

import type { z } from "zod";
import type { StoredAnswer } from "../http/respond";
import { RETENTION_MS } from "../lib/limits";
import type { Scope } from "../lib/scopes";
import { formatInstant } from "../lib/time";
import type { createdWebhookSchema, deliveryRecordSchema, rotatedSecretSchema, subscriptionSchema, webhookRecordSchema } from "./api/schemas";
import type { StatsBucket } from "./api/stats-schemas";
import type { PayloadForm } from "./delivery/payload";
import type { SignatureScheme } from "./delivery/signing";

export { MAX_WEBHOOKS } from "../lib/limits";

/** Subscription of a registration: `["*"]` (every event type) or a list of event types. */
export type Subscription = z.infer<typeof subscriptionSchema>;

/** A registration as GET /v3/webhooks lists it (no secret). */
export type WebhookRecord = z.infer<typeof webhookRecordSchema>;

/**
 * How a registration's deliveries are ordered (docs/reference.md § "Event delivery",
 * ordering): `course`, the events of one course in the hub's order; `none`, independent.
 */
export type Ordering = WebhookRecord["ordering"];

/** Whether `config` (none: no config yet) orders its deliveries by course. */
export const ordersByCourse = (config: Pick<CourierConfig, "ordering"> | null | undefined): boolean => config?.ordering === "course";

/** A registration as POST /v3/webhooks answers it: the only place the secret is shown. */
export type CreatedWebhook = z.infer<typeof createdWebhookSchema>;

/** Input of `SchoolHub.createWebhook`, already validated by the operation (URL policy included). */
export interface NewWebhook {
  url: string;
  events: Subscription;
  description: string | null;
  /** The school's dimensions a course event must match (docs/reference.md § "POST /v3/webhooks": `filter`); `null`: every event. */
  filter: WebhookFilter | null;
  /** Custom headers, names in lower case; `{}`: none. */
  headers: Record<string, string>;
  /** 1–1,000 attempts started per second at most; `null`: no throttle. */
  maxPerSecond: number | null;
  ordering: Ordering;
  /** `v1` (HMAC-SHA256 with a secret) or `v1a` (ed25519: a key pair); set at creation only. */
  signatureScheme: SignatureScheme;
  /** `full` events, or `thin` ones (the course's id and version). */
  payload: PayloadForm;
  /** The id of the API key behind the request's credential (`createdBy`); `null` when unknown. */
  createdBy: string | null;
  /** That key's scopes (docs/reference.md § Scopes): what the registration's deliveries may carry. */
  scopes: readonly Scope[];
}

/** A registration's filter: lists of 1–100 ids per dimension, at least one dimension. */
export interface WebhookFilter {
  trainingId?: string[];
  groupId?: string[];
  professorId?: string[];
}

/**
 * Input of `SchoolHub.updateWebhook` (PATCH /v3/webhooks/{id}), already validated (URL policy
 * included); an absent field is left as it is; `null` clears `description`, `filter`,
 * `headers` and `maxPerSecond`.
 */
export interface WebhookUpdate {
  url?: string;
  events?: Subscription;
  description?: string | null;
  filter?: WebhookFilter | null;
  /** Replaces the whole set; `null` (or `{}`) clears it. */
  headers?: Record<string, string> | null;
  maxPerSecond?: number | null;
  ordering?: Ordering;
  payload?: PayloadForm;
  enabled?: boolean;
  /** The id of the API key behind the request's credential (`updatedBy`), recorded if anything changes; `null` when unknown. */
  updatedBy: string | null;
}

/**
 * What `SchoolHub.updateWebhook` answers, nothing changed, to a PATCH of `url` without
 * `headers` on a registration that has custom headers.
 */
export const HEADERS_REQUIRED = "HEADERS_REQUIRED";

/**
 * Result of `SchoolHub.rotateSecret` (POST /v3/webhooks/{id}/secret/rotate): `{ id, secret,
 * previousSecretExpiresAt }`, or for a `v1a` registration `{ id, publicKey, previousSecretExpiresAt }`.
 */
export type RotatedSecret = z.infer<typeof rotatedSecretSchema>;

/** Why a lifecycle call (resend, recover, test) did nothing: the contract's error codes. */
export type LifecycleError = "WEBHOOK_NOT_FOUND" | "WEBHOOK_DISABLED" | "EVENT_NOT_FOUND";

/**
 * Result of `SchoolHub.createWebhook`: the answer to send (stored for its `Idempotency-Key`,
 * if any) and whether it is a replay, or the error code.
 */
export type CreateWebhookResult =
  | { ok: true; answer: StoredAnswer; replayed: boolean }
  | { ok: false; error: "WEBHOOK_LIMIT_REACHED" | "IDEMPOTENCY_KEY_MISMATCH" | "WEBHOOK_NOT_FOUND" };

/**
 * One entry of GET /v3/webhooks/{id}/deliveries (see `deliveryRecordSchema`). The schema
 * narrows `eventType` to the delivered event types; rows read from the hub's storage carry it
 * as text.
 */
export type DeliveryRecord = Omit<z.infer<typeof deliveryRecordSchema>, "eventType"> & { eventType: string };

/** Result of `SchoolHub.publish`: counts of this call. */
export interface PublishResult {
  /** Events stored by this call. */
  accepted: number;
  /** Events ignored because their id was already accepted (publish is idempotent by event id). */
  duplicates: number;
  /** Deliveries addressed (one per accepted event and registration it is addressed to). */
  deliveries: number;
}

/**
 * Requests a courier may have waiting for response headers: 5 of its I/O context's 6, the
 * sixth kept for its rare calls to the hub (a failure streak to report).
 */
export const COURIER_SLOTS = 5;

/**
 * What a courier needs of its registration to send: pushed by the hub with every hand-over
 * and after every change (`WebhookCourier.configure`). A courier applies a config only if its
 * `version` is newer than the one it holds. Instants in ms.
 */
export interface CourierConfig {
  webhookId: string;
  schoolId: string;
  /** The hub's `ctx.id.toString()`, where the courier reports a failure streak. */
  hubId: string;
  /** Bumped by the hub at every change of the registration. */
  version: number;
  url: string;
  /** How attempts are signed; absent in a config stored before it existed: `v1`. */
  signatureScheme?: SignatureScheme;
  /** The `whsec_` secret (`v1`) or the `whsk_` private key (`v1a`) attempts are signed with; its previous one during a rotation's grace. */
  secret: string;
  previousSecret: string | null;
  previousExpiresAt: number | null;
  /** What attempts carry (`deliveredBody`); absent in a config stored before it existed: `full`. */
  payload?: PayloadForm;
  /** Custom headers sent with every attempt (values never shown again). */
  headers: Record<string, string>;
  /** At most this many attempts start within any one second; `null`: no throttle. */
  maxPerSecond: number | null;
  /**
   * `course`: an attempt starts only once every earlier queued delivery of its course has
   * ended (courier/queue.ts `held`); `none` or absent (a config stored before the setting): independent.
   */
  ordering?: Ordering;
  enabled: boolean;
  /** How many times the registration was disabled: a courier that sees it grow ends its queue `skipped`, even if it missed the disabled config. */
  disables: number;
}

/** One event of the hub's log handed to a courier. */
export interface HandedEvent {
  /** Its position in the hub's log (the courier's cursor moves past it). */
  seq: number;
  id: string;
  type: string;
  /** The exact body POSTed. */
  body: string;
  /** When the hub accepted it (ms). */
  acceptedAt: number;
  /** Accepted while the registration was disabled: logged `skipped`, never attempted. */
  skipped: boolean;
}

/**
 * A hand-over (`WebhookCourier.deliver`): the registration's config and the events of the
 * hub's log addressed to it with `seq` in (the courier's cursor, `upTo`], in log order.
 */
export interface Handover {
  config: CourierConfig;
  events: HandedEvent[];
  upTo: number;
  /** Events the hub pruned before handing them over (hub/missed.ts), if any are not yet acknowledged. */
  missed?: HubMissed;
}

/**
 * What the hub's retention dropped unsent for one registration (hub/missed.ts): `total` counts
 * every such event since the registration was created (the courier adds `total` minus what
 * it took before, so a hand-over sent again adds nothing); `from`/`to` (ISO instants) and
 * `change` (the lowest change number of a missed course event, 0 for one without a
 * `changeCursor`; `null`: none) span those not yet acknowledged.
 */
export interface HubMissed {
  total: number;
  from: string;
  to: string;
  change: number | null;
}

/**
 * While a courier still has this many deliveries due, its next hand-over waits a little: it
 * has work, so fewer, larger hand-overs cost it nothing.
 */
export const BACKLOG_HIGH = 8;

/**
 * The courier's answer to a hand-over or a config: `closed` (its registration is deleted:
 * nothing was taken), its cursor into the hub's log, its backlog (deliveries queued and
 * due, counted up to BACKLOG_HIGH), which the hub uses to space out the next hand-over, and
 * `full`: its queue reached its bound (docs/architecture.md § Bounded work and storage), so
 * it took the hand-over only up to `cursor`; the hub keeps the rest in its log and hands it
 * over when the courier asks (`SchoolHub.drained`), or by its alarm.
 */
export interface HandoverReceipt {
  closed: boolean;
  cursor: number;
  backlog: number;
  full: boolean;
}

/**
 * What a courier tells the hub, the only thing the hub must decide (docs/reference.md § "Auto-disable"):
 * its registration has failed for WEBHOOK_DISABLE_AFTER_HOURS (`failing`, since
 * `failingSince`, ms), a receiver answered 410 (`gone`) or asked for it
 * (`webhook-delivery: disable`: `receiver`). `version` is the config the courier held: a
 * report about an older version than a re-enable is ignored.
 */
export interface FailingReport {
  webhookId: string;
  version: number;
  reason: "failing" | "gone" | "receiver";
  failingSince: number | null;
}

/**
 * A notice of a courier's failure streak (docs/reference.md § "Failing and recovered
 * notices"), which the hub publishes as that event: `webhook.failing` at the streak's 4th
 * failed attempt, `webhook.recovered` at the success that ends a streak that sent it, about
 * registration `webhookId`. `id` is the event's, minted by the courier, so that a notice sent again is accepted once. Instants
 * in ms: `at` when it was noted (the event's `createdAt`), `failingSince` the streak's first
 * failed attempt, `recoveredAt` the successful attempt.
 */
export type StreakNotice = { id: string; webhookId: string; at: number; failingSince: number } & (
  | { type: "webhook.failing"; consecutiveFailures: number; lastError: string }
  | { type: "webhook.recovered"; recoveredAt: number }
);

/** Why an attempt was made (docs/reference.md § "Delivery log": `trigger`). */
export type Trigger = "event" | "retry" | "resend" | "recover" | "test";

/** The answer of a courier call that queues (test, resend, recover): done, or why not. */
export type CourierStep<T> = { ok: true; value: T } | { ok: false; error: LifecycleError };

/**
 * The RPC stub of registration `webhookId`'s courier (`idFromName(webhookId)`; registration
 * ids are never reused). Typed from the binding, so callers need no import of the class.
 */
export function courierFor(env: Env, webhookId: string) {
  return env.WEBHOOK_COURIER.get(env.WEBHOOK_COURIER.idFromName(webhookId));
}

/** Bucket widths, in ms. Buckets are aligned on UTC hours or UTC days. */
export const STATS_BUCKET_MS = { hour: 3_600_000, day: 86_400_000 } as const;

/** A bucket width of the query: `hour` (the default) or `day`. */
export type StatsBucketSize = keyof typeof STATS_BUCKET_MS;

/**
 * The buckets of `size` that overlap [since, until) (ms, `since < until`), oldest first, all
 * zeros and `null` percentiles (docs/reference.md § "Delivery statistics": aligned on UTC hours or days). `first` is the first
 * bucket's start (ms).
 */
export function emptyBuckets(since: number, until: number, size: StatsBucketSize): { first: number; buckets: StatsBucket[] } {
  const width = STATS_BUCKET_MS[size];
  const first = Math.floor(since / width) * width;
  const count = Math.ceil((until - first) / width);
  const buckets = Array.from({ length: count }, (_, k) => ({
    start: formatInstant(first + k * width),
    succeeded: 0,
    failed: 0,
    pending: 0,
    skipped: 0,
    delayMs: null,
    durationMs: null,
  }));
  return { first, buckets };
}

/** The longest window one call may ask for, in ms: the log's 7-day retention. */
export const STATS_MAX_WINDOW_MS = RETENTION_MS;

/** The window when the query gives none, in ms: the last 24 hours. */
export const STATS_DEFAULT_WINDOW_MS = 24 * 3_600_000;
