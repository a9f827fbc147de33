/**
 * `signatureScheme: "v1a"` (docs/reference.md § "Event delivery", § "Secret rotation"): ed25519
 * signatures made by WebCrypto in the courier, verified here by an independent implementation —
 * node:crypto's `verify` (workerd's `nodejs_compat`), with the public key rebuilt from the
 * published `whpk_` bytes as an SPKI DER — for the key of the creation and for a rotated pair.
 * The private key appears in no answer (POST, GET, list, rotate, idempotent replay) and no log
 * line; `signatureScheme` is chosen at creation only; a DELETE or a rotation while a signature
 * is being made keeps its promise.
 */

import { runDurableObjectAlarm } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { createPublicKey, verify } from "node:crypto";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { hubFor } from "../../src/events/hub-client";
import { migrate as migrateHub } from "../../src/webhooks/hub/storage";
import { courierFor } from "../../src/webhooks/rpc";
import { call, callJson } from "../support/helpers";
import { courseEvent, drain, eventually, inCourier, inHub, newSchool, ownStorage, schemaAsOf } from "../support/webhooks/harness";
import { type Received, SimulatedPlatform } from "../support/webhooks/platform-sim";

const rx = new SimulatedPlatform();
beforeAll(() => {
  rx.install();
});
afterAll(() => rx.restore());
afterEach(() => {
  vi.restoreAllMocks();
});

/** The DER prefix of an ed25519 SubjectPublicKeyInfo (RFC 8410): the 32 raw bytes follow. */
const ED25519_SPKI_PREFIX = Buffer.from("302a300506032b6570032100", "hex");

/** The signatures of a delivery's `webhook-signature`, in order (each `v1a,` + base64 of 64 bytes). */
function signaturesOf(req: Received): string[] {
  const all = req.headers["webhook-signature"]!.split(" ");
  for (const s of all) expect(s).toMatch(/^v1a,[A-Za-z0-9+/]{86}==$/);
  return all.map((s) => s.slice("v1a,".length));
}

/** Whether `signature` (base64) verifies `req` under `publicKey` (`whpk_…`), by node:crypto. */
function verifies(publicKey: string, req: Received, signature: string, body = req.body): boolean {
  const raw = Buffer.from(publicKey.slice("whpk_".length), "base64");
  expect(raw).toHaveLength(32);
  const key = createPublicKey({ key: Buffer.concat([ED25519_SPKI_PREFIX, raw]), format: "der", type: "spki" });
  const signed = `${req.headers["webhook-id"]}.${req.headers["webhook-timestamp"]}.${body}`;
  return verify(null, Buffer.from(signed), key, Buffer.from(signature, "base64"));
}

/** Creates a `v1a` registration through POST /v3/webhooks; returns the 201's result. */
async function registerV1a(key: string, url: string, extra: Record<string, unknown> = {}) {
  const { status, body } = await callJson("/v3/webhooks", { method: "POST", key, json: { url, signatureScheme: "v1a", ...extra } });
  expect(status, JSON.stringify(body)).toBe(201);
  return body.result as { id: string; publicKey: string; signatureScheme: string } & Record<string, unknown>;
}

/** The private keys the hub holds for registration `id` (current, previous). */
async function privateKeys(schoolId: string, id: string): Promise<string[]> {
  const row = await inHub(schoolId, (_h, state) =>
    state.storage.sql.exec<{ secret: string; previous_secret: string | null }>(`SELECT secret, previous_secret FROM webhooks WHERE id = ?`, id).one(),
  );
  return [row.secret, row.previous_secret].filter((k): k is string => k !== null);
}

