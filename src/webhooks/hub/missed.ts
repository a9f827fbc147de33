/**
 * What the hub's retention drops unsent (docs/reference.md § "Missed events"; docs/
 * architecture.md § Bounded work and storage): an event pruned while addressed to a live
 * registration after its courier's acknowledged cursor was never handed over. The pruning
 * step sums those per registration (`missed`: one row each), the next hand-over carries the
 * sum (`Handover.missed`), and the courier's receipt clears it; the courier sends the notice.
 */
import type { HubMissed } from "../rpc";

/**
 * The change number of a stored event `e` for the gap sums: its `changeCursor` decoded for a
 * course event (0 without one: resume from the start), NULL for a notice.
 */
const CHANGE_OF = `CASE WHEN e.type LIKE 'course.%' THEN COALESCE(CAST(substr(e.body ->> '$.changeCursor', 5) AS INTEGER), 0) END`;

/**
 * Adds to each registration's `missed` row the events of `seqs` (a JSON list of log positions
 * about to be pruned, at most PRUNE_CHUNK) addressed to it after its acknowledged cursor, if
 * it is live. Inside the pruning's step, before the targets go: the pruned targets read
 * through `targets_seq` (at most PRUNE_CHUNK × 50 small rows, none when every registration
 * took them), each event's fields once by its key, summed here, then one upsert per
 * registration (50 at most).
 */
export function accrueMissed(sql: SqlStorage, seqs: string): void {
  const targets = sql
    .exec<{ webhook_id: string; seq: number }>(
      `SELECT t.webhook_id, t.seq FROM targets t JOIN webhooks w ON w.id = t.webhook_id
       WHERE t.seq IN (SELECT value FROM json_each(?)) AND t.seq > w.acked_seq AND w.deleted_at IS NULL`,
      seqs,
    )
    .toArray();
  if (targets.length === 0) return;
  const events = new Map(
    sql
      .exec<{ seq: number; at: string; change: number | null }>(
        `SELECT e.seq, e.body ->> '$.createdAt' AS at, ${CHANGE_OF} AS change FROM events e WHERE e.seq IN (SELECT value FROM json_each(?))`,
        JSON.stringify([...new Set(targets.map((t) => t.seq))]),
      )
      .toArray()
      .map((e) => [e.seq, e]),
  );
  const sums = new Map<string, { n: number; from: string; to: string; change: number | null }>();
  for (const { webhook_id: id, seq } of targets) {
    const e = events.get(seq);
    if (e === undefined) continue;
    const sum = sums.get(id);
    const change = e.change === null ? null : Number(e.change);
    if (sum === undefined) sums.set(id, { n: 1, from: e.at, to: e.at, change });
    else {
      sum.n += 1;
      if (e.at < sum.from) sum.from = e.at;
      if (e.at > sum.to) sum.to = e.at;
      if (change !== null && (sum.change === null || change < sum.change)) sum.change = change;
    }
  }
  for (const [id, sum] of sums) {
    sql.exec(
      `INSERT INTO missed (webhook_id, total, pending, from_at, to_at, change) VALUES (?1, ?2, ?2, ?3, ?4, ?5)
       ON CONFLICT (webhook_id) DO UPDATE SET total = total + ?2, pending = pending + ?2,
         from_at = COALESCE(MIN(from_at, ?3), ?3), to_at = COALESCE(MAX(to_at, ?4), ?4), change = COALESCE(MIN(change, ?5), change, ?5)`,
      id,
      sum.n,
      sum.from,
      sum.to,
      sum.change,
    );
  }
}

/** What registration `id`'s next hand-over carries of what the retention dropped, if any is not acknowledged. One key read. */
export function owedMissed(sql: SqlStorage, id: string): HubMissed | undefined {
  const row = sql
    .exec<{ total: number; from_at: string; to_at: string; change: number | null }>(
      `SELECT total, from_at, to_at, change FROM missed WHERE webhook_id = ? AND pending > 0`,
      id,
    )
    .toArray()[0];
  return row && { total: row.total, from: row.from_at, to: row.to_at, change: row.change };
}

/**
 * Registration `id`'s courier took the sum up to `total`: cleared, unless the pruning added
 * to it meanwhile (then the next hand-over carries it all again; the courier adds only what
 * `total` grew by, so the count stays exact and the range can only be wider).
 */
export function clearMissed(sql: SqlStorage, id: string, total: number): void {
  sql.exec(`UPDATE missed SET pending = 0, from_at = NULL, to_at = NULL, change = NULL WHERE webhook_id = ? AND total = ?`, id, total);
}
