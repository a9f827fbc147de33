/**
 * Resets of real Durable Objects, proven, and the quiet before asserting absence.
 * `resetObject` resets an object the way the runtime does (`state.abort()` inside
 * `runInDurableObject`) and proves it: the error thrown is workerd's abort (the reason as its
 * message, `durableObjectReset: true`) and the next call finds another instance (its
 * constructor ran again). `settleCourier` drives what a courier would ever send by itself.
 */
import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { expect } from "vitest";
import { hubFor } from "../../../src/events/hub-client";
import { courierFor } from "../../../src/webhooks/rpc";
import { eventually, inCourier, inHub } from "./harness";

/** What shows a reset happened: the abort as workerd reported it, and two distinct instances. */
export interface ResetProof {
  /** The error the reset threw at the test: `message` is the reason, `durableObjectReset` true. */
  error: Error & { durableObjectReset?: boolean };
  /** The instance the reset hit, and the one the next call found (never the same object). */
  before: object;
  after: object;
}

let resets = 0;

/**
 * Resets the object behind `stub` the way the runtime does (`state.abort()`) and asserts that
 * it happened: the call fails with workerd's abort (the reason as its message,
 * `durableObjectReset: true`). With `loseAlarm`, its alarm is deleted first, as `wrangler dev`
 * loses every alarm at a restart (workers-sdk#7781). Starts no new instance: a restart test
 * must see only what the object does by itself.
 *
 * @returns the error, the instance the reset hit, and the alarm it had set (ms) or `null`.
 */
export async function abortObject(
  stub: DurableObjectStub,
  opts: { loseAlarm?: boolean } = {},
): Promise<{ error: ResetProof["error"]; before: object; alarm: number | null }> {
  const reason = `reset by the test #${++resets}`;
  let before: object | undefined;
  let alarm: number | null = null;
  const outcome = await runInDurableObject(stub, async (instance, state) => {
    before = instance;
    alarm = await state.storage.getAlarm();
    if (opts.loseAlarm) await state.storage.deleteAlarm();
    state.abort(reason);
  }).then(
    () => null,
    (err: unknown) => err,
  );
  expect(outcome, "the reset threw the abort").toBeInstanceOf(Error);
  const error = outcome as ResetProof["error"];
  expect(error.message).toBe(reason);
  expect(error.durableObjectReset).toBe(true);
  expect(before).toBeDefined();
  return { error, before: before!, alarm };
}

/**
 * Resets the object behind `stub` (a factory: a stub that saw a reset stays broken) and
 * proves it, failing the test otherwise: the abort (`abortObject`), then another instance on
 * the next call (which starts it).
 *
 * @returns the proof (see `ResetProof`).
 */
async function resetObject(stub: () => DurableObjectStub): Promise<ResetProof> {
  const { error, before } = await abortObject(stub());
  const after = await runInDurableObject(stub(), (instance) => instance as object);
  expect(after, "a new instance after the reset").not.toBe(before);
  return { error, before, after };
}

/** Resets school `schoolId`'s hub (see `resetObject`). */
export const resetHub = (schoolId: string): Promise<ResetProof> => resetObject(() => hubFor(env, schoolId) as unknown as DurableObjectStub);

/** Resets registration `webhookId`'s courier (see `resetObject`). */
export const resetCourier = (webhookId: string): Promise<ResetProof> => resetObject(() => courierFor(env, webhookId) as unknown as DurableObjectStub);

/**
 * Drives everything that could still send to registration `webhookId` by itself: the hub's
 * alarm (its hand-overs), then the courier's queue made due now, its alarm run, its requests
 * ended (`whenIdle`). Assert "nothing more was sent" after this, never after a sleep.
 */
export async function settleCourier(schoolId: string, webhookId: string): Promise<void> {
  await runDurableObjectAlarm(hubFor(env, schoolId));
  await inHub(schoolId, (hub) => hub.whenIdle());
  await inCourier(webhookId, (_c, state) => {
    state.storage.sql.exec(`UPDATE queue SET next_attempt_at = ?`, Date.now());
  });
  await runDurableObjectAlarm(courierFor(env, webhookId));
  // A request the alarm started to a receiver that never answers keeps it busy: fail then.
  let idle = false;
  void inCourier(webhookId, (courier) => courier.whenIdle()).then(() => (idle = true));
  await eventually(() => idle, `courier ${webhookId} to be idle (it is sending)`);
}
