/**
 * What a courier tells its hub, and only that (docs/reference.md § "Auto-disable", § "Event delivery":
 * 410): its registration's failure streak reached WEBHOOK_DISABLE_AFTER_HOURS, or a receiver
 * answered 410. The streak and a report owed are kept in the courier's KV, so a restart
 * sends a report still owed; the hub decides and answers with a disabled config.
 */
import { describeError, logObjectCallFailure } from "../../lib/log";
import { isSuccess } from "../delivery/schedule";
import type { ObjectCalls } from "../platform/object-calls";
import type { CourierConfig, FailingReport } from "../rpc";
import type { Outcome } from "./queue";

/** A report the hub did not take is sent again this much later, by the courier's alarm (ms). */
export const REPORT_RETRY_MS = 10_000;

/**
 * One courier's failure streak and the report it owes its hub. The streak's start lives in KV
 * only (read on use, a synchronous local read), so no copy in memory can outlive a step that
 * rolled back.
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

  /** When the current failure streak started (ms since epoch), or null. */
  private get failingSince(): number | null {
    return (this.kv.get("failingSince") as number | undefined) ?? null;
  }

  /**
   * An attempt was recorded (inside the outcome's step; `sendNew` after it): a success ends the streak; a failure
   * starts one at its `sentAt` if none runs; a streak of `disableAfterMs`, or a 410, is owed to
   * the hub while `config` is enabled.
   */
  recorded(outcome: Outcome, config: CourierConfig): void {
    const since = this.failingSince;
    if (isSuccess(outcome.status)) {
      if (since !== null) this.kv.delete("failingSince");
      return;
    }
    if (since === null) this.kv.put("failingSince", outcome.sentAt);
    const failingSince = since ?? outcome.sentAt;
    if (!config.enabled) return;
    if (outcome.status === 410) this.owe({ webhookId: config.webhookId, version: config.version, reason: "gone", failingSince: null });
    else if (outcome.finishedAt - failingSince >= this.disableAfterMs) {
      this.owe({ webhookId: config.webhookId, version: config.version, reason: "failing", failingSince });
    }
  }

  /** The registration was disabled: nothing is owed any more. */
  disabled(): void {
    this.kv.delete("report");
  }

  /** The courier closed: no streak and no report are kept. */
  forget(): void {
    this.disabled();
    this.enabled();
  }

  /** The registration was enabled again: the streak restarts. */
  enabled(): void {
    this.kv.delete("failingSince");
  }

  /** Whether a report is owed (a restarted courier sends it). */
  get owed(): boolean {
    return this.kv.get("report") !== undefined;
  }

  /** Sends the report owed to hub `hubId`, one call at a time; on failure `retryLater`. */
  send(hubId: string | undefined): void {
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
        (err: unknown) => {
          logObjectCallFailure({
            from: "courier",
            webhookId: report.webhookId,
            call: "report",
            failures: 1,
            retryInMs: REPORT_RETRY_MS,
            error: describeError(err).error,
          });
          this.retryLater();
        },
      )
      .finally(() => {
        this.reporting = false;
      });
  }

  /** Records a report owed (durably), unless the same one is, and the caller sends it. */
  private owe(report: FailingReport): void {
    const owed = this.kv.get("report") as FailingReport | undefined;
    if (owed?.version === report.version && owed.reason === report.reason) return;
    this.kv.put("report", report);
    this.owedInStep = true;
  }

  /** Sends a report that the step just done came to owe (`recorded`), if any. */
  sendNew(hubId: string): void {
    if (!this.owedInStep) return;
    this.owedInStep = false;
    this.send(hubId);
  }

  /** A report became owed inside the current step: it is sent once the step is done. */
  private owedInStep = false;
}
