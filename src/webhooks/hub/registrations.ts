/**
 * The hub's registrations as synchronous SQL steps on its own storage (docs/reference.md § "Webhook
 * registrations", § "PATCH /v3/webhooks/{id}", § "Secret rotation", § "Auto-disable"), and the config each
 * courier is given. Only the SchoolHub calls these, inside its synchronous steps.
 */
import { mintId } from "../../lib/ids";
import { RETENTION_MS } from "../../lib/limits";
import { formatScopes, storedScopes } from "../../lib/scopes";
import { formatInstant } from "../../lib/time";
import type { PayloadForm } from "../delivery/payload";
import type { SignatureScheme, SigningCredential } from "../delivery/signing";
import {
  type CourierConfig,
  type CourierStep,
  type CreateWebhookResult,
  type FailingReport,
  HEADERS_REQUIRED,
  MAX_WEBHOOKS,
  type NewWebhook,
  type Ordering,
  type RotatedSecret,
  type Subscription,
  type WebhookFilter,
  type WebhookRecord,
  type WebhookUpdate,
} from "../rpc";
import { courierConfig } from "./courier-config";
import { eraseAnswers, type IdempotencyInput, lookupKey, storeKey } from "./idempotency";
import { COURIER_OPEN, PRUNE_CHUNK } from "./storage";

/** A `webhooks` row. Instants in ms. */
export type WebhookRow = {
  id: string;
  url: string;
  events: string;
  description: string | null;
  filter: string | null;
  headers: string;
  max_per_second: number | null;
  ordering: Ordering;
  signature_scheme: SignatureScheme;
  /** `v1`: the `whsec_` secret; `v1a`: the `whsk_` private key (never answered). */
  secret: string;
  previous_secret: string | null;
  previous_expires_at: number | null;
  /** `v1a`: the current key's `whpk_` public key; `null` for `v1`. */
  public_key: string | null;
  payload: PayloadForm;
  /** The creating key's scopes (`formatScopes`' form): what its deliveries may carry (hub/courier-config.ts). */
  scopes: string;
  enabled: number;
  disabled_reason: "manual" | "failing" | "gone" | "receiver" | null;
  disabled_at: number | null;
  /** The first failed attempt of the streak a `webhook.failing` announced, until its `webhook.recovered` (hub/notices.ts). */
  failing_since: number | null;
  created_at: number;
  updated_at: number;
  deleted_at: number | null;
  created_by: string | null;
  updated_by: string | null;
  version: number;
  enabled_version: number;
  disables: number;
  courier_version: number;
  acked_seq: number;
  courier: number;
  /** A tombstone whose `targets` rows are all deleted (1); 0 otherwise. */
  forgotten: number;
};

/** A row as the API shows it (no secret nor private key, header names only). */
export function toWebhookRecord(row: WebhookRow): WebhookRecord {
  return {
    id: row.id,
    url: row.url,
    events: JSON.parse(row.events) as Subscription,
    description: row.description,
    filter: row.filter === null ? null : (JSON.parse(row.filter) as WebhookFilter),
    headerNames: Object.keys(JSON.parse(row.headers) as Record<string, string>).sort(),
    maxPerSecond: row.max_per_second,
    ordering: row.ordering,
    signatureScheme: row.signature_scheme,
    publicKey: row.public_key,
    payload: row.payload,
    scopes: storedScopes(row.scopes),
    enabled: row.enabled === 1,
    disabledReason: row.enabled === 1 ? null : row.disabled_reason,
    disabledAt: row.disabled_at === null || row.enabled === 1 ? null : formatInstant(row.disabled_at),
    failingSince: row.failing_since === null ? null : formatInstant(row.failing_since),
    createdBy: row.created_by,
    updatedBy: row.updated_by,
    createdAt: formatInstant(row.created_at),
    updatedAt: formatInstant(row.updated_at),
  };
}

/** The active (not deleted) registration `id`, or `null`. */
export function readWebhook(sql: SqlStorage, id: string): WebhookRow | null {
  return sql.exec<WebhookRow>(`SELECT * FROM webhooks WHERE id = ? AND deleted_at IS NULL`, id).toArray()[0] ?? null;
}

/** Every active registration, oldest first. */
export function readWebhooks(sql: SqlStorage): WebhookRow[] {
  return sql.exec<WebhookRow>(`SELECT * FROM webhooks WHERE deleted_at IS NULL ORDER BY created_at, id`).toArray();
}

/** Whether the id was ever used (deleted registrations included, pruned tombstones too: ids are never reused). */
function idTaken(sql: SqlStorage, id: string): boolean {
  return (
    sql.exec(`SELECT 1 FROM webhooks WHERE id = ?`, id).toArray().length > 0 || sql.exec(`SELECT 1 FROM deleted_ids WHERE id = ?`, id).toArray().length > 0
  );
}

