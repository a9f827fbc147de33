/**
 * `npm run demo:webhooks` — a live tour of the webhook lifecycle against `npm start`: a
 * receiver on 127.0.0.1 that verifies every signature (`standardwebhooks`); register, test,
 * course writes; a rotation verified with both secrets; an ordered retry (a course's failed
 * event holds its next one, another course's goes meanwhile); a `v1a` thin registration verified
 * with node:crypto; an outage (503s, disable, a change skipped, enable, recover: every missed
 * event arrives once); delete, then one more write. Prints what arrived and a one-line verdict.
 *
 * Options: `--base URL` (or API_BASE; default the URL this checkout's `npm start` serves, else
 * http://127.0.0.1:8787), `--key sk_…` (or API_KEY; default
 * the demo key), `--wait 3000` (ms to wait for late deliveries after the last write).
 */
import { createServer, type IncomingHttpHeaders, type IncomingMessage } from "node:http";
import type { AddressInfo } from "node:net";
import { parseArgs } from "node:util";
import { Webhook } from "standardwebhooks";
import type { CourseRecord } from "../src/courses/schemas";
import type { CreatedWebhook, DeliveryRecord, RotatedSecret, WebhookRecord } from "../src/webhooks/rpc";
import { DEMO_API_KEY } from "./dataset/build";
import { localApiBase } from "./lib/local-api";
import { verifyV1a } from "./lib/webhook-signatures";

const { values: opts } = parseArgs({
  options: {
    base: { type: "string", default: localApiBase() },
    key: { type: "string", default: process.env.API_KEY ?? DEMO_API_KEY },
    wait: { type: "string", default: "3000" },
  },
});
const BASE = opts.base!;
const KEY = opts.key!;

interface Arrival {
  at: number;
  id: string;
  type: string;
  verified: boolean;
  /** Also verified with the secret before the rotation (during its grace). */
  oldVerified: boolean;
  status: number;
  error?: string;
  /** `data.course.id` of a course event. */
  courseId?: string;
}

/** A delivery to the `v1a` registration's path (kept apart from `arrivals`). */
interface V1aArrival {
  headers: IncomingHttpHeaders;
  body: string;
}

const arrivals: Arrival[] = [];
let secret = "";
let previousSecret = "";
/** While `true` the receiver is "down": it answers 503 (and the attempt is logged failed). */
let down = false;
/** The first delivery of an event of this course is answered 500 (once), then it is cleared. */
let failOnceFor: string | null = null;
const v1aArrivals: V1aArrival[] = [];

const readBody = (req: IncomingMessage) =>
  new Promise<string>((resolve) => {
    let data = "";
    req.on("data", (c) => (data += c));
    req.on("end", () => resolve(data));
  });

const server = createServer(async (req, res) => {
  const body = await readBody(req);
  if (req.url === "/v1a") {
    v1aArrivals.push({ headers: req.headers, body });
    res.writeHead(204).end();
    return;
  }
  const headers = Object.fromEntries(Object.entries(req.headers).map(([k, v]) => [k, String(v)]));
  let verified = false;
  let error: string | undefined;
  let event: { id: string; type: string; data?: { course?: { id?: string } } } = { id: "?", type: "?" };
  try {
    event = new Webhook(secret).verify(body, headers) as typeof event;
    verified = true;
  } catch (e) {
    error = (e as Error).message;
    try {
      event = JSON.parse(body);
    } catch {
      /* not JSON */
    }
  }
  let oldVerified = false;
  if (previousSecret) {
    try {
      new Webhook(previousSecret).verify(body, headers);
      oldVerified = true;
    } catch {
      /* not signed with the previous secret */
    }
  }
  const courseId = event.data?.course?.id;
  let status = down ? 503 : 204;
  if (courseId !== undefined && courseId === failOnceFor) {
    failOnceFor = null;
    status = 500;
  }
  arrivals.push({ at: Date.now(), id: event.id, type: event.type, verified, oldVerified, status, error, courseId });
  res.writeHead(status).end();
});

/** A `v1` registration's secret, which its creation and rotations answer. @throws Error if absent. */
function v1Secret(secret: string | undefined): string {
  if (secret === undefined) throw new Error("a v1 registration's answer carries its secret");
  return secret;
}

/** Calls the API with the demo key and returns `result` (the type the caller names). @throws Error on an error answer. */
async function api<T = unknown>(method: string, path: string, json?: unknown): Promise<T> {
  const res = await fetch(`${BASE}${path}`, {
    method,
    headers: { authorization: `Bearer ${KEY}`, ...(json === undefined ? {} : { "content-type": "application/json" }) },
    body: json === undefined ? undefined : JSON.stringify(json),
  });
  const body = (await res.json()) as { result: T; code?: string; message?: string };
  if (!res.ok) throw new Error(`${method} ${path} → ${res.status} ${body.code}: ${body.message}`);
  return body.result;
}

