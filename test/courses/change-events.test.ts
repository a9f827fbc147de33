/**
 * The pure logic of a course write (src/courses/change.ts), without D1: what a patch
 * changes (docs/reference.md § "POST /v3/courses — create a course · PATCH /v3/courses/{id} — change one": only the fields sent; a list sent replaces
 * the whole list; `null` clears) and which events a change publishes, in the contract's
 * order and only for what changed.
 */
import { describe, expect, it } from "vitest";
import { applyPatch, type CourseState, deriveEvents } from "../../src/courses/change";
import { parsePatchBody } from "../../src/courses/write-schemas";

const NOW = Date.parse("2026-10-01T12:00:00Z");

const state = (over: Partial<CourseState> = {}): CourseState => ({
  id: "crs_1",
  name: "Algèbre",
  startDateTime: Date.parse("2026-10-05T08:00:00Z"),
  endDateTime: Date.parse("2026-10-05T10:00:00Z"),
  classroom: "B204",
  creatorId: "usr_1",
  trainingId: "trn_1",
  groupIds: ["grp_1", "grp_2"],
  studentIds: ["stu_1"],
  professors: [
    { professorId: "prf_1", coTeacher: false, signed: false },
    { professorId: "prf_2", coTeacher: true, signed: true },
  ],
  surveyTemplateIds: [],
  archived: false,
  absencesSent: false,
  version: 1,
  createdAt: Date.parse("2026-09-01T00:00:00Z"),
  updatedAt: Date.parse("2026-09-02T00:00:00Z"),
  revision: "rev_1",
  ...over,
});

/** A patch as the PATCH body parser gives it (instants in ms, lists sorted and deduplicated). */
const patch = (body: Record<string, unknown>) => parsePatchBody(body);

describe("applyPatch", () => {
  it("changes only the fields sent and leaves the input state as it was", () => {
    const before = state();
    const { after, changed } = applyPatch(before, patch({ name: "Analyse", classroom: null }));
    expect(changed).toBe(true);
    expect(after).toEqual({ ...before, name: "Analyse", classroom: null });
    expect(before.name).toBe("Algèbre");
  });

  it("reports no change when every field sent equals the stored value", () => {
    const before = state();
    const { after, changed } = applyPatch(
      before,
      patch({ name: "Algèbre", groupIds: ["grp_2", "grp_1", "grp_2"], archived: false, professors: before.professors }),
    );
    expect(changed).toBe(false);
    expect(after).toEqual(before);
  });

  it("replaces a whole list; an empty list clears it", () => {
    const { after } = applyPatch(state(), patch({ studentIds: ["stu_9", "stu_3"], groupIds: [] }));
    expect(after.studentIds).toEqual(["stu_3", "stu_9"]);
    expect(after.groupIds).toEqual([]);
  });

  it("sees a professor's flag change as a change, and keeps the professors sorted", () => {
    const { after, changed } = applyPatch(
      state(),
      patch({
        professors: [
          { professorId: "prf_2", coTeacher: true, signed: true },
          { professorId: "prf_1", signed: true },
        ],
      }),
    );
    expect(changed).toBe(true);
    expect(after.professors).toEqual([
      { professorId: "prf_1", coTeacher: false, signed: true },
      { professorId: "prf_2", coTeacher: true, signed: true },
    ]);
  });

  it("leaves updatedAt and revision to the caller", () => {
    const before = state();
    const { after } = applyPatch(before, patch({ archived: true }));
    expect([after.updatedAt, after.revision]).toEqual([before.updatedAt, before.revision]);
  });
});

describe("deriveEvents", () => {
  const types = (events: { type: string }[]) => events.map((e) => e.type);

  it("a creation: course.created, then course.professor_signed for each professor added signed", () => {
    const events = deriveEvents("sch_1", undefined, state(), NOW);
    expect(types(events)).toEqual(["course.created", "course.professor_signed"]);
    expect(events[1]!.data).toMatchObject({ professorId: "prf_2" });
    expect("professorId" in events[0]!.data).toBe(false);
  });

  it("a change publishes, in the contract's order, only what changed", () => {
    const before = state();
    const after = state({
      name: "Analyse",
      archived: true,
      absencesSent: true,
      professors: [
        { professorId: "prf_1", coTeacher: false, signed: true },
        { professorId: "prf_2", coTeacher: true, signed: true },
        { professorId: "prf_3", coTeacher: false, signed: true },
      ],
    });
    const events = deriveEvents("sch_1", before, after, NOW);
    expect(types(events)).toEqual(["course.updated", "course.archived", "course.absences_sent", "course.professor_signed", "course.professor_signed"]);
    expect(events.slice(3).map((e) => e.data.professorId)).toEqual(["prf_1", "prf_3"]);
  });

  it("unarchiving publishes course.unarchived; absences back to false and a signature removed publish nothing more", () => {
    const before = state({ archived: true, absencesSent: true });
    const after = state({ archived: false, absencesSent: false, professors: [{ professorId: "prf_2", coTeacher: true, signed: false }] });
    expect(types(deriveEvents("sch_1", before, after, NOW))).toEqual(["course.updated", "course.unarchived"]);
  });

  it("every event carries the course after the write, the school, and `now` as createdAt", () => {
    const after = state({ name: "Analyse", updatedAt: NOW });
    const events = deriveEvents("sch_1", state(), after, NOW);
    for (const e of events) {
      expect(e).toMatchObject({ schoolId: "sch_1", createdAt: "2026-10-01T12:00:00.000Z" });
      expect(e.id).toMatch(/^evt_/);
      expect(e.data.course).toMatchObject({ id: "crs_1", name: "Analyse", professorIds: ["prf_1", "prf_2"], updatedAt: "2026-10-01T12:00:00.000Z" });
    }
    expect(new Set(events.map((e) => e.id)).size).toBe(events.length);
  });
});
