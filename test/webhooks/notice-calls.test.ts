/**
 * The courier's notices to its hub (docs/reference.md § "Failing and recovered notices"), one
 * call at a time: a notice owed while a call is under way — `webhook.recovered` owed while
 * the 4th failure's `webhook.failing` is still being sent — is sent as soon as that call
 * returns, not at the courier's next alarm (which may be an hour away once it is idle).
 */
import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { FailureReport } from "../../src/webhooks/courier/failure-report";
import type { Outcome } from "../../src/webhooks/courier/queue";
import type { WebhookCourier } from "../../src/webhooks/courier/webhook-courier";
import type { ObjectCalls } from "../../src/webhooks/platform/object-calls";
import { courierFor, type StreakNotice } from "../../src/webhooks/rpc";
import { courierConfig, ownStorage } from "../support/webhooks/harness";

type Hubs = ObjectCalls<ReturnType<Env["SCHOOL_HUB"]["get"]>>;

describe("notices owed while a call to the hub is under way", () => {
  it("webhook.recovered, owed during webhook.failing's call, is sent when that call returns", async () => {
    const calls: { notices: StreakNotice[]; answer: () => void }[] = [];
    // The hub as the courier calls it: each reportStreak answers when the test says.
    const hubs = {
      call: (_id: string, fn: (hub: { reportStreak(n: StreakNotice[]): Promise<void> }) => Promise<void>) =>
        fn({ reportStreak: (notices) => new Promise<void>((answer) => calls.push({ notices, answer })) }),
    } as unknown as Hubs;
    const config = courierConfig("sch_notice_calls", "wh_notice_calls", { url: "https://notice-calls.example.com/in" });
    const outcome = (n: number, status: number): Outcome => ({
      row: { id: n, event_id: `evt_${n}`, event_type: "course.updated", trigger: "event", attempts: 0, requested: 0, body: "{}" },
      url: config.url,
      sentAt: 1_000 * n,
      finishedAt: 1_000 * n + 10,
      durationMs: 10,
      status,
      error: status === 500 ? "HTTP 500" : null,
      retryAfter: null,
      responseBody: null,
    });

    await runInDurableObject(courierFor(env, "wh_notice_calls"), async (courier) => {
      // The storage the courier itself runs on: behind production's limits.
      const storage = ownStorage(courier as unknown as WebhookCourier);
      const report = new FailureReport(storage.kv, hubs, 86_400_000, () => {});
      for (const n of [1, 2, 3, 4]) {
        report.recorded(outcome(n, 500), config);
        report.sendNew("hub");
      }
      expect(calls.map((c) => c.notices.map((n) => n.type))).toEqual([["webhook.failing"]]);

      // 3 successes in a row, the last an hour after, while webhook.failing's call is under way: webhook.recovered is owed.
      for (const n of [5, 6, 3_700]) {
        report.recorded(outcome(n, 204), config);
        report.sendNew("hub");
      }
      expect(calls).toHaveLength(1);

      calls[0]!.answer();
      await new Promise((r) => setTimeout(r, 0));
      expect(calls.map((c) => c.notices.map((n) => n.type))).toEqual([["webhook.failing"], ["webhook.recovered"]]);
      calls[1]!.answer();
      await new Promise((r) => setTimeout(r, 0));
      expect(storage.kv.get("notices")).toBeUndefined();
      expect(calls).toHaveLength(2);
    });
  });
});
