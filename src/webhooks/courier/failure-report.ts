/**
 * What a courier tells its hub, and only that (docs/reference.md § "Auto-disable", § "Event delivery":
 * 410 and `webhook-delivery`, § "Failing and recovered notices"): its registration's failure
 * streak reached WEBHOOK_DISABLE_AFTER_HOURS, or a receiver answered 410 or asked to be
 * disabled (the hub decides and answers with a disabled config); its counted attempts failed
 * 4 times in a row, or succeeded 3 times in a row an hour or more after that (the hub
 * publishes the notice). Streaks, the report and the notices owed are kept in the courier's
 * KV, so a restart sends what is owed.
 */
import { mintId } from "../../lib/ids";
import { describeError, logObjectCallFailure } from "../../lib/log";
import { isSuccess } from "../delivery/schedule";
import type { ObjectCalls } from "../platform/object-calls";
import type { CourierConfig, FailingReport, StreakNotice } from "../rpc";
import type { Outcome } from "./queue";

/** A report the hub did not take is sent again this much later, by the courier's alarm (ms). */
export const REPORT_RETRY_MS = 10_000;

/** Failed attempts in a row that make a registration failing (docs/reference.md § "Failing and recovered notices"). */
const FAILING_AFTER = 4;
/** Successful attempts in a row that end a failing run (hysteresis: a flapping receiver stays failing). */
const RECOVERED_AFTER = 3;
/** `webhook.recovered` comes at least this long after its `webhook.failing` (ms): at most one pair an hour. */
const NOTICE_INTERVAL_MS = 60 * 60 * 1000;
/**
 * Deliveries of these events are not counted in the run: a notice about another registration
 * never starts, extends nor ends this one's (no notice can cause a notice).
 */
const UNCOUNTED_TYPES: ReadonlySet<string> = new Set(["webhook.failing", "webhook.recovered", "webhook.disabled", "webhook.events_missed"]);
/** Notices owed at most (the hub unreachable for long): beyond, the oldest pair goes, failing and recovered still alternate. */
const NOTICES_MAX = 20;
/** A notice's `lastError` keeps at most this many characters. */
const LAST_ERROR_CHARS = 500;

/**
 * The run of counted failed attempts (KV `streak`): its first attempt's start (ms), the
 * failures in a row, and once `webhook.failing` was noted, when (ms) and the successes in a
 * row since the last failure. Before the notice a success ends it; after, RECOVERED_AFTER.
 */
interface Streak {
  since: number;
  failures: number;
  /** When `webhook.failing` was noted (ms), or `false`; `true` (noted, instant unknown) counts from the next success. */
  noticed: number | boolean;
  successes?: number;
}

/**
 * Whether an attempt counts in the failing/recovered run: not a delivery of a notice (about
 * another registration), not an explicit refusal (`webhook-delivery: abort-message` with a
 * status other than 2xx: the receiver working, not failing).
 */
function countsInRun(outcome: Outcome): boolean {
  if (UNCOUNTED_TYPES.has(outcome.row.event_type)) return false;
  return !(outcome.control === "abort-message" && !isSuccess(outcome.status));
}

/**
 * One courier's failure streak and the report it owes its hub, and its run of failed attempts
 * and the notices it owes. Both live in KV only (read on use, a synchronous local read), so
 * no copy in memory can outlive a step that rolled back.
 */
export class FailureReport {
  private reporting = false;

  /**
   * @param disableAfterMs WEBHOOK_DISABLE_AFTER_HOURS, in ms.
   * @param retryLater called when a report could not be delivered (the courier's alarm retries).
   */
  constructor(
    private readonly kv: SyncKvStorage,
    private readonly hubs: ObjectCalls<ReturnType<Env["SCHOOL_HUB"]["get"]>>,
    private readonly disableAfterMs: number,
    private readonly retryLater: () => void,
  ) {}

