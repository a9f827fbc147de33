/**
 * A disable's skip of a courier's queue (docs/reference.md § "PATCH /v3/webhooks/{id}",
 * § "Delivery log"): the mark it covers, its bounded steps, and ending rows `skipped`. Only
 * the WebhookCourier calls these, inside its synchronous steps.
 */
import { type Gap, gapOfQueued } from "./missed";

/** The log's `error` of a skipped entry (docs/reference.md § "Delivery log"). */
export const SKIPPED_ERROR = "registration disabled";
/** Queue rows one skip step ends at most (a disable's skip goes on in later steps). */
const SKIP_CHUNK = 500;

/**
 * The registration was disabled (docs/reference.md § "PATCH /v3/webhooks/{id}": `enabled:
 * false`): every delivery queued now ends `skipped`, pending retries included. Returns the
 * mark of that skip — the last queue id it covers (`through`, 0: none) — which the caller
 * keeps durably (KV `skipping`) until `skipStep` has ended every row up to it: rows are
 * never started meanwhile (`readDue`'s `after`), so the disable holds for the whole queue at
 * once while its log entries are written in bounded steps. One read of the primary key.
 */
export function skipMark(sql: SqlStorage): number {
  return sql.exec<{ id: number | null }>(`SELECT MAX(id) AS id FROM queue`).one().id ?? 0;
}

/**
 * One bounded step of a disable's skip: at most SKIP_CHUNK queued deliveries with id ≤
 * `through`, not `busy` (in flight: their outcome is recorded first, then this ends them),
 * end `skipped` at `now` (ms), each numbered as its event's next entry
 * (`events.last_attempt`; 1 for a row whose event copy is missing). Run inside the caller's
 * synchronous step.
 *
 * @returns `more`: rows up to `through` not busy remain (another step goes on at once);
 *   `done`: none at all remains (the mark can go); `gap`: what the rows ended held (`gapOfQueued`).
 */
function skipStep(sql: SqlStorage, through: number, busy: readonly number[], now: number): { more: boolean; done: boolean; gap: Gap | null } {
  const ids = sql
    .exec<{ id: number }>(
      `SELECT id FROM queue WHERE id <= ? AND id NOT IN (SELECT value FROM json_each(?)) ORDER BY id LIMIT ?`,
      through,
      JSON.stringify(busy),
      SKIP_CHUNK,
    )
    .toArray()
    .map((r) => r.id);
  const gap = gapOfQueued(sql, ids);
  skipRows(sql, ids, now);
  const left = sql
    .exec<{ id: number }>(`SELECT id FROM queue WHERE id <= ? ORDER BY id LIMIT ?`, through, busy.length + 1)
    .toArray()
    .map((r) => r.id);
  return { more: left.some((id) => !busy.includes(id)), done: left.length === 0, gap };
}

/** Ends queue rows `ids` (few: a bound list) `skipped` at `now` (ms): their events' numbers move on, a log entry each, the rows deleted. */
export function skipRows(sql: SqlStorage, ids: readonly number[], now: number): void {
  if (ids.length === 0) return;
  const list = JSON.stringify(ids);
  sql.exec(`UPDATE events SET last_attempt = last_attempt + 1 WHERE id IN (SELECT event_id FROM queue WHERE id IN (SELECT value FROM json_each(?)))`, list);
  sql.exec(
    `INSERT INTO log (event_id, event_type, attempt, status, trigger, error, attempted_at)
     SELECT q.event_id, q.event_type, COALESCE(e.last_attempt, 1), 'skipped', q.trigger, ?2, ?3 FROM queue q LEFT JOIN events e ON e.id = q.event_id
     WHERE q.id IN (SELECT value FROM json_each(?1)) ORDER BY q.id`,
    list,
    SKIPPED_ERROR,
    now,
  );
  sql.exec(`DELETE FROM queue WHERE id IN (SELECT value FROM json_each(?))`, list);
}

/** A disable's skip of the queue behind its durable mark (KV `skipping`); what it ends is noted as missed (missed-notice.ts). */
export class DisableSkip {
  constructor(
    private readonly sql: SqlStorage,
    private readonly kv: SyncKvStorage,
    private readonly busy: () => readonly number[],
    private readonly missed: { note(gap: Gap | null): void },
  ) {}

  /** The last queue id a disable's skip has still to end (KV `skipping`), or 0: none under way. */
  get through(): number {
    return (this.kv.get("skipping") as number | undefined) ?? 0;
  }

  /**
   * One step of the skip at `now` (ms), inside the caller's synchronous step: at most
   * SKIP_CHUNK rows end skipped (`skipStep`); the mark is dropped once none is left. Rows in
   * flight are ended by the step that records their outcome.
   *
   * @returns whether rows not in flight are left (the alarm goes on at once).
   */
  step(now: number): boolean {
    const through = this.through;
    if (through === 0) return false;
    const step = skipStep(this.sql, through, this.busy(), now);
    this.missed.note(step.gap);
    if (step.done) this.kv.delete("skipping");
    return step.more;
  }
}