/**
 * POST /v3/webhooks's step at `now` (ms): with an `Idempotency-Key` (`idem`) the key is
 * looked up, the registration created and the answer stored in this one synchronous step, so
 * racing requests with one key create one. `credential` is made beforehand for
 * `input.signatureScheme` (unused by a replay).
 *
 * @returns the answer (201, the record with its new `secret` — or, for `v1a`, with only its
 *   `publicKey`: the private key is never answered nor stored in an answer — and `location`)
 *   and whether it replays an earlier one; or `WEBHOOK_LIMIT_REACHED` (50 registrations
 *   already), `IDEMPOTENCY_KEY_MISMATCH` (the key was used with another body), `WEBHOOK_NOT_FOUND` (the
 *   key created a registration since deleted: its answer is erased).
 */
export function create(
  sql: SqlStorage,
  input: NewWebhook,
  credential: SigningCredential,
  idem: IdempotencyInput | undefined,
  now: number,
): CreateWebhookResult {
  const found = idem ? lookupKey(sql, idem, now) : { kind: "new" as const };
  if (found.kind === "replay") return { ok: true, answer: found.answer, replayed: true };
  if (found.kind === "mismatch") return { ok: false, error: "IDEMPOTENCY_KEY_MISMATCH" };
  if (found.kind === "erased") return { ok: false, error: "WEBHOOK_NOT_FOUND" };
  const { n } = sql.exec<{ n: number }>(`SELECT COUNT(*) AS n FROM webhooks WHERE deleted_at IS NULL`).one();
  if (n >= MAX_WEBHOOKS) return { ok: false, error: "WEBHOOK_LIMIT_REACHED" };
  let id = mintId("wh", now);
  // Never reuse an id, deleted ones included (a collision is astronomically unlikely).
  while (idTaken(sql, id)) id = mintId("wh", now);
  insertWebhook(sql, id, input, credential, now);
  const record = toWebhookRecord(readWebhook(sql, id)!);
  const webhook = input.signatureScheme === "v1" ? { ...record, secret: credential.secret } : record;
  const answer = { status: 201, body: JSON.stringify({ status: "success", result: webhook }), location: `/v3/webhooks/${id}` };
  if (idem) storeKey(sql, idem, answer, now);
  return { ok: true, answer, replayed: false };
}

/** Stores a new registration `id` with its signing `credential` at `now` (ms). */
function insertWebhook(sql: SqlStorage, id: string, input: NewWebhook, credential: SigningCredential, now: number): void {
  sql.exec(
    `INSERT INTO webhooks (id, url, events, description, filter, headers, max_per_second, secret, created_at, updated_at, created_by, updated_by,
       ordering, signature_scheme, public_key, payload, scopes)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?9, ?9, ?10, ?10, ?11, ?12, ?13, ?14, ?15)`,
    id,
    input.url,
    JSON.stringify(input.events),
    input.description,
    input.filter === null ? null : JSON.stringify(input.filter),
    JSON.stringify(input.headers),
    input.maxPerSecond,
    credential.secret,
    now,
    input.createdBy,
    input.ordering,
    input.signatureScheme,
    credential.publicKey,
    input.payload,
    formatScopes(input.scopes),
  );
}

/**
 * PATCH: applies `change` to `id` at `now` (ms). `enabled: false` disables it (reason
 * `manual`), `enabled: true` re-enables it. Every change bumps `version`, so its courier is
 * given the new config, and records `change.updatedBy` (a PATCH that changes nothing records
 * nothing).
 *
 * A new `url` on a registration with custom headers must come with `headers`: the values
 * are bound to the URL they were given for (docs/reference.md § PATCH /v3/webhooks/{id}).
 *
 * @returns the row after the change, `null` for an unknown or deleted id, or
 *   `HEADERS_REQUIRED` (nothing changed) for a `url` without `headers` on a registration with custom headers.
 */
