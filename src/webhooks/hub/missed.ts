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
export const CHANGE_OF = `CASE WHEN e.type LIKE 'course.%' THEN COALESCE(CAST(substr(e.body ->> '$.changeCursor', 5) AS INTEGER), 0) END`;

/**
 * Adds to each registration's `missed` row the events of `seqs` (a JSON list of log positions
 * about to be pruned, at most PRUNE_CHUNK) addressed to it after its acknowledged cursor, if
 * it is live. Inside the pruning's step, before the targets go; reads the pruned targets
 * through `targets_seq` and each registration by its key.
 */
export function accrueMissed(sql: SqlStorage, seqs: string): void {
  sql.exec(
    `INSERT INTO missed (webhook_id, total, pending, from_at, to_at, change)
     SELECT t.webhook_id, COUNT(*), COUNT(*), MIN(e.body ->> '$.createdAt'), MAX(e.body ->> '$.createdAt'), MIN(${CHANGE_OF})
     FROM targets t JOIN events e ON e.seq = t.seq JOIN webhooks w ON w.id = t.webhook_id
     WHERE t.seq IN (SELECT value FROM json_each(?)) AND t.seq > w.acked_seq AND w.deleted_at IS NULL
     GROUP BY t.webhook_id
     ON CONFLICT (webhook_id) DO UPDATE SET total = total + excluded.total, pending = pending + excluded.pending,
       from_at = COALESCE(MIN(from_at, excluded.from_at), excluded.from_at), to_at = COALESCE(MAX(to_at, excluded.to_at), excluded.to_at),
       change = CASE WHEN change IS NULL THEN excluded.change WHEN excluded.change IS NULL THEN change ELSE MIN(change, excluded.change) END`,
    seqs,
  );
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