const log = (s: string) => console.log(s);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Waits until `done()` holds, checking every 250 ms, for at most `ms`. @returns whether it held. */
async function until(done: () => boolean, ms: number): Promise<boolean> {
  for (const end = Date.now() + ms; Date.now() < end; await sleep(250)) if (done()) return true;
  return done();
}

async function main() {
  try {
    await fetch(`${BASE}/v3/courses?limit=1`);
  } catch {
    console.error(`No API at ${BASE}. Start it first with \`npm start\` (in another terminal).`);
    process.exit(2);
  }
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
  log(`receiver listening on ${url}`);

  const hook = await api<CreatedWebhook>("POST", "/v3/webhooks", { url, description: "demo:webhooks" });
  secret = v1Secret(hook.secret);
  log(`registered ${hook.id} for every event type`);
  const test = await api("POST", `/v3/webhooks/${hook.id}/test`);
  log(`POST /v3/webhooks/${hook.id}/test → ${JSON.stringify(test)}`);

  const course = await api<CourseRecord>("POST", "/v3/courses", {
    name: "Démo webhooks",
    startDateTime: "2026-12-01T09:00:00+01:00",
    endDateTime: "2026-12-01T11:00:00+01:00",
    classroom: "B204",
  });
  log(`created ${course.id}`);
  const teachers = await api<CourseRecord[]>("GET", "/v3/courses?limit=1&includeTeachers=true");
  const professorId = teachers[0]?.teachers?.[0]?.id;
  const before: [string, unknown][] = [
    ["rename", { name: "Démo webhooks — salle changée", classroom: "C300" }],
    ["archive", { archived: true }],
    ["unarchive + absences sent", { archived: false, absencesSent: true }],
  ];
  if (professorId) before.push(["professor signs", { professors: [{ professorId, signed: true }] }]);
  for (const [what, patch] of before) {
    await api("PATCH", `/v3/courses/${course.id}`, patch);
    log(`PATCH (${what})`);
  }
  await sleep(1500);

  // Rotation: both signatures during the grace.
  const rotated = await api<RotatedSecret>("POST", `/v3/webhooks/${hook.id}/secret/rotate`, { graceSeconds: 3600 });
  previousSecret = secret;
  secret = v1Secret(rotated.secret);
  log(`POST …/secret/rotate → new secret; the previous one signs too until ${rotated.previousSecretExpiresAt}`);
  const rotationMark = arrivals.length;
  await api("PATCH", `/v3/courses/${course.id}`, { name: "Démo webhooks — après la rotation" });
  await sleep(1500);
  const afterRotation = arrivals.slice(rotationMark);
  const rotationOk = afterRotation.length > 0 && afterRotation.every((a) => a.verified && a.oldVerified);
  log(`  ${afterRotation.length} deliveries after the rotation, verified with the new and the old secret: ${rotationOk ? "✓" : "✗"}`);

  // Ordering per course (the registration's default): X's failed event holds X's next one.
  failOnceFor = course.id;
  const orderMark = arrivals.length;
  await api("PATCH", `/v3/courses/${course.id}`, { classroom: "E1" });
  await until(() => arrivals.length > orderMark, 5000);
  const other = await api<CourseRecord>("POST", "/v3/courses", {
    name: "Démo webhooks — un autre cours",
    startDateTime: "2026-12-02T09:00:00+01:00",
    endDateTime: "2026-12-02T11:00:00+01:00",
  });
  await api("PATCH", `/v3/courses/${course.id}`, { classroom: "E2" });
  log(`ordering: PATCH ${course.id} (its delivery answered 500), POST ${other.id}, PATCH ${course.id} again`);
  const ofX = () => arrivals.slice(orderMark).filter((a) => a.courseId === course.id);
  await until(() => ofX().filter((a) => a.status === 204).length >= 2, 15_000);
  const ordered = arrivals.slice(orderMark).filter((a) => a.courseId === course.id || a.courseId === other.id);
  for (const a of ordered) log(`  ${a.courseId === course.id ? "X" : "Y"} ${a.type.padEnd(16)} ${a.id}  answered ${a.status}`);
  const x = ofX();
  const firstOk = ordered.findIndex((a) => a.courseId === course.id && a.status === 204);
  const otherOk = ordered.findIndex((a) => a.courseId === other.id && a.status === 204);
  const orderedOk =
    x.length === 3 &&
    x[0]!.status === 500 &&
    x[1]!.id === x[0]!.id &&
    x[1]!.status === 204 &&
    x[2]!.id !== x[0]!.id &&
    x[2]!.status === 204 &&
    otherOk >= 0 &&
    otherOk < firstOk;
  log(`  X's next event waited for its retry; Y's went meanwhile: ${orderedOk ? "✓" : "✗"}`);

  // A v1a (ed25519) thin registration: the receiver holds only the public key.
  const v1a = await api<CreatedWebhook>("POST", "/v3/webhooks", {
    url: url.replace(/\/hook$/, "/v1a"),
    events: ["course.updated"],
    description: "demo:webhooks v1a",
    signatureScheme: "v1a",
    payload: "thin",
  });
  log(`registered ${v1a.id}: signatureScheme v1a, payload thin, publicKey ${v1a.publicKey}, no secret: ${v1a.secret === undefined ? "✓" : "✗"}`);
  await api("PATCH", `/v3/courses/${course.id}`, { classroom: "E3" });
  await until(() => v1aArrivals.length > 0, 10_000);
  const v1aDelivery = v1aArrivals[0];
  const v1aOk = v1aDelivery !== undefined && v1a.secret === undefined && verifyV1a(v1aDelivery, String(v1a.publicKey));
  log(`  ${v1aDelivery ? `body ${v1aDelivery.body}` : "nothing arrived"}`);
  log(
    `  ${v1aDelivery ? String(v1aDelivery.headers["webhook-signature"]).slice(0, 24) : "no signature"}… verified with node:crypto and the public key: ${v1aOk ? "✓" : "✗"}`,
  );
  await api("DELETE", `/v3/webhooks/${v1a.id}`);

  // An outage: the receiver is down, the registration disabled, events missed, then recovered.
  const outageStart = new Date().toISOString();
  down = true;
  log("receiver down (503)");
  await api("PATCH", `/v3/courses/${course.id}`, { classroom: "D101" });
  await sleep(1000);
  const disabled = await api<WebhookRecord>("PATCH", `/v3/webhooks/${hook.id}`, { enabled: false });
  log(`PATCH /v3/webhooks/${hook.id} { enabled: false } → disabledReason ${disabled.disabledReason}`);
  await api("PATCH", `/v3/courses/${course.id}`, { classroom: "D102" });
  const skipped = await api<DeliveryRecord[]>("GET", `/v3/webhooks/${hook.id}/deliveries?status=skipped`);
  log(`  while disabled: ${skipped.length} deliveries logged skipped`);
  down = false;
  await api("PATCH", `/v3/webhooks/${hook.id}`, { enabled: true });
  log("receiver up; PATCH { enabled: true }");
  const recoverMark = arrivals.length;
  const recovered = await api<{ queued: number }>("POST", `/v3/webhooks/${hook.id}/recover`, { since: outageStart });
  log(`POST …/recover { since: ${outageStart} } → queued ${recovered.queued}`);
  await sleep(2000);
  const recoveredIds = arrivals
    .slice(recoverMark)
    .filter((a) => a.status === 204)
    .map((a) => a.id);
  const recoverOk = recovered.queued === 2 && recoveredIds.length === 2 && new Set(recoveredIds).size === 2;
  log(`  recovered ${recoveredIds.length} missed events, each once: ${recoverOk ? "✓" : "✗"}`);

  const deletedAt = Date.now();
  await api("DELETE", `/v3/webhooks/${hook.id}`);
  const receivedBeforeDelete = arrivals.length;
  log(`DELETE ${hook.id} → 200 (${receivedBeforeDelete} deliveries had arrived)`);

  await api("PATCH", `/v3/courses/${course.id}`, { name: "Après la suppression", archived: true });
  await api("PATCH", `/v3/courses/${course.id}`, { archived: false, classroom: null });
  log("PATCH ×2 after the delete; waiting for late deliveries…");
  await sleep(Number(opts.wait));
  server.close();

  log("\nwhat arrived:");
  for (const a of arrivals) {
    const sig = a.verified ? `verified ✓${a.oldVerified ? " (and with the old secret)" : ""}` : `INVALID ✗ (${a.error})`;
    log(`  ${a.at < deletedAt ? "before" : "after "} DELETE  ${a.type.padEnd(24)} ${a.id}  answered ${a.status}  signature ${sig}`);
  }
  // Events accepted after the delete are those of the last two PATCHes: none may arrive.
  const lateTypes = arrivals.filter((a) => a.at >= deletedAt);
  const allVerified = arrivals.every((a) => a.verified);
  const ok = arrivals.length > 0 && allVerified && lateTypes.length === 0 && rotationOk && recoverOk && orderedOk && v1aOk;
  log(
    `\nverdict: ${ok ? "PROMISE KEPT" : "PROMISE BROKEN"} — rotation ${rotationOk ? "verified with both secrets" : "NOT verified"}, ` +
      `ordering ${orderedOk ? "kept through a retry" : "NOT kept"}, v1a ${v1aOk ? "verified" : "NOT verified"}, ` +
      `recovery ${recoverOk ? "delivered every missed event once" : "INCOMPLETE"}, ${receivedBeforeDelete} signed deliveries before the DELETE, ` +
      `${lateTypes.length} after it${allVerified ? "" : ", some signatures failed"}.`,
  );
  process.exit(ok ? 0 : 1);
}

main().catch((e) => {
  console.error(e instanceof Error ? e.message : e);
  server.close();
  process.exit(1);
});
