/**
 * Which attempts make a registration failing or recovered (docs/reference.md § "Failing and
 * recovered notices"): the courier's run counts its attempts but for deliveries of notices
 * about other registrations and explicit refusals (`webhook-delivery: abort-message`); 4
 * failures in a row owe `webhook.failing`, then 3 successes in a row, the last an hour or more
 * after it, owe `webhook.recovered`. The run is fed outcomes directly, at chosen instants.
 */
import { describe, expect, it } from "vitest";
import { FailureReport } from "../../src/webhooks/courier/failure-report";
import type { Outcome } from "../../src/webhooks/courier/queue";
import type { DeliveryControl } from "../../src/webhooks/delivery/schedule";
import type { ObjectCalls } from "../../src/webhooks/platform/object-calls";
import type { StreakNotice } from "../../src/webhooks/rpc";
import { courierConfig, inCourier, ownStorage } from "../support/webhooks/harness";

const MINUTE = 60_000;

/** One attempt: `ok` a 204 or a 500 (`status` overrides), of `type`, at `at` (ms). */
type Attempt = { at: number; ok?: boolean; status?: number; type?: string; control?: DeliveryControl };

/** Feeds `attempts` to a fresh courier's run (nothing is sent to a hub) and returns the notices owed, in order. */
async function noticesFor(label: string, attempts: Attempt[]): Promise<Pick<StreakNotice, "type" | "at">[]> {
  const webhookId = `wh_rules_${label}`;
  const config = courierConfig("sch_rules", webhookId, { url: "https://rules.example.com/in" });
  return inCourier(webhookId, (courier) => {
    const kv = ownStorage(courier).kv;
    const report = new FailureReport(kv, {} as ObjectCalls<ReturnType<Env["SCHOOL_HUB"]["get"]>>, 120 * 60 * MINUTE, () => {});
    attempts.forEach((a, n) => {
      const status = a.status ?? (a.ok ? 204 : 500);
      const outcome: Outcome = {
        row: { id: n + 1, event_id: `evt_${n}`, event_type: a.type ?? "course.updated", trigger: "event", attempts: 0, requested: 0, body: "{}" },
        url: config.url,
        sentAt: a.at,
        finishedAt: a.at + 10,
        durationMs: 10,
        status,
        error: status >= 300 ? `HTTP ${status}` : null,
        retryAfter: null,
        responseBody: null,
        ...(a.control ? { control: a.control } : {}),
      };
      report.recorded(outcome, config);
    });
    return ((kv.get("notices") as StreakNotice[] | undefined) ?? []).map((n) => ({ type: n.type, at: n.at }));
  });
}

/** `n` attempts, one a minute from `from` (minutes), each as `attempt` says. */
const every = (from: number, n: number, attempt: Omit<Attempt, "at">): Attempt[] =>
  Array.from({ length: n }, (_, i) => ({ ...attempt, at: (from + i) * MINUTE }));

describe("the failing/recovered run", () => {
  it("a receiver failing 4 requests in 5 for 5 hours is announced failing once, and never recovered", async () => {
    const attempts = Array.from({ length: 300 }, (_, i): Attempt => ({ at: i * MINUTE, ok: i % 5 === 4 }));
    expect(await noticesFor("flap", attempts)).toEqual([{ type: "webhook.failing", at: 3 * MINUTE + 10 }]);
  });

  it("recovered takes 3 successes in a row, the last an hour or more after webhook.failing", async () => {
    const attempts = [
      ...every(0, 4, {}),
      // 3 in a row within the hour: still failing.
      ...every(10, 3, { ok: true }),
      // A failure resets the successes; 2 more and the hour passes: not 3 in a row yet.
      ...every(59, 1, {}),
      ...every(60, 2, { ok: true }),
      ...every(70, 1, { ok: true }),
    ];
    expect(await noticesFor("hyst", attempts)).toEqual([
      { type: "webhook.failing", at: 3 * MINUTE + 10 },
      { type: "webhook.recovered", at: 70 * MINUTE + 10 },
    ]);
  });

  it("a receiver failing 4 in a row then succeeding 3 in a row, over and over, gets at most one pair an hour", async () => {
    const attempts = Array.from({ length: 7 * 60 }, (_, i): Attempt => ({ at: i * MINUTE, ok: i % 7 >= 4 }));
    const notices = await noticesFor("cycle", attempts);
    const failings = notices.filter((n) => n.type === "webhook.failing").map((n) => n.at);
    expect(failings.length).toBeGreaterThanOrEqual(6);
    expect(failings.length).toBeLessThanOrEqual(7);
    for (let i = 1; i < failings.length; i++) expect(failings[i]! - failings[i - 1]!).toBeGreaterThanOrEqual(60 * MINUTE);
    expect(notices.map((n) => n.type)).toEqual(notices.map((_, i) => (i % 2 === 0 ? "webhook.failing" : "webhook.recovered")));
  });

  it("deliveries of notices about other registrations neither start, extend nor end the run", async () => {
    const notices = ["webhook.failing", "webhook.recovered", "webhook.disabled"];
    expect(
      await noticesFor(
        "nstart",
        Array.from({ length: 12 }, (_, i) => ({ at: i * MINUTE, type: notices[i % 3] })),
      ),
    ).toEqual([]);
    const attempts = [
      ...every(0, 3, {}),
      ...every(3, 6, { type: "webhook.failing", ok: true }),
      ...every(9, 1, {}),
      ...every(70, 5, { type: "webhook.recovered", ok: true }),
      ...every(80, 2, { ok: true }),
    ];
    expect(await noticesFor("nend", attempts)).toEqual([{ type: "webhook.failing", at: 9 * MINUTE + 10 }]);
  });

  it("an explicit refusal (a 4xx or 5xx with webhook-delivery: abort-message) is not a failure", async () => {
    expect(await noticesFor("abort", every(0, 10, { status: 422, control: "abort-message" }))).toEqual([]);
    const attempts = [...every(0, 3, {}), ...every(3, 2, { status: 500, control: "abort-message" }), ...every(5, 1, {})];
    expect(await noticesFor("abortmix", attempts)).toEqual([{ type: "webhook.failing", at: 5 * MINUTE + 10 }]);
  });
});
