/**
 * Memory after commit (docs/architecture.md § Invariants): a webhook object's in-memory
 * mirror of its storage — a courier's config, cursor, closed flag and failure streak, the
 * hub's audiences —
 * changes only once the storage step it mirrors has committed. Each test makes that step
 * throw midway (a statement of it refused) and finds memory equal to storage.
 */
import { env } from "cloudflare:test";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { hubFor } from "../../src/events/hub-client";
import { audiencesOf } from "../../src/webhooks/hub/event-log";
import { readWebhooks } from "../../src/webhooks/hub/registrations";
import type { CourierConfig, HandedEvent } from "../../src/webhooks/rpc";
import { courseEvent, drain, inCourier, inHub, newSchool, ownStorage, register } from "../support/webhooks/harness";
import { Receivers } from "../support/webhooks/receivers";

const rx = new Receivers();
beforeAll(() => {
  rx.install();
});
afterAll(() => rx.restore());

/** The fields of an object this test reads: the mirror and the SQL it runs its steps on. */
type Mirrors = {
  sql: SqlStorage;
  config: CourierConfig | null;
  cursor: number;
  closed: boolean;
  audiences: unknown;
  failures: { failingSince: number | null };
};

/** Makes `object`'s statements matching `pattern` throw, as a refused statement would. */
function refuse(object: unknown, pattern: RegExp): void {
  const o = object as Mirrors;
  const sql = o.sql;
  o.sql = new Proxy(sql, {
    get(target, prop) {
      if (prop === "exec") {
        return (query: string, ...bindings: unknown[]) => {
          if (pattern.test(query)) throw new Error("SQLITE_TOOBIG (refused by the test)");
          return target.exec(query, ...bindings);
        };
      }
      const value = Reflect.get(target, prop, target);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}

/** Makes `object`'s key-value `delete` of `key` throw, as a refused write would (the step's other writes go through). */
function refuseDelete(object: unknown, key: string): void {
  const o = object as { storage: DurableObjectStorage };
  const storage = o.storage;
  const kv = new Proxy(storage.kv, {
    get(target, prop) {
      if (prop === "delete") {
        return (k: string) => {
          if (k === key) throw new Error("refused by the test");
          return target.delete(k);
        };
      }
      const value = Reflect.get(target, prop, target);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
  o.storage = new Proxy(storage, {
    get(target, prop) {
      if (prop === "kv") return kv;
      const value = Reflect.get(target, prop, target);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}

/** A school with one registration whose courier holds its config (one event delivered). */
async function openCourier(label: string) {
  const { schoolId, key } = await newSchool(label);
  const hook = await register(key, `https://${label}.example.com/in`);
  await hubFor(env, schoolId).publish([courseEvent(schoolId)]);
  await drain(schoolId);
  return { schoolId, key, id: hook.id };
}

/** The courier's mirrors and what its storage holds, side by side. */
async function courierState(id: string) {
  return inCourier(id, (courier, state) => {
    const o = courier as unknown as Mirrors;
    const kv = state.storage.kv;
    return {
      memory: { config: o.config, cursor: o.cursor, closed: o.closed, failingSince: o.failures.failingSince },
      storage: {
        config: kv.get("config") ?? null,
        cursor: Number(kv.get("cursor") ?? 0),
        closed: kv.get("closed") === true,
        failingSince: kv.get("failingSince") ?? null,
      },
    };
  });
}

describe("a step that throws leaves memory as storage", () => {
  it("a courier's disable (its queue's skip marked in the same step)", async () => {
    const { id } = await openCourier("mem-disable");
    const error = await inCourier(id, (courier, state) => {
      const held = state.storage.kv.get("config") as CourierConfig;
      refuse(courier, /SELECT MAX\(id\) AS id FROM queue/);
      try {
        courier.configure({ ...held, version: held.version + 1, enabled: false, disables: held.disables + 1 });
        return null;
      } catch (err) {
        return String(err);
      }
    });
    expect(error).toMatch(/refused by the test/);
    const { memory, storage } = await courierState(id);
    expect(storage.config).toMatchObject({ enabled: true });
    expect(memory).toEqual(storage);
  });

  it("a courier's hand-over (config and cursor)", async () => {
    const { schoolId, id } = await openCourier("mem-handover");
    const event = courseEvent(schoolId);
    const error = await inCourier(id, (courier, state) => {
      const held = state.storage.kv.get("config") as CourierConfig;
      const cursor = Number(state.storage.kv.get("cursor"));
      const handed: HandedEvent = { seq: cursor + 1, id: event.id, type: event.type, body: JSON.stringify(event), acceptedAt: Date.now(), skipped: false };
      refuse(courier, /INSERT INTO queue|INSERT OR IGNORE INTO queue/);
      try {
        courier.deliver({ config: { ...held, version: held.version + 1, url: "https://elsewhere.example.com/in" }, events: [handed], upTo: cursor + 1 });
        return null;
      } catch (err) {
        return String(err);
      }
    });
    expect(error).toMatch(/refused by the test/);
    const { memory, storage } = await courierState(id);
    expect(storage.config).toMatchObject({ url: "https://mem-handover.example.com/in" });
    expect(memory).toEqual(storage);
  });

  it("a courier's close (its failure streak dropped in the same step)", async () => {
    const { schoolId, id } = await openCourier("mem-close");
    rx.on("mem-close.example.com", 500);
    await hubFor(env, schoolId).publish([courseEvent(schoolId)]);
    await drain(schoolId);
    const error = await inCourier(id, (courier) => {
      // The step's last write: the closed mark and the streak's drop come before it.
      refuseDelete(courier, "recover");
      try {
        courier.close();
        return null;
      } catch (err) {
        return String(err);
      }
    });
    expect(error).toMatch(/refused by the test/);
    const { memory, storage } = await courierState(id);
    expect(storage.closed).toBe(false);
    expect(storage.failingSince).toEqual(expect.any(Number));
    expect(memory).toEqual(storage);
  });

  it("the hub's audiences when an auto-disable's step throws", async () => {
    const { schoolId, id } = await openCourier("mem-hub");
    const error = await inHub(schoolId, async (hub) => {
      refuse(hub, /INSERT OR IGNORE INTO events/);
      return hub.reportFailing({ webhookId: id, version: 1_000, reason: "gone", failingSince: null }).then(
        () => null,
        (err: unknown) => String(err),
      );
    });
    expect(error).toMatch(/refused by the test/);
    const [memory, storage] = await inHub(schoolId, (hub) => [(hub as unknown as Mirrors).audiences, audiencesOf(readWebhooks(ownStorage(hub).sql))]);
    expect(storage).toMatchObject([{ id, enabled: true }]);
    // Loaded by the publish of `openCourier`: still the registration enabled, as in storage.
    expect(memory).toEqual(storage);
  });
});