export function updateWebhook(sql: SqlStorage, id: string, change: WebhookUpdate, now: number): WebhookRow | null | typeof HEADERS_REQUIRED {
  const before = readWebhook(sql, id);
  if (!before) return null;
  if (change.url !== undefined && change.headers === undefined && before.headers !== "{}") return HEADERS_REQUIRED;
  const set: string[] = [];
  const values: unknown[] = [];
  const put = (column: string, value: unknown) => {
    values.push(value);
    set.push(`${column} = ?${values.length}`);
  };
  if (change.url !== undefined) put("url", change.url);
  if (change.events !== undefined) put("events", JSON.stringify(change.events));
  if (change.description !== undefined) put("description", change.description);
  if (change.filter !== undefined) put("filter", change.filter === null ? null : JSON.stringify(change.filter));
  if (change.headers !== undefined) put("headers", JSON.stringify(change.headers ?? {}));
  if (change.maxPerSecond !== undefined) put("max_per_second", change.maxPerSecond);
  if (change.ordering !== undefined) put("ordering", change.ordering);
  if (change.payload !== undefined) put("payload", change.payload);
  if (change.enabled === false && before.enabled === 1) {
    put("enabled", 0);
    put("disabled_reason", "manual");
    put("disabled_at", now);
    set.push("disables = disables + 1");
  }
  if (change.enabled === true && before.enabled === 0) {
    put("enabled", 1);
    put("disabled_reason", null);
    put("disabled_at", null);
    set.push("enabled_version = version + 1");
  }
  if (set.length === 0) return before;
  put("updated_at", now);
  put("updated_by", change.updatedBy);
  values.push(id);
  sql.exec(`UPDATE webhooks SET ${set.join(", ")}, version = version + 1 WHERE id = ?${values.length}`, ...values);
  return readWebhook(sql, id);
}

/**
 * Disables `id` at `now` (ms) for `reason` (auto-disable), unless it is already disabled or
 * was re-enabled after the courier's report (`reportVersion` older than the last enable).
 *
 * @returns whether it was disabled now.
 */
export function disableWebhook(sql: SqlStorage, id: string, reason: FailingReport["reason"], reportVersion: number, now: number): boolean {
  return (
    sql.exec(
      `UPDATE webhooks SET enabled = 0, disabled_reason = ?2, disabled_at = ?3, updated_at = ?3, version = version + 1, disables = disables + 1
       WHERE id = ?1 AND deleted_at IS NULL AND enabled = 1 AND enabled_version <= ?4`,
      id,
      reason,
      now,
      reportVersion,
    ).rowsWritten > 0
  );
}

/**
 * Rotation: a new `credential` (made beforehand, of the registration's scheme); the current
 * secret or private key becomes the previous, valid `graceSeconds` more (0: dropped now). A
 * previous one from an earlier rotation is forgotten. `updatedBy`: the id of the API key
 * behind the request (`null` when unknown), recorded.
 *
 * @returns the new secret (`v1`) or public key (`v1a`: the private key is never answered) and
 *   when the previous one expires, or `null` for an unknown id.
 */
export function rotateSecret(
  sql: SqlStorage,
  id: string,
  credential: SigningCredential,
  graceSeconds: number,
  updatedBy: string | null,
  now: number,
): RotatedSecret | null {
  const row = readWebhook(sql, id);
  if (!row) return null;
  const expiresAt = graceSeconds > 0 ? now + graceSeconds * 1000 : null;
  sql.exec(
    `UPDATE webhooks SET previous_secret = CASE WHEN ?3 IS NULL THEN NULL ELSE secret END, previous_expires_at = ?3, secret = ?2,
       public_key = ?6, updated_at = ?4, updated_by = ?5, version = version + 1 WHERE id = ?1`,
    id,
    credential.secret,
    expiresAt,
    now,
    updatedBy,
    credential.publicKey,
  );
  const previousSecretExpiresAt = expiresAt === null ? null : formatInstant(expiresAt);
  return row.signature_scheme === "v1a" && credential.publicKey !== null
    ? { id, publicKey: credential.publicKey, previousSecretExpiresAt }
    : { id, secret: credential.secret, previousSecretExpiresAt };
}

/**
 * DELETE's step: registration `id` becomes a tombstone at `now` (ms) unless it already is
 * one. It keeps only what the deregistration promise needs (docs/reference.md §
 * "DELETE /v3/webhooks/{id} (beta)": the id is deleted, its courier's state, when): its URL (often carrying a token), subscription,
 * description, filter, creator, both secrets (or private keys), the header values and the
 * idempotent answers of its creation (index `idempotency_keys_location`) are erased at once —
 * nothing reads a tombstone's (`readWebhook` finds none). Its addressed events (`targets`) are
 * forgotten later, in bounded steps (`pruneDeleted`): no step reads them for a tombstone.
 *
 * @returns `"deleted"` now, `"tombstone"` if it already was one, `null` if it never existed;
 *   with its courier state.
 */
export function tombstone(sql: SqlStorage, id: string, now: number): { found: "deleted" | "tombstone"; courier: number } | null {
  const row = sql.exec<{ deleted_at: number | null; courier: number }>(`SELECT deleted_at, courier FROM webhooks WHERE id = ?`, id).toArray()[0];
  if (!row) return null;
  if (row.deleted_at !== null) return { found: "tombstone", courier: row.courier };
  sql.exec(
    `UPDATE webhooks SET deleted_at = ?2, url = '', events = '[]', description = NULL, filter = NULL, created_by = NULL, updated_by = NULL,
       secret = '', previous_secret = NULL, previous_expires_at = NULL, public_key = NULL, headers = '{}', version = version + 1 WHERE id = ?1`,
    id,
    now,
  );
  // Its idempotent answers hold the URL and the secret: only the key stays, and a replay of it
  // answers 404 (it must not create the registration again, nor show the deleted one).
  eraseAnswers(sql, `/v3/webhooks/${id}`);
  return { found: "deleted", courier: row.courier };
}

