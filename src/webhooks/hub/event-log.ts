/**
 * The school's ordered event log (docs/reference.md § "Event delivery", § "Events feed"): accepting
 * events — each stored once, in acceptance order, with the registrations it is addressed to
 * by their subscription and filter at that instant — and reading it by cursor, for the
 * couriers' hand-overs. Synchronous SQL on the hub's storage.
 */
import { deliveredJson } from "../../courses/change";
import type { CourseKeys } from "../../courses/schemas";
import type { SchoolEvent } from "../../events/types";
import { BOUND_LIST, cutBatches, utf8Bytes } from "../../lib/batches";
import { mintId } from "../../lib/ids";
import { formatInstant } from "../../lib/time";
import type { HandedEvent, WebhookFilter } from "../rpc";
import { noteSpan } from "./change-spans";
import type { WebhookRow } from "./registrations";

/** A registration as the accept step needs it (parsed once per change of the set). */
export interface Audience {
  id: string;
  enabled: boolean;
  /** A `webhook.failing` about it was accepted and no `webhook.recovered` since (`failing_since`). */
  failing: boolean;
  /** Subscribed to every type, or to these. */
  all: boolean;
  types: ReadonlySet<string>;
  filter: WebhookFilter | null;
}

/** The audiences of the active registrations. */
export function audiencesOf(rows: readonly WebhookRow[]): Audience[] {
  return rows.map((row) => {
    const types = JSON.parse(row.events) as string[];
    return {
      id: row.id,
      enabled: row.enabled === 1,
      failing: row.failing_since !== null,
      all: types.includes("*"),
      types: new Set(types),
      filter: row.filter === null ? null : (JSON.parse(row.filter) as WebhookFilter),
    };
  });
}

/** Whether a course with `keys` is in `filter`'s scope: for every field given, one id matches. */
function inScope(filter: WebhookFilter, keys: CourseKeys): boolean {
  if (filter.trainingId && (keys.trainingId === null || !filter.trainingId.includes(keys.trainingId))) return false;
  if (filter.groupId && !keys.groupIds.some((id) => filter.groupId!.includes(id))) return false;
  if (filter.professorId && !keys.professorIds.some((id) => filter.professorId!.includes(id))) return false;
  return true;
}

/** The keys of the course an event carries, if it carries one. */
function keysOf(event: SchoolEvent): CourseKeys | null {
  const course = event.data.course;
  return course ? { trainingId: course.trainingId, groupIds: course.groupIds, professorIds: course.professorIds } : null;
}

/**
 * Whether `event` is addressed to `audience`: subscribed to its type and, with a filter, a
 * course event whose course (as carried, or as it was before the change: `event.previous`) is
 * in scope. Events without a course (`webhook.*`) always pass the filter.
 */
export function addressed(audience: Audience, event: SchoolEvent): boolean {
  if (!audience.all && !audience.types.has(event.type)) return false;
  if (audience.filter === null) return true;
  const after = keysOf(event);
  if (after === null) return true;
  return inScope(audience.filter, after) || (event.previous !== undefined && inScope(audience.filter, event.previous));
}

/** What `accept` did. */
export interface Accepted {
  /** The new events' positions (duplicates left out). */
  seqs: number[];
  /** Registrations that got events (enabled or not), and how many targets were written. */
  audiences: Set<string>;
  targets: number;
}

/** One event as the accept step binds it: `[id, type, body]`, the body spliced in as JSON (not escaped again). */
const encodeStored = (e: StoredEvent) => `[${JSON.stringify(e.id)},${JSON.stringify(e.type)},${e.body}]`;

interface StoredEvent {
  id: string;
  type: string;
  /** The exact JSON delivered (`previous` stripped). */
  body: string;
}

/**
 * Stores the new events of `events` at `now` (ms) — a known id is ignored — and, for each,
 * the registrations it is addressed to (`skipped` for disabled ones). `webhook.test` events
 * never enter the log; `previous` is used for the filters and stripped from the stored body.
 * `except` (a registration id) is addressed nothing (its own `webhook.disabled`, its notices). Events and
 * targets are bound in batches cut by `cutBatches` (count and bytes), several statements of
 * one synchronous step: the caller's `transactionSync` keeps it all-or-nothing.
 *
 * @throws ItemTooLarge (src/lib/batches.ts) for an event over the batch bytes alone, before
 *   anything is written (no write the contract allows makes one).
 */