describe("a v1a registration", () => {
  it("answers publicKey and no secret; GET and the list show the scheme and the key; a v1 one shows v1 and null", async () => {
    const { key } = await newSchool("v1a");
    const hook = await registerV1a(key, "https://v1a-create.example.com/in");
    expect(hook.signatureScheme).toBe("v1a");
    expect(hook.publicKey).toMatch(/^whpk_[A-Za-z0-9+/]{43}=$/);
    expect(hook).not.toHaveProperty("secret");
    const got = await callJson(`/v3/webhooks/${hook.id}`, { key });
    expect(got.body.result).toMatchObject({ signatureScheme: "v1a", publicKey: hook.publicKey, payload: "full" });

    const v1 = await callJson("/v3/webhooks", { method: "POST", key, json: { url: "https://v1-create.example.com/in" } });
    expect(v1.body.result).toMatchObject({ signatureScheme: "v1", publicKey: null, secret: expect.stringMatching(/^whsec_/) });
    const list = await callJson("/v3/webhooks", { key });
    expect(list.body.result.map((w: { signatureScheme: string; publicKey: string | null }) => [w.signatureScheme, w.publicKey])).toEqual([
      ["v1a", hook.publicKey],
      ["v1", null],
    ]);
  });

  it("deliveries carry webhook-signature v1a,<ed25519> over {id}.{timestamp}.{body}, verified with the published key", async () => {
    const { schoolId, key } = await newSchool("v1a");
    const host = "v1a-sign.example.com";
    const hook = await registerV1a(key, `https://${host}/in`);
    const other = await registerV1a(key, "https://v1a-other.example.com/in");
    const events = [courseEvent(schoolId, "course.created", 1), courseEvent(schoolId, "course.updated", 2)];
    await hubFor(env, schoolId).publish(events);
    await drain(schoolId);
    const got = rx.to(host);
    expect(got.map((r) => r.event.id).sort()).toEqual(events.map((e) => e.id).sort());
    for (const req of got) {
      const [signature, ...more] = signaturesOf(req);
      expect(more).toEqual([]);
      expect(req.headers["webhook-id"]).toBe(req.event.id);
      // The instant of the attempt's signature, made just before it was sent (seconds).
      const signedS = Number(req.headers["webhook-timestamp"]);
      expect(Math.floor(req.sentAt / 1000) - signedS).toBeGreaterThanOrEqual(0);
      expect(Math.floor(req.sentAt / 1000) - signedS).toBeLessThanOrEqual(1);
      expect(verifies(hook.publicKey, req, signature!)).toBe(true);
      // Another registration's key, a tampered body: no.
      expect(verifies(other.publicKey, req, signature!)).toBe(false);
      expect(verifies(hook.publicKey, req, signature!, req.body.replace("Cours", "Kurs"))).toBe(false);
    }
  });

  it("a rotation answers a new publicKey; during the grace each delivery carries both signatures, after it only the new one", async () => {
    const { schoolId, key } = await newSchool("v1arot");
    const host = "v1a-rot.example.com";
    const hook = await registerV1a(key, `https://${host}/in`);
    const rotated = await callJson(`/v3/webhooks/${hook.id}/secret/rotate`, { method: "POST", key, json: { graceSeconds: 3600 } });
    expect(rotated.status).toBe(200);
    expect(rotated.body.result).toEqual({
      id: hook.id,
      publicKey: expect.stringMatching(/^whpk_[A-Za-z0-9+/]{43}=$/),
      previousSecretExpiresAt: expect.any(String),
    });
    const fresh = rotated.body.result.publicKey as string;
    expect(fresh).not.toBe(hook.publicKey);
    expect((await callJson(`/v3/webhooks/${hook.id}`, { key })).body.result.publicKey).toBe(fresh);

    await hubFor(env, schoolId).publish([courseEvent(schoolId)]);
    await drain(schoolId);
    let req = rx.to(host).at(-1)!;
    const [current, previous, ...none] = signaturesOf(req);
    expect(none).toEqual([]);
    expect([verifies(fresh, req, current!), verifies(hook.publicKey, req, previous!)]).toEqual([true, true]);
    expect([verifies(hook.publicKey, req, current!), verifies(fresh, req, previous!)]).toEqual([false, false]);

    // The grace ends (driven: its expiry moved to the past, as a new version of the
    // registration that the next hand-over gives the courier).
    await inHub(schoolId, (_h, state) => state.storage.sql.exec(`UPDATE webhooks SET previous_expires_at = ?, version = version + 1`, Date.now() - 1));
    await hubFor(env, schoolId).publish([courseEvent(schoolId)]);
    await drain(schoolId);
    req = rx.to(host).at(-1)!;
    const only = signaturesOf(req);
    expect(only).toHaveLength(1);
    expect(verifies(fresh, req, only[0]!)).toBe(true);
    expect(verifies(hook.publicKey, req, only[0]!)).toBe(false);
  });

  it("the private key is in no answer (POST, idempotent replay, GET, list, rotate) and no log line; a DELETE erases it", async () => {
    const lines: string[] = [];
    for (const level of ["log", "info", "warn", "error", "debug"] as const) {
      vi.spyOn(console, level).mockImplementation((...args: unknown[]) => {
        lines.push(args.map((a) => (typeof a === "string" ? a : JSON.stringify(a))).join(" "));
      });
    }
    const { schoolId, key } = await newSchool("v1apriv");
    const host = "v1a-priv.example.com";
    const answers: string[] = [];
    const keep = async (r: Promise<{ status: number; body: unknown; res: Response }>) => {
      const { status, body, res } = await r;
      answers.push(JSON.stringify(body));
      return { status, body: body as any, res };
    };
    const json = { url: `https://${host}/in`, signatureScheme: "v1a" };
    const first = await keep(callJson("/v3/webhooks", { method: "POST", key, json, headers: { "Idempotency-Key": "v1a-once" } }));
    const replay = await keep(callJson("/v3/webhooks", { method: "POST", key, json, headers: { "Idempotency-Key": "v1a-once" } }));
    expect([first.status, replay.status, replay.res.headers.get("idempotent-replayed")]).toEqual([201, 201, "true"]);
    expect(replay.body).toEqual(first.body);
    const id = first.body.result.id as string;
    await keep(callJson(`/v3/webhooks/${id}`, { key }));
    await keep(callJson("/v3/webhooks", { key }));
    const rotated = await keep(callJson(`/v3/webhooks/${id}/secret/rotate`, { method: "POST", key, json: { graceSeconds: 3600 } }));
    expect(rotated.status).toBe(200);
    await hubFor(env, schoolId).publish([courseEvent(schoolId)]);
    await drain(schoolId);
    const signatures = signaturesOf(rx.to(host).at(-1)!);
    expect(signatures).toHaveLength(2);

    const keys = await privateKeys(schoolId, id);
    expect(keys).toHaveLength(2);
    for (const k of keys) expect(k).toMatch(/^whsk_[A-Za-z0-9+/]+=*$/);
    // Where a careless logger would copy them: the request's path (its line keeps it).
    for (const text of [...keys, ...signatures.map((sig) => `v1a,${sig}`)]) expect((await call(`/v3/webhooks/${text}`, { key })).status).toBe(404);
    const forbidden = [...keys, ...signatures].flatMap((k) => [k, k.slice(-16)]);
    expect(lines.some((l) => l.startsWith('{"kind":"delivery_attempt"'))).toBe(true);
    for (const text of [...answers, ...lines]) {
      expect(text).not.toContain("whsk_");
      for (const secret of forbidden) expect(text.includes(secret), `${secret.slice(0, 12)}… in ${text.slice(0, 200)}`).toBe(false);
    }

    expect((await callJson(`/v3/webhooks/${id}`, { method: "DELETE", key })).status).toBe(200);
    expect(
      await inHub(schoolId, (_h, state) => state.storage.sql.exec(`SELECT secret, previous_secret, public_key FROM webhooks WHERE id = ?`, id).one()),
    ).toEqual({
      secret: "",
      previous_secret: null,
      public_key: null,
    });
    const kept = await inCourier(id, (_c, state) => JSON.stringify([...state.storage.kv.list()]));
    expect(kept).not.toContain("whsk_");
  });

  it("a registration stored before the scheme and payload columns reads as v1, full, no publicKey once migrated", async () => {
    const { schoolId, key } = await newSchool("v1amig");
    await inHub(schoolId, (hub) => {
      const sql = ownStorage(hub).sql;
      schemaAsOf(sql, 7, migrateHub);
      sql.exec(
        "INSERT INTO webhooks (id, url, events, headers, secret, created_at, updated_at) VALUES ('wh_before_v1a', 'https://old.example.com/in', '[\"*\"]', '{}', 'whsec_x', 1, 1)",
      );
      migrateHub(sql);
    });
    const { body } = await callJson("/v3/webhooks/wh_before_v1a", { key });
    expect(body.result).toMatchObject({ signatureScheme: "v1", publicKey: null, payload: "full" });
  });

  it("signatureScheme is chosen at creation: PATCH with it is 400 VALIDATION_ERROR, a value outside v1, v1a is 400", async () => {
    const { key } = await newSchool("v1apatch");
    const hook = await registerV1a(key, "https://v1a-patch.example.com/in");
    for (const signatureScheme of ["v1", "v1a", "v2", null]) {
      const res = await callJson(`/v3/webhooks/${hook.id}`, { method: "PATCH", key, json: { signatureScheme } });
      expect([res.status, res.body.code]).toEqual([400, "VALIDATION_ERROR"]);
      expect(res.body.details).toEqual([{ path: "signatureScheme", message: "is set at creation only: create a new registration to change it" }]);
    }
    expect((await callJson(`/v3/webhooks/${hook.id}`, { key })).body.result.signatureScheme).toBe("v1a");
    for (const signatureScheme of ["v2", "V1A", "", 1, null]) {
      const res = await callJson("/v3/webhooks", { method: "POST", key, json: { url: "https://v1a-bad.example.com/in", signatureScheme } });
      expect([res.status, res.body.code]).toEqual([400, "VALIDATION_ERROR"]);
      expect(res.body.details.map((d: { path: string }) => d.path)).toEqual(["signatureScheme"]);
    }
  });
});