/**
 * The config of active, enabled registration `id` for a call to its courier (test, resend,
 * recover), marking the courier in use; or why it cannot be used.
 */
export function usable(sql: SqlStorage, id: string, schoolId: string, hubId: string): CourierStep<CourierConfig> {
  const row = readWebhook(sql, id);
  if (!row) return { ok: false, error: "WEBHOOK_NOT_FOUND" };
  if (row.enabled !== 1) return { ok: false, error: "WEBHOOK_DISABLED" };
  if (row.courier !== COURIER_OPEN) sql.exec(`UPDATE webhooks SET courier = ? WHERE id = ?`, COURIER_OPEN, id);
  return { ok: true, value: courierConfig(row, schoolId, hubId) };
}

/** Registrations not deleted whose courier may hold state (a new hub instance wakes them). */
export function liveCouriers(sql: SqlStorage): string[] {
  return sql
    .exec<{ id: string }>(`SELECT id FROM webhooks WHERE deleted_at IS NULL AND courier = ?`, COURIER_OPEN)
    .toArray()
    .map((r) => r.id);
}

/**
 * One bounded step of forgetting deleted registrations (docs/architecture.md § Bounded work
 * and storage): at most PRUNE_CHUNK `targets` rows of one tombstone still being forgotten
 * (`forgotten` set once none remain); then at most PRUNE_CHUNK tombstones deleted over the
 * 7-day retention at `now` (ms), their courier confirmed closed and their targets gone —
 * each leaves its id in `deleted_ids`, so that it is never reused. Every read goes through
 * an index (`webhooks_forgetting`, the primary key of `targets`).
 *
 * @returns whether more may remain (the caller comes back soon).
 */
export function pruneDeleted(sql: SqlStorage, now: number): boolean {
  const forgetting = sql.exec<{ id: string }>(`SELECT id FROM webhooks WHERE forgotten = 0 AND deleted_at IS NOT NULL LIMIT 1`).toArray()[0];
  if (forgetting) {
    const targets = sql.exec(
      `DELETE FROM targets WHERE webhook_id = ?1 AND seq IN (SELECT seq FROM targets WHERE webhook_id = ?1 ORDER BY seq LIMIT ?2)`,
      forgetting.id,
      PRUNE_CHUNK,
    ).rowsWritten;
    // No step addresses a tombstone anything: once its rows are gone, none come back.
    if (targets < PRUNE_CHUNK) sql.exec(`UPDATE webhooks SET forgotten = 1 WHERE id = ?`, forgetting.id);
  }
  const old = sql
    .exec<{ id: string }>(
      `SELECT id FROM webhooks WHERE forgotten = 1 AND deleted_at < ?1 AND courier <> ?2 LIMIT ?3`,
      now - RETENTION_MS,
      COURIER_OPEN,
      PRUNE_CHUNK,
    )
    .toArray()
    .map((r) => r.id);
  if (old.length > 0) {
    const ids = JSON.stringify(old);
    sql.exec(`INSERT OR IGNORE INTO deleted_ids (id) SELECT value FROM json_each(?)`, ids);
    sql.exec(`DELETE FROM webhooks WHERE id IN (SELECT value FROM json_each(?))`, ids);
  }
  return forgetting !== undefined || old.length >= PRUNE_CHUNK;
}

/** A tombstone's place in the order of `unclosed`: when it was deleted (ms), then its rowid. */
export type UnclosedAt = [deletedAt: number, rowid: number];

/**
 * Up to `limit` tombstones whose courier is not confirmed closed (a DELETE whose close
 * failed), after `after`, oldest first: a range of the index `webhooks_courier` (rowid is its last column).
 */
export function unclosed(sql: SqlStorage, after: UnclosedAt = [-1, 0], limit = 1): { id: string; at: UnclosedAt }[] {
  return sql
    .exec<{ id: string; deleted_at: number; r: number }>(
      `SELECT id, deleted_at, rowid AS r FROM webhooks WHERE courier = ?1 AND deleted_at IS NOT NULL AND (deleted_at, rowid) > (?2, ?3)
       ORDER BY deleted_at, rowid LIMIT ?4`,
      COURIER_OPEN,
      after[0],
      after[1],
      limit,
    )
    .toArray()
    .map((r) => ({ id: r.id, at: [r.deleted_at, r.r] }));
}