export function accept(sql: SqlStorage, audiences: readonly Audience[], events: readonly SchoolEvent[], now: number, except?: string): Accepted {
  const loggable = events.filter((e) => e.type !== "webhook.test");
  const batches = cutBatches(
    loggable.map((e): StoredEvent => ({ id: e.id, type: e.type, body: deliveredJson(e) })),
    BOUND_LIST,
    encodeStored,
  );
  const stored: { seq: number; id: string }[] = [];
  for (const batch of batches) {
    for (const row of sql.exec<{ seq: number; id: string }>(
      `INSERT OR IGNORE INTO events (id, type, body, created_at)
       SELECT value ->> 0, value ->> 1, value -> 2, ?2 FROM json_each(?1) RETURNING seq, id`,
      batch.json,
      now,
    )) {
      stored.push(row);
    }
  }
  const seqOf = new Map(stored.map((r) => [r.id, r.seq]));
  // The feed's resume cursor after 410 reads these spans (hub/change-spans.ts).
  noteSpan(
    sql,
    stored.map((r) => r.seq),
    loggable.filter((e) => seqOf.has(e.id)),
    now,
  );
  const rows: [string, number, number][] = [];
  const touched = new Set<string>();
  for (const event of loggable) {
    const seq = seqOf.get(event.id);
    if (seq === undefined) continue;
    seqOf.delete(event.id);
    for (const audience of audiences) {
      if (audience.id === except || !addressed(audience, event)) continue;
      rows.push([audience.id, seq, audience.enabled ? 0 : 1]);
      touched.add(audience.id);
    }
  }
  for (const batch of cutBatches(rows)) {
    sql.exec(`INSERT OR IGNORE INTO targets (webhook_id, seq, skipped) SELECT value ->> 0, value ->> 1, value ->> 2 FROM json_each(?)`, batch.json);
  }
  return { seqs: stored.map((r) => r.seq).sort((a, b) => a - b), audiences: touched, targets: rows.length };
}

/** A hand-over's events and whether more are addressed after them. */
export interface HandOverRead {
  events: HandedEvent[];
  /** Events were left out by `limit` or `bytes`: another hand-over follows. */
  more: boolean;
}

/**
 * The events addressed to `webhookId` after `cursor`, in log order: at most `limit`, and no
 * more bytes of bodies than `bytes` (the first event always; a stored body is within the
 * platform's 2,000,000 bytes), so that a hand-over never carries more than what the
 * courier's `take` stores in one step. Served by the primary key of `targets` (webhook,
 * seq); rows past the bounds are never read.
 */
export function addressedAfter(sql: SqlStorage, webhookId: string, cursor: number, limit: number, bytes: number = BOUND_LIST.bytes): HandOverRead {
  const events: HandedEvent[] = [];
  let size = 0;
  const rows = sql.exec<{ seq: number; id: string; type: string; body: string; created_at: number; skipped: number }>(
    `SELECT t.seq, e.id, e.type, e.body, e.created_at, t.skipped FROM targets t JOIN events e ON e.seq = t.seq
     WHERE t.webhook_id = ? AND t.seq > ? ORDER BY t.seq LIMIT ?`,
    webhookId,
    cursor,
    limit + 1,
  );
  for (const r of rows) {
    // Each event travels with its id, type and numbers: 200 bytes is more than they take.
    const weight = utf8Bytes(r.body) + 200;
    if (events.length === limit || (events.length > 0 && size + weight > bytes)) return { events, more: true };
    size += weight;
    events.push({ seq: r.seq, id: r.id, type: r.type, body: r.body, acceptedAt: r.created_at, skipped: r.skipped === 1 });
  }
  return { events, more: false };
}

/** Registrations whose courier has not acknowledged everything addressed to it, its latest config, or what the retention dropped (hub/missed.ts). */
export function behind(sql: SqlStorage): string[] {
  return sql
    .exec<{ id: string }>(
      `SELECT w.id FROM webhooks w WHERE w.deleted_at IS NULL AND (
         w.courier_version < w.version AND w.courier <> 0
         OR EXISTS (SELECT 1 FROM targets t WHERE t.webhook_id = w.id AND t.seq > w.acked_seq)
         OR EXISTS (SELECT 1 FROM missed m WHERE m.webhook_id = w.id AND m.pending > 0))`,
    )
    .toArray()
    .map((r) => r.id);
}

/** A `webhook.test` event for registration `webhookId` at `now` (ms): `data: { webhookId }`. */
export function testEvent(schoolId: string, webhookId: string, now: number): SchoolEvent {
  return { id: mintId("evt", now), type: "webhook.test", createdAt: formatInstant(now), schoolId, data: { webhookId } };
}