  /**
   * Whether the receiver is down (missed-notice.ts waits for it): a run of counted failures was
   * noticed (`webhook.failing`) and no counted attempt succeeded, nor was the registration
   * enabled again, since the last one failed.
   */
  get failing(): boolean {
    const run = this.kv.get("streak") as Streak | undefined;
    return this.failingSince !== null && run !== undefined && run.noticed !== false;
  }

  /** When the current failure streak started (ms since epoch), or null. */
  private get failingSince(): number | null {
    return (this.kv.get("failingSince") as number | undefined) ?? null;
  }

  /**
   * An attempt was recorded (inside the outcome's step; `sendNew` after it): a success ends the streak; a failure
   * starts one at its `sentAt` if none runs; a streak of `disableAfterMs`, a 410, or a
   * `webhook-delivery: disable` (any status) is owed to the hub while `config` is enabled.
   * The run of failures in a row is counted too (`countRun`).
   */
  recorded(outcome: Outcome, config: CourierConfig): void {
    this.countRun(outcome, config.webhookId);
    // The auto-disable streak counts the same attempts as the run (`countsInRun`): a notice's
    // delivery or an explicit refusal neither starts, extends nor ends it.
    const counted = countsInRun(outcome);
    const since = this.failingSince;
    const success = isSuccess(outcome.status);
    if (counted && success) {
      if (since !== null) this.kv.delete("failingSince");
    } else if (counted && since === null) this.kv.put("failingSince", outcome.sentAt);
    if (!config.enabled) return;
    const failingSince = since ?? outcome.sentAt;
    const report = { webhookId: config.webhookId, version: config.version };
    if (outcome.control === "disable") this.owe({ ...report, reason: "receiver", failingSince: null });
    else if (success) return;
    else if (outcome.status === 410) this.owe({ ...report, reason: "gone", failingSince: null });
    else if (counted && outcome.finishedAt - failingSince >= this.disableAfterMs) this.owe({ ...report, reason: "failing", failingSince });
  }

  /**
   * Counts the run of failed attempts (KV `streak`, kept across restarts, a re-enable and a
   * disable), of the attempts that count (`countsInRun`): its FAILING_AFTER-th failure notes
   * `webhook.failing` (once per run); after that, RECOVERED_AFTER successes in a row, the last
   * at least NOTICE_INTERVAL_MS after the failing notice, note `webhook.recovered` and end it.
   * So a registration's notices are at most one pair an hour (docs/reference.md § "Failing and
   * recovered notices").
   */
  private countRun(outcome: Outcome, webhookId: string): void {
    if (!countsInRun(outcome)) return;
    const run = this.kv.get("streak") as Streak | undefined;
    const at = outcome.finishedAt;
    if (isSuccess(outcome.status)) {
      if (run === undefined) return;
      if (run.noticed === false) {
        this.kv.delete("streak");
        return;
      }
      // A run stored as noticed without its instant counts from this success.
      const noticedAt = run.noticed === true ? at : run.noticed;
      const successes = (run.successes ?? 0) + 1;
      if (successes < RECOVERED_AFTER || at - noticedAt < NOTICE_INTERVAL_MS) {
        this.kv.put("streak", { ...run, noticed: noticedAt, successes });
        return;
      }
      this.kv.delete("streak");
      this.notice({ id: mintId("evt", at), type: "webhook.recovered", webhookId, at, failingSince: run.since, recoveredAt: outcome.sentAt });
      return;
    }
    const next: Streak = { since: run?.since ?? outcome.sentAt, failures: (run?.failures ?? 0) + 1, noticed: run?.noticed ?? false, successes: 0 };
    if (next.noticed === false && next.failures >= FAILING_AFTER) {
      next.noticed = at;
      const lastError = (outcome.error ?? `HTTP ${outcome.status}`).slice(0, LAST_ERROR_CHARS);
      this.notice({ id: mintId("evt", at), type: "webhook.failing", webhookId, at, failingSince: next.since, consecutiveFailures: next.failures, lastError });
    }
    this.kv.put("streak", next);
  }

