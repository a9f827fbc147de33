/**
 * The mirror recipe (docs/api-guide.md § "Keeping a mirror"; scripts/lib/mirror.ts) against the
 * Worker: a full sync by keyset cursor while PATCHes move courses across pages, courses are
 * created and an import changes and adds courses; then the feed; then an outage longer than
 * the feed's 7-day retention with writes during it. Each run ends with the mirror equal to the
 * database, course by course, version by version.
 */
import { createExecutionContext, createScheduledController, env, waitOnExecutionContext } from "cloudflare:test";
import { describe, expect, it, vi } from "vitest";
import { agedFeedCursor, CourseMirror, type MirrorAnswer } from "../../scripts/lib/mirror";
import { importEvents } from "../../src/events/import-events";
import worker from "../../src/index";
import { callJson, loadFixture } from "../support/helpers";

const DAY = 86_400_000;
const COURSES = 240;
const PAGE = 20;

/** The import as operators run it (`npm run import`): changes and their events in one batch. */
const runImport = (file: unknown) => {
  const now = Date.now();
  return loadFixture(file, now, env, undefined, importEvents(now));
};

/** An import file of one school `schoolId` with `n` courses (`crs_<i>`), `edited` of them renamed. */
function schoolFile(schoolId: string, key: string, n: number, edited: (i: number) => boolean = () => false) {
  const courses = Array.from({ length: n }, (_, i) => {
    const day = String(1 + (i % 28)).padStart(2, "0");
    const hour = String(8 + (i % 10)).padStart(2, "0");
    return {
      id: `crs_${String(i).padStart(4, "0")}`,
      schoolId,
      name: `${edited(i) ? "Imported " : ""}Course ${i}`,
      startDateTime: `2026-10-${day}T${hour}:00:00Z`,
      endDateTime: `2026-10-${day}T${hour}:50:00Z`,
      studentIds: [`stu_${i % 5}`],
    };
  });
  return {
    schools: [{ id: schoolId, name: `Mirror ${schoolId}`, apiKeys: [key] }],
    students: Array.from({ length: 5 }, (_, i) => ({ id: `stu_${i}`, schoolId, firstName: `F${i}`, lastName: `L${i}`, email: `s${i}@example.org` })),
    courses,
  };
}

/** The API as the mirror reads it: GET through the Worker with the school's key, bytes counted. */
const api =
  (key: string) =>
  async (path: string): Promise<MirrorAnswer> => {
    const { status, body, res } = await callJson(path, { key });
    return { status, body, bytes: Number(res.headers.get("content-length")) || JSON.stringify(body).length };
  };

/** Every course of the school, read whole by page number after all writes settled: the database's truth. */
async function truth(key: string): Promise<Map<string, Record<string, unknown>>> {
  const all = new Map<string, Record<string, unknown>>();
  for (let page = 1; ; page++) {
    const { status, body } = await callJson(`/v3/courses?limit=100&page=${page}`, { key });
    expect(status).toBe(200);
    for (const c of body.result) all.set(c.id, c);
    if (!body.pagination.hasMore) return all;
  }
}

/**
 * Runs the cron `ahead` ms later (the Worker's clock moved on): the sweep publishes the rows an
 * import wrote, which it takes 30 s after they commit.
 */
async function cron(ahead = 31_000): Promise<void> {
  vi.useFakeTimers({ now: Date.now() + ahead, toFake: ["Date"] });
  try {
    const exec = createExecutionContext();
    await worker.scheduled(createScheduledController({ scheduledTime: Date.now(), cron: "* * * * *" }), env, exec);
    await waitOnExecutionContext(exec);
  } finally {
    vi.useRealTimers();
  }
}

const patch = (key: string, id: string, json: unknown) => callJson(`/v3/courses/${id}`, { method: "PATCH", key, json });
const create = (key: string, i: number) =>
  callJson("/v3/courses", { method: "POST", key, json: { name: `Created ${i}`, startDateTime: "2026-10-15T12:00:00Z", endDateTime: "2026-10-15T13:00:00Z" } });

describe("a mirror kept by the recipe", () => {
  it("equals the database after writes and an import during the full sync, and after an outage longer than the retention", async () => {
    const schoolId = "sch_mirror";
    const key = "sk_test_mirror_0123456789abcdefghijklmnopq";
    await runImport(schoolFile(schoolId, key, COURSES));
    const read = api(key);
    let pages = 0;
    // Writes land between the full sync's pages: moves across pages both ways, creations, an import.
    const during = async (path: string): Promise<MirrorAnswer> => {
      const answer = await read(path);
      if (path.startsWith("/v3/courses?")) {
        pages += 1;
        if (pages === 2) {
          // A course not read yet moves to the very start (before the cursor), one read moves to the end.
          expect((await patch(key, "crs_0200", { startDateTime: "2026-09-01T06:00:00Z", endDateTime: "2026-09-01T07:00:00Z" })).status).toBe(200);
          expect((await patch(key, "crs_0000", { startDateTime: "2026-12-30T06:00:00Z", endDateTime: "2026-12-30T07:00:00Z" })).status).toBe(200);
        }
        if (pages === 3) for (let i = 0; i < 3; i++) expect((await create(key, i)).status).toBe(201);
        // The nightly import: renames a third of the courses and adds 10.
        if (pages === 4) await runImport(schoolFile(schoolId, key, COURSES + 10, (i) => i % 3 === 0));
      }
      return answer;
    };
    const mirror = new CourseMirror(during, Date.now, PAGE);
    await mirror.fullSync();
    expect(pages).toBeGreaterThan(4);

    // Live: a write and another import, whose events only the feed brings (no gap, no catch-up).
    expect((await patch(key, "crs_0005", { name: "Live edit" })).status).toBe(200);
    await runImport(schoolFile(schoolId, key, COURSES + 10, (i) => i % 7 === 0));
    const catchUps = mirror.cost.catchUp.requests;
    await cron();
    await mirror.follow();
    expect(mirror.cost.catchUp.requests).toBe(catchUps);
    expect(mirror.courses).toEqual(await mirrorOf(truth(key)));
    const afterSync = { ...mirror.cost };

    // Away for 8 days (past the feed's 7-day retention), with writes meanwhile: the mirror's
    // feed cursor is 8 days old when it comes back.
    expect((await patch(key, "crs_0007", { name: "Edited while away" })).status).toBe(200);
    expect((await create(key, 99)).status).toBe(201);
    await runImport(schoolFile(schoolId, key, COURSES + 10, (i) => i % 5 === 0));
    await cron();
    const catchUpBefore = mirror.cost.catchUp.requests;
    mirror.feedCursor = agedFeedCursor(mirror.feedCursor!, 8 * DAY);
    await mirror.follow();
    expect(mirror.gaps).toBeGreaterThanOrEqual(1);
    expect(mirror.cost.catchUp.requests).toBeGreaterThan(catchUpBefore);
    expect(mirror.courses).toEqual(await mirrorOf(truth(key)));
    // The catch-up read what changed, not the school again.
    expect(mirror.cost.catchUp.bytes - afterSync.catchUp.bytes).toBeLessThan(afterSync.fullSync.bytes);
  });
});

/** The database's courses in the mirror's shape. */
async function mirrorOf(all: Promise<Map<string, Record<string, unknown>>>) {
  return new Map([...(await all)].map(([id, record]) => [id, { version: record.version as number, record }]));
}
