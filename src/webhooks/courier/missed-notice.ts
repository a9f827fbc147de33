/**
 * A courier's `webhook.events_missed` notice (docs/reference.md § "Missed events"; docs/
 * architecture.md § "Notices cannot amplify"): every gap of its registration (missed.ts) is
 * summed into one pending gap (KV `missed`), queued to the registration itself as one notice
 * while it is enabled and its receiver is not down, no sooner than MISSED_INTERVAL_MS after
 * the previous one and never while that one is still queued — so a gap that goes on extends
 * the pending notice. The notice is in this courier's log only (not the hub's, not the
 * feed), like `webhook.test`.
 */
import { encodeChangeCursor } from "../../lib/change-cursor";
import { mintId } from "../../lib/ids";
import { formatInstant } from "../../lib/time";
import type { CourierConfig, HubMissed } from "../rpc";
import { EVENTS_MISSED, type Gap, mergeGaps } from "./missed";
import { enqueue } from "./queue";

/** A registration is sent at most one `webhook.events_missed` per this long (ms). */
const MISSED_INTERVAL_MS = 60 * 60 * 1000;
/** While its receiver fails or the previous notice is queued, a pending notice waits (the gap goes on): the alarm looks again this often (ms). */
const RECHECK_MS = 10 * 60 * 1000;

/** The missed-events state of one courier, in its KV (written inside the caller's steps). */
export class MissedNotices {
  constructor(
    private readonly sql: SqlStorage,
    private readonly kv: SyncKvStorage,
    /** Whether its receiver is down (`FailureReport.failing`). */
    private readonly failing: () => boolean,
  ) {}

  /** The pending gap (`null`: nothing missed since the last notice). */
  get pending(): Gap | null {
    return (this.kv.get("missed") as Gap | undefined) ?? null;
  }

  /** Adds `gap` to the pending one (inside the caller's step). */
  note(gap: Gap | null): void {
    if (gap === null) return;
    this.kv.put("missed", mergeGaps(this.pending, gap));
  }

  /**
   * Adds what the hub's retention dropped (`Handover.missed`): its `total` less what was
   * taken before, so a hand-over sent again adds nothing (KV `hubMissed`).
   */
  noteHub(hub: HubMissed | undefined): void {
    if (hub === undefined) return;
    const seen = (this.kv.get("hubMissed") as number | undefined) ?? 0;
    if (hub.total <= seen) return;
    this.kv.put("hubMissed", hub.total);
    this.note({ missed: hub.total - seen, from: hub.from, to: hub.to, change: hub.change });
  }

  /**
   * Queues the pending gap's notice at `now` (ms) if `config` is enabled, its receiver is not
   * failing (an outage is one gap: the notice goes once it ends), the previous notice is no
   * longer queued and MISSED_INTERVAL_MS has passed since it (inside the caller's step).
   *
   * @returns when to try again (ms) while a gap waits (interval, failing receiver, previous notice queued), else `null`.
   */
  emit(config: CourierConfig | null, now: number): number | null {
    const gap = this.pending;
    if (gap === null || config === null || !config.enabled) return null;
    const last = (this.kv.get("missedAt") as number | undefined) ?? Number.NEGATIVE_INFINITY;
    if (now < last + MISSED_INTERVAL_MS) return last + MISSED_INTERVAL_MS;
    if (this.failing()) return now + RECHECK_MS;
    const queued = this.kv.get("missedId") as string | undefined;
    if (queued !== undefined && this.sql.exec(`SELECT 1 FROM queue WHERE event_id = ?`, queued).toArray().length > 0) return now + RECHECK_MS;
    const id = mintId("evt", now);
    const body = JSON.stringify({
      id,
      type: EVENTS_MISSED,
      createdAt: formatInstant(now),
      schoolId: config.schoolId,
      data: {
        webhookId: config.webhookId,
        from: gap.from,
        to: gap.to,
        missed: gap.missed,
        resumeCursor: gap.change === null ? null : encodeChangeCursor(Math.max(0, gap.change - 1)),
      },
    });
    this.sql.exec(`INSERT INTO events (id, type, body, accepted_at) VALUES (?, ?, ?, ?)`, id, EVENTS_MISSED, body, now);
    enqueue(this.sql, id, EVENTS_MISSED, "event", now);
    this.kv.delete("missed");
    this.kv.put("missedAt", now);
    this.kv.put("missedId", id);
    return null;
  }

  /** A closed courier keeps none of it. */
  forget(): void {
    for (const key of ["missed", "missedAt", "missedId", "hubMissed"]) this.kv.delete(key);
  }
}