  /** Records a notice owed (durably), after those owed already; the caller sends it. */
  private notice(notice: StreakNotice): void {
    const owed = [...((this.kv.get("notices") as StreakNotice[] | undefined) ?? []), notice];
    this.kv.put("notices", owed.length > NOTICES_MAX ? owed.slice(2) : owed);
    this.owedInStep = true;
  }

  /** The registration was disabled: no report is owed any more (notices still are). */
  disabled(): void {
    this.kv.delete("report");
  }

  /** The courier closed: no streak, no report and no notice are kept. */
  forget(): void {
    this.disabled();
    this.enabled();
    this.kv.delete("streak");
    this.kv.delete("notices");
  }

  /** The registration was enabled again: the auto-disable streak restarts (the run of failures goes on). */
  enabled(): void {
    this.kv.delete("failingSince");
  }

  /** Whether a report or a notice is owed (a restarted courier sends it). */
  get owed(): boolean {
    return this.kv.get("report") !== undefined || this.kv.get("notices") !== undefined;
  }

  /** Sends the notices, then the report, owed to hub `hubId`, one call at a time; on failure `retryLater`. */
  send(hubId: string | undefined): void {
    this.sendNotices(hubId);
    this.sendReport(hubId);
  }

  /** Sends the notices owed to hub `hubId` in one call, in order; those it took are no longer owed. */
  private sendNotices(hubId: string | undefined): void {
    const notices = this.kv.get("notices") as StreakNotice[] | undefined;
    if (this.noticing || notices === undefined || hubId === undefined) return;
    this.noticing = true;
    let more = false;
    this.hubs
      .call(hubId, (hub) => hub.reportStreak(notices))
      .then(
        () => {
          const sent = new Set(notices.map((n) => n.id));
          const left = ((this.kv.get("notices") as StreakNotice[] | undefined) ?? []).filter((n) => !sent.has(n.id));
          if (left.length > 0) this.kv.put("notices", left);
          else this.kv.delete("notices");
          more = left.length > 0;
        },
        (err: unknown) => this.failed(notices[0]!.webhookId, "notice", err),
      )
      .finally(() => {
        this.noticing = false;
        // A notice owed while this call was under way (a success right after the 4th failure).
        if (more) this.sendNotices(hubId);
      });
  }

  /** Sends the report owed to hub `hubId`. */
  private sendReport(hubId: string | undefined): void {
    const report = this.kv.get("report") as FailingReport | undefined;
    if (this.reporting || report === undefined || hubId === undefined) return;
    this.reporting = true;
    this.hubs
      .call(hubId, (hub) => hub.reportFailing(report))
      .then(
        () => {
          const now = this.kv.get("report") as FailingReport | undefined;
          if (now?.version === report.version && now.reason === report.reason) this.kv.delete("report");
        },
        (err: unknown) => this.failed(report.webhookId, "report", err),
      )
      .finally(() => {
        this.reporting = false;
      });
  }

  /** A call to the hub failed: logged, and the alarm sends what is owed again. */
  private failed(webhookId: string, call: string, err: unknown): void {
    logObjectCallFailure({ from: "courier", webhookId, call, failures: 1, retryInMs: REPORT_RETRY_MS, error: describeError(err).error });
    this.retryLater();
  }

  /** Records a report owed (durably), unless the same one is, and the caller sends it. */
  private owe(report: FailingReport): void {
    const owed = this.kv.get("report") as FailingReport | undefined;
    if (owed?.version === report.version && owed.reason === report.reason) return;
    this.kv.put("report", report);
    this.owedInStep = true;
  }

  /** Sends a report or notices that the step just done came to owe (`recorded`), if any. */
  sendNew(hubId: string): void {
    if (!this.owedInStep) return;
    this.owedInStep = false;
    this.send(hubId);
  }

  /** A report or a notice became owed inside the current step: it is sent once the step is done. */
  private owedInStep = false;
  /** A call with the notices owed is under way. */
  private noticing = false;
}