describe("while a v1a signature is being made", () => {
  /**
   * Holds every call of WebCrypto's `sign` until released (the first `holding` calls only):
   * the courier has found its delivery due and waits for the signature.
   */
  function holdSigning(holding = 1) {
    const sign = crypto.subtle.sign.bind(crypto.subtle);
    const held: (() => void)[] = [];
    const spy = vi.spyOn(crypto.subtle, "sign").mockImplementation(async (...args: Parameters<SubtleCrypto["sign"]>) => {
      if (spy.mock.calls.length <= holding) await new Promise<void>((resolve) => held.push(resolve));
      return sign(...args);
    });
    return { held, spy };
  }

  /** Releases the held signatures from inside courier `id` (where they were asked for: what follows runs there). */
  const release = (id: string, held: (() => void)[]) =>
    inCourier(id, () => {
      for (const go of held) go();
    });

  it("a DELETE answered meanwhile: nothing is sent", async () => {
    const { schoolId, key } = await newSchool("v1adel");
    const host = "v1a-del.example.com";
    const hook = await registerV1a(key, `https://${host}/in`);
    const { held, spy } = holdSigning();
    await hubFor(env, schoolId).publish([courseEvent(schoolId)]);
    await runDurableObjectAlarm(hubFor(env, schoolId));
    await eventually(() => held.length === 1, "the courier to sign");
    expect((await callJson(`/v3/webhooks/${hook.id}`, { method: "DELETE", key })).status).toBe(200);
    await release(hook.id, held);
    await Promise.allSettled(spy.mock.results.map((r) => r.value));
    await runDurableObjectAlarm(courierFor(env, hook.id));
    await inCourier(hook.id, (c) => c.whenIdle());
    expect(rx.to(host)).toEqual([]);
  });

  it("a resend of an earlier event of its course answered meanwhile: that one goes first, the signed one waits for it to end", async () => {
    const { schoolId, key } = await newSchool("v1aord");
    const host = "v1a-ord.example.com";
    const hook = await registerV1a(key, `https://${host}/in`);
    expect(hook.ordering).toBe("course");
    const hub = hubFor(env, schoolId);
    const earlier = courseEvent(schoolId, "course.updated", 7);
    const later = courseEvent(schoolId, "course.updated", 7);
    await hub.publish([earlier]);
    await drain(schoolId);
    expect(rx.to(host).map((r) => r.event.id)).toEqual([earlier.id]);

    // The earlier event's resend hangs at the receiver until `answer`.
    let answer = () => {};
    const answered = new Promise<void>((resolve) => (answer = resolve));
    let resends = 0;
    rx.on(host, async (req) => {
      if (req.event.id === earlier.id && ++resends === 1) await answered;
      return 204;
    });
    const { held, spy } = holdSigning();
    await hub.publish([later]);
    await runDurableObjectAlarm(hub);
    await eventually(() => held.length === 1, "the courier to sign the later event");
    const resent = await callJson(`/v3/webhooks/${hook.id}/deliveries/${earlier.id}/resend`, { method: "POST", key });
    expect(resent.status).toBe(202);
    await eventually(() => rx.to(host).length === 2, "the resend to reach the receiver");
    await release(hook.id, held);
    await Promise.allSettled(spy.mock.results.map((r) => r.value));
    await runDurableObjectAlarm(courierFor(env, hook.id));
    // The earlier event's attempt has not ended: the later one, signed meanwhile, has not started.
    expect(rx.to(host).map((r) => r.event.id)).toEqual([earlier.id, earlier.id]);

    answer();
    await drain(schoolId);
    expect(rx.to(host).map((r) => r.event.id)).toEqual([earlier.id, earlier.id, later.id]);
  });

  it("a rotation with graceSeconds 0 answered meanwhile: the delivery is signed again, with the new key only", async () => {
    const { schoolId, key } = await newSchool("v1arot0");
    const host = "v1a-rot0.example.com";
    const hook = await registerV1a(key, `https://${host}/in`);
    const { held } = holdSigning();
    await hubFor(env, schoolId).publish([courseEvent(schoolId)]);
    await runDurableObjectAlarm(hubFor(env, schoolId));
    await eventually(() => held.length === 1, "the courier to sign");
    const rotated = await callJson(`/v3/webhooks/${hook.id}/secret/rotate`, { method: "POST", key, json: { graceSeconds: 0 } });
    expect(rotated.body.result.previousSecretExpiresAt).toBeNull();
    await release(hook.id, held);
    await drain(schoolId);
    const got = rx.to(host);
    expect(got).toHaveLength(1);
    const signatures = signaturesOf(got[0]!);
    expect(signatures).toHaveLength(1);
    expect(verifies(rotated.body.result.publicKey, got[0]!, signatures[0]!)).toBe(true);
  });
});
