/**
 * The notices the hub publishes about one registration to the others (docs/reference.md §
 * "Failing and recovered notices", § "Auto-disable"): `webhook.failing` and
 * `webhook.recovered` on its courier's word, `webhook.disabled` when the hub disables it.
 * Each is accepted into the log in the caller's synchronous step and addressed only to the
 * registrations that can take it (`noticeAudiences`): no notice goes to one failing or
 * disabled, nor to the one it is about (docs/architecture.md § "Notices cannot amplify").
 */
import type { SchoolEvent } from "../../events/types";
import { mintId } from "../../lib/ids";
import { formatInstant } from "../../lib/time";
import type { FailingReport, StreakNotice } from "../rpc";
import { type Audience, accept, audiencesOf } from "./event-log";
import * as registrations from "./registrations";

/**
 * The audiences a notice (`webhook.failing`, `webhook.recovered`, `webhook.disabled`) may be
 * addressed to: enabled and not failing (docs/reference.md § "Failing and recovered notices").
 * A registration that could not take a notice is never given one, so no notice is retried
 * nor can count against a receiver already failing.
 */
function noticeAudiences(audiences: readonly Audience[]): Audience[] {
  return audiences.filter((a) => a.enabled && !a.failing);
}

/**
 * A courier's notice accepted (docs/reference.md § "Failing and recovered notices"): active
 * registration `id` is failing since `failingSince` (ms; `webhook.failing`), or no longer
 * (`null`: `webhook.recovered`). Nothing else changes (no new config for its courier).
 */
function noteStreak(sql: SqlStorage, id: string, failingSince: number | null): void {
  sql.exec(`UPDATE webhooks SET failing_since = ? WHERE id = ? AND deleted_at IS NULL`, failingSince, id);
}

/** What a notices step did: the registrations addressed (hand-overs owed) and how many notices were new. */
export interface NoticesTaken {
  addressed: Set<string>;
  accepted: number;
}

/**
 * A courier's notices, in order, at `now` (ms), inside the caller's step: each one new (by
 * event id; one sent again is ignored) about active registration `notices[0].webhookId` is
 * appended to the log, addressed to `noticeAudiences(audiences)`, and sets or clears its
 * `failing_since`. Notices about a deleted one, or about another than the first's, are dropped.
 */
export function takeNotices(sql: SqlStorage, schoolId: string, audiences: readonly Audience[], notices: readonly StreakNotice[], now: number): NoticesTaken {
  const addressed = new Set<string>();
  let accepted = 0;
  // A courier reports on its own registration only, never addressed: one read of the others serves all.
  const about = notices[0] ? registrations.readWebhook(sql, notices[0].webhookId) : null;
  const to = noticeAudiences(audiences);
  for (const notice of notices) {
    if (about === null || notice.webhookId !== about.id) continue;
    const done = accept(sql, to, [noticeEvent(schoolId, notice)], now, notice.webhookId);
    if (done.seqs.length === 0) continue;
    accepted += 1;
    noteStreak(sql, notice.webhookId, notice.type === "webhook.failing" ? notice.failingSince : null);
    for (const id of done.audiences) addressed.add(id);
  }
  return { addressed, accepted };
}

/**
 * A courier's report at `now` (ms), inside the caller's step: the registration is disabled
 * (unless it already is, or was re-enabled since) and `webhook.disabled` appended to the log
 * for `noticeAudiences`. @returns the audiences as the step leaves them and those addressed,
 * or `null` when nothing changed.
 */
export function takeDisable(sql: SqlStorage, schoolId: string, report: FailingReport, now: number): { audiences: Audience[]; addressed: Set<string> } | null {
  if (!registrations.disableWebhook(sql, report.webhookId, report.reason, report.version, now)) return null;
  // Read within the step (the registration now disabled); the caller caches them once it committed.
  const audiences = audiencesOf(registrations.readWebhooks(sql));
  const event = disabledEvent(schoolId, report, now);
  return { audiences, addressed: accept(sql, noticeAudiences(audiences), [event], now, report.webhookId).audiences };
}

/**
 * The `webhook.disabled` event of a registration the hub disabled at `now` (ms) on a
 * courier's report (docs/reference.md § "Auto-disable"): `data: { webhookId, reason, failingSince }`.
 */
function disabledEvent(schoolId: string, report: FailingReport, now: number): SchoolEvent {
  return {
    id: mintId("evt", now),
    type: "webhook.disabled",
    createdAt: formatInstant(now),
    schoolId,
    data: { webhookId: report.webhookId, reason: report.reason, failingSince: report.failingSince === null ? null : formatInstant(report.failingSince) },
  };
}

/**
 * The event of a courier's notice (docs/reference.md § "Failing and recovered notices"), with
 * the courier's id and instant: `webhook.failing` (`data: { webhookId, failingSince,
 * consecutiveFailures, lastError }`) or `webhook.recovered` (`data: { webhookId,
 * failingSince, recoveredAt }`).
 */
function noticeEvent(schoolId: string, notice: StreakNotice): SchoolEvent {
  const common = { webhookId: notice.webhookId, failingSince: formatInstant(notice.failingSince) };
  const data =
    notice.type === "webhook.failing"
      ? { ...common, consecutiveFailures: notice.consecutiveFailures, lastError: notice.lastError }
      : { ...common, recoveredAt: formatInstant(notice.recoveredAt) };
  return { id: notice.id, type: notice.type, createdAt: formatInstant(notice.at), schoolId, data };
}
