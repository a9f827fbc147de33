/**
 * An import's events meet the registrations' filters as a write's do (docs/reference.md §
 * "POST /v3/webhooks": a course leaving the scope is reported once): a `course.updated` of
 * an import carries the course's filter keys before the change (`previous`), so a
 * registration filtered on the training the import took the course out of receives it.
 */
import { env } from "cloudflare:test";
import { afterAll, beforeAll, expect, it } from "vitest";
import { importEvents } from "../../src/events/import-events";
import { sweepOutbox } from "../../src/events/outbox";
import { loadFixture } from "../support/helpers";
import { drain, register } from "../support/webhooks/harness";
import { Receivers } from "../support/webhooks/receivers";

const receivers = new Receivers();
beforeAll(() => {
  receivers.install();
});
afterAll(() => receivers.restore());

const schoolId = "sch_impfilter";
const key = `sk_test_${schoolId}_0123456789abcdefghijkl`;
const course = (id: string, trainingId: string) => ({
  id,
  schoolId,
  name: `Séance ${id}`,
  startDateTime: "2026-09-14T08:00:00Z",
  endDateTime: "2026-09-14T10:00:00Z",
  trainingId,
});
const file = (courses: ReturnType<typeof course>[]) => ({
  schools: [{ id: schoolId, name: "École filtrée", apiKeys: [key] }],
  trainings: [
    { id: "trn_1", schoolId, name: "BTS" },
    { id: "trn_2", schoolId, name: "Licence" },
  ],
  courses,
});

it("a registration filtered on a training hears of a course an import moved out of it, and of nothing outside it", async () => {
  const first = Date.parse("2026-09-01T06:00:00Z");
  await loadFixture(file([course("crs_a", "trn_1"), course("crs_b", "trn_1")]), first, env, undefined, importEvents(first));
  // The first import's events are accepted before the registration exists.
  await sweepOutbox(env, Date.now() + 60_000);
  await register(key, "https://filtered-import.example.com/in", { filter: { trainingId: ["trn_1"] } });
  const second = Date.parse("2026-09-02T06:00:00Z");
  // crs_a leaves trn_1, crs_b stays as it was, crs_c is new in trn_2.
  await loadFixture(file([course("crs_a", "trn_2"), course("crs_b", "trn_1"), course("crs_c", "trn_2")]), second, env, undefined, importEvents(second));
  await sweepOutbox(env, Date.now() + 120_000);
  await drain(schoolId);
  const got = receivers.to("filtered-import.example.com");
  expect(got.map((r) => [r.event.type, (r.event.data as { course: { id: string; trainingId: string } }).course.id])).toEqual([["course.updated", "crs_a"]]);
  expect((got[0]!.event.data as { course: { trainingId: string; version: number } }).course).toMatchObject({ trainingId: "trn_2", version: 2 });
});
