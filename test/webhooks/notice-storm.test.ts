/**
 * Notices cannot amplify (docs/reference.md § "Failing and recovered notices", docs/architecture.md
 * § "Who carries each kind of work"): every receiver of a school fails 4 requests in 5 (a
 * deterministic pattern), course events flow for simulated hours on the virtual clock, and
 * each object's alarm is run when due. The notices about each registration stay within one
 * pair in any hour, the school's within that pair times its registrations, and no notice is
 * addressed to a registration that is failing when it is accepted.
 */
import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it } from "vitest";
import { hubFor } from "../../src/events/hub-client";
import { courierStub, courseEvent, hubStub, inHub, newSchool, register } from "../support/webhooks/harness";
import { SimulatedPlatform } from "../support/webhooks/platform-sim";

const HOUR = 3_600_000;
/** The contract's bound: notices about one registration in any hour (one `webhook.failing`, one `webhook.recovered`). */
const PER_REGISTRATION_PER_HOUR = 2;
/** Simulated hours of course events. */
const HOURS = 3;
/** A course event (of a course of its own) every this long (ms). */
const EVENT_EVERY_MS = 30 * 60_000;
/** The objects' alarms are run when due, checked this often (ms); timers fire at their instant. */
const TICK_MS = 10 * 60_000;

let sim: SimulatedPlatform | undefined;
afterEach(() => {
  sim?.restore();
  sim = undefined;
});

type Notice = { seq: number; type: string; about: string; at: number };

/** The notices in the hub's log, in log order, and whom each was addressed to. */
async function noticesOf(schoolId: string): Promise<{ notices: Notice[]; targets: { webhookId: string; seq: number }[] }> {
  return inHub(schoolId, (_h, state) => {
    const sql = state.storage.sql;
    const notices = sql
      .exec<{ seq: number; type: string; body: string }>(
        `SELECT seq, type, body FROM events WHERE type IN ('webhook.failing', 'webhook.recovered') ORDER BY seq`,
      )
      .toArray()
      .map((r) => {
        const body = JSON.parse(r.body) as { createdAt: string; data: { webhookId: string } };
        return { seq: r.seq, type: r.type, about: body.data.webhookId, at: Date.parse(body.createdAt) };
      });
    const targets = sql
      .exec<{ webhook_id: string; seq: number }>(
        `SELECT t.webhook_id, t.seq FROM targets t JOIN events e ON e.seq = t.seq WHERE e.type IN ('webhook.failing', 'webhook.recovered')`,
      )
      .toArray()
      .map((r) => ({ webhookId: r.webhook_id, seq: r.seq }));
    return { notices, targets };
  });
}

/** The most of `instants` (ms) within any window of one hour. */
function mostInAnHour(instants: number[]): number {
  const sorted = [...instants].sort((a, b) => a - b);
  let most = 0;
  for (let i = 0, j = 0; i < sorted.length; i++) {
    while (sorted[i]! - sorted[j]! >= HOUR) j += 1;
    most = Math.max(most, i - j + 1);
  }
  return most;
}

/**
 * A school with `n` registrations (`events: ["*"]`) whose receivers fail 4 requests in 5,
 * HOURS of course events, the alarms run when due. Once the receivers have seen more notices
 * about one registration than the bound allows for the whole run (the amplification a broken
 * rule makes would not end), every receiver hangs from then on and the run stops: the log shows it.
 */
