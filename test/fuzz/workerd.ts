/**
 * The fuzz suite's runner inside workerd (vitest): a read school (the fixture's school A)
 * and a write school with reference data, courses and registrations; `send`, which calls the
 * Worker's `fetch` (on the test env, whose D1 enforces production's limits: test/support/setup.ts); and
 * a D1-level fingerprint of a school's rows.
 *
 * Requests go to the Worker's default export directly, not through `exports.default.fetch`:
 * in @cloudflare/vitest-pool-workers every loopback request makes the next one slower
 * (cloudflare/workers-sdk#15446: ~6 ms → ~370 ms per request after 1,500), which would make a
 * 5,000-request suite quadratic. The handler, router and bindings are the same.
 */
import { createExecutionContext, env, waitOnExecutionContext } from "cloudflare:test";
import worker from "../../src/index";
import { fixture, KEY_A, REVOKED_KEY } from "../support/fixtures";
import { loadFixture } from "../support/helpers";
import { shardOf } from "../support/shards";
import type { Send } from "./oracle";
import type { FuzzContext } from "./requests";

/** Sends a request to the Worker (see the module comment) and waits for its `waitUntil` work. */
export const send: Send = async (req) => {
  const exec = createExecutionContext();
  const res = await worker.fetch(
    new Request(`http://api.test${req.path}`, { method: req.method, headers: req.headers, body: req.body }) as Request<unknown, IncomingRequestCfProperties>,
    env,
    exec,
  );
  await waitOnExecutionContext(exec);
  return res;
};

const WRITE_SCHOOL = "sch_fuzzw";
/** Key of the school that takes the valid writes. */
const WRITE_KEY = "sk_test_fuzz_writes";

/** The write school's reference data (ids that exist there). */
const refs = {
  groupIds: ["grp_w1", "grp_w2", "grp_w3"],
  studentIds: ["stu_w1", "stu_w2", "stu_w3", "stu_w4"],
  professorIds: ["prf_w1", "prf_w2", "prf_w3"],
  trainingIds: ["trn_w1", "trn_w2"],
  surveyTemplateIds: ["svt_w1", "svt_w2"],
};

const WRITE_COURSES = ["crs_w1", "crs_w2", "crs_w3"];

const register = async (key: string, url: string) => {
  const res = await send({
    method: "POST",
    path: "/v3/webhooks",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify({ url }),
  });
  const body = (await res.json()) as any;
  if (res.status !== 201) throw new Error(`setup: POST /v3/webhooks → ${res.status} ${JSON.stringify(body)}`);
  return body.result.id as string;
};

/**
 * Loads both schools and registrations (the receivers of `webhookUrls` must be spied on by
 * the caller) and returns the fuzz context.
 */
export async function setUpSchools(): Promise<FuzzContext> {
  await loadFixture(fixture);
  await env.DIRECTORY.prepare("UPDATE api_keys SET revoked_at = 1 WHERE school_id = 'sch_revoked'").run();
  // The same reference ids exist in both schools, so that a body sent to either references
  // only existing rows unless it is meant not to.
  const both = [WRITE_SCHOOL, "sch_a"];
  const person = (schoolId: string) => (id: string) => ({ id, schoolId, firstName: `F${id}`, lastName: `L${id}`, email: `${id}@example.org` });
  await loadFixture({
    schools: [{ id: WRITE_SCHOOL, name: "Fuzz writes", apiKeys: [WRITE_KEY] }],
    groups: both.flatMap((schoolId) => refs.groupIds.map((id) => ({ id, schoolId, name: `Group ${id}` }))),
    trainings: both.flatMap((schoolId) => refs.trainingIds.map((id) => ({ id, schoolId, name: `Training ${id}` }))),
    surveyTemplates: both.flatMap((schoolId) => refs.surveyTemplateIds.map((id) => ({ id, schoolId, name: `Survey ${id}` }))),
    students: both.flatMap((schoolId) => refs.studentIds.map(person(schoolId))),
    professors: both.flatMap((schoolId) => refs.professorIds.map(person(schoolId))),
    courses: WRITE_COURSES.map((id, i) => ({
      id,
      schoolId: WRITE_SCHOOL,
      name: `Cours ${i}`,
      startDateTime: `2026-10-0${i + 1}T08:00:00Z`,
      endDateTime: `2026-10-0${i + 1}T10:00:00Z`,
      groupIds: [refs.groupIds[i]!],
      professors: [{ professorId: refs.professorIds[i]! }],
    })),
  });
  const readWebhookIds = [await register(KEY_A, "https://fuzz-read-1.example.com/hook"), await register(KEY_A, "https://fuzz-read-2.example.com/hook")];
  const writeWebhookIds = [
    await register(WRITE_KEY, "https://fuzz-write-1.example.com/hook"),
    await register(WRITE_KEY, "https://fuzz-write-2.example.com/hook"),
  ];
  const deletableWebhookIds: string[] = [];
  for (let i = 0; i < 4; i++) deletableWebhookIds.push(await register(WRITE_KEY, `https://fuzz-delete-${i}.example.com/hook`));
  return {
    readKey: KEY_A,
    writeKey: WRITE_KEY,
    refusedKeys: ["sk_test_fuzz_unknown", REVOKED_KEY],
    readCourseIds: fixture.courses.filter((c) => c.schoolId === "sch_a").map((c) => c.id),
    writeCourseIds: WRITE_COURSES,
    writeRefs: refs,
    readRefs: refs,
    readWebhookIds,
    writeWebhookIds,
    deletableWebhookIds,
    webhookUrls: ["https://fuzz-new-1.example.com/hook", "https://fuzz-new-2.example.com/in?x=1"],
    insecureUrls: false,
  };
}

/** Row counts and a hash of every D1 row of `schoolId` (courses, relations, outbox, portal sessions). */
export async function d1Fingerprint(schoolId: string): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const table of ["courses", "course_groups", "course_students", "course_professors", "course_survey_templates", "outbox", "portal_sessions"]) {
    const db = table === "portal_sessions" ? env.DIRECTORY : await shardOf(schoolId);
    const { results } = await db.prepare(`SELECT * FROM ${table} WHERE school_id = ? ORDER BY 1, 2, 3`).bind(schoolId).all();
    const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(JSON.stringify(results)));
    out[table] = `${results.length} rows, ${[...new Uint8Array(digest)]
      .slice(0, 8)
      .map((b) => b.toString(16).padStart(2, "0"))
      .join("")}`;
  }
  return out;
}