async function storm(label: string, n: number) {
  sim = SimulatedPlatform.virtual().install();
  const platform = sim;
  platform.delay = [1, 1];
  const { schoolId, key } = await newSchool(label);
  /** Notice event ids the receivers saw, by the registration each is about. */
  const seen = new Map<string, Set<string>>();
  let stopped = false;
  const ids: string[] = [];
  for (let i = 0; i < n; i++) {
    const host = `${label}-${i}.example.com`;
    let requests = 0;
    platform.on(host, (req) => {
      if (req.event.type === "webhook.failing" || req.event.type === "webhook.recovered") {
        const about = String(req.event.data.webhookId);
        const ids = seen.get(about) ?? new Set<string>();
        seen.set(about, ids.add(req.event.id));
        if (ids.size > PER_REGISTRATION_PER_HOUR * HOURS) stopped = true;
      }
      if (stopped) return "hang";
      requests += 1;
      return requests % 5 === 0 ? 200 : 500;
    });
    ids.push((await register(key, `https://${host}/in`)).id);
  }
  const stubs = [hubStub(schoolId), ...ids.map(courierStub)];
  const hub = hubFor(env, schoolId);
  const end = platform.clock.now() + HOURS * HOUR;
  let course = 0;
  let nextEventAt = platform.clock.now();
  while (platform.clock.now() < end && !stopped) {
    if (platform.clock.now() >= nextEventAt) {
      await hub.publish([courseEvent(schoolId, "course.updated", course++)]);
      nextEventAt += EVENT_EVERY_MS;
    }
    await platform.advance(TICK_MS);
    for (const stub of stubs) {
      const at = await runInDurableObject(stub, (_o, state) => state.storage.getAlarm());
      if (at !== null && at <= platform.clock.now()) await runDurableObjectAlarm(stub);
    }
    await platform.advance(0);
  }
  // Attempts left hanging by a stopped run end by their timeout.
  await platform.advance(5_000);
  return { schoolId, ids, events: course, ...(await noticesOf(schoolId)) };
}

/** Asserts the bounds over a storm's notices. */
function expectBounded(run: Awaited<ReturnType<typeof storm>>, n: number): void {
  const { ids, notices, targets } = run;
  // Every registration was announced failing: the receivers' pattern makes each fail 4 in a row.
  expect(new Set(notices.filter((x) => x.type === "webhook.failing").map((x) => x.about))).toEqual(new Set(ids));
  const perRegistration = Object.fromEntries(ids.map((id) => [id, mostInAnHour(notices.filter((x) => x.about === id).map((x) => x.at))]));
  expect(Math.max(...Object.values(perRegistration)), JSON.stringify(perRegistration)).toBeLessThanOrEqual(PER_REGISTRATION_PER_HOUR);
  expect(mostInAnHour(notices.map((x) => x.at))).toBeLessThanOrEqual(PER_REGISTRATION_PER_HOUR * n);
  // Notices delivered to one registration in any hour: at most the others' pairs.
  const bySeq = new Map(notices.map((x) => [x.seq, x]));
  for (const id of ids) {
    const got = targets.filter((t) => t.webhookId === id).map((t) => bySeq.get(t.seq)!.at);
    expect(mostInAnHour(got), id).toBeLessThanOrEqual(PER_REGISTRATION_PER_HOUR * (n - 1));
  }
  // None addressed to a registration failing at that point of the log (its last notice before was webhook.failing).
  const toFailing = targets.filter((t) => {
    const last = notices.filter((x) => x.about === t.webhookId && x.seq < t.seq).at(-1);
    return last?.type === "webhook.failing";
  });
  expect(toFailing.length, `notices addressed to failing registrations (of ${targets.length})`).toBe(0);
}

describe("notices when every receiver fails 4 requests in 5", () => {
  it(`5 registrations, ${HOURS} simulated hours: at most ${PER_REGISTRATION_PER_HOUR} notices about each in any hour, none to a failing one`, async () => {
    const run = await storm("storm5", 5);
    expectBounded(run, 5);
    expect(run.events).toBe((HOURS * HOUR) / EVENT_EVERY_MS);
  });

  it(`50 registrations, ${HOURS} simulated hours: the same bounds`, { timeout: 300_000 }, async () => {
    const run = await storm("storm50", 50);
    expectBounded(run, 50);
    expect(run.events).toBe((HOURS * HOUR) / EVENT_EVERY_MS);
  });
});
