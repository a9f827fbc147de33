/**
 * Imported text refuses control characters (docs/operations.md § "Data import"), as key labels
 * do: a school name is printed in operators' terminals by `npm run shards -- status`, where an
 * escape sequence (OSC 52: `ESC ] 52 ; c ; … BEL`) could write the clipboard. Each refusal
 * is reported with its JSON path, like every import problem.
 */
import { describe, expect, it } from "vitest";
import { labelProblem } from "../../src/db/api-keys";
import { validateImport } from "../../src/db/import";

/** OSC 52: sets the clipboard to base64 "rm -rf ~". */
const OSC52 = "Lycée\u001b]52;c;cm0gLXJmIH4=\u0007";

const course = {
  id: "crs_cc",
  schoolId: "sch_cc",
  name: "Maths",
  startDateTime: "2026-09-07T08:00:00.000Z",
  endDateTime: "2026-09-07T09:00:00.000Z",
};

const problemsOf = (data: unknown) => {
  const r = validateImport(data);
  return r.ok ? [] : r.problems;
};

describe("control characters in imported text", () => {
  it("a school name holding an OSC 52 sequence is refused with its path", () => {
    expect(problemsOf({ schools: [{ id: "sch_cc", name: OSC52 }] })).toEqual([{ path: "schools[0].name", message: "must not contain control characters" }]);
  });

  it.each([
    ["a C0 control (ESC)", "a\u001bb"],
    ["a line feed", "a\nb"],
    ["DEL", "a\u007fb"],
    ["a C1 control (CSI)", "a\u009b31mb"],
    ["a C1 control (OSC)", "a\u009d52;c;eA==\u009c"],
  ])("%s is refused in every text field, each with its path", (_what, text) => {
    const file = {
      schools: [{ id: "sch_cc", name: text }],
      trainings: [{ id: "trn_cc", schoolId: "sch_cc", name: text }],
      students: [{ id: "stu_cc", schoolId: "sch_cc", firstName: text, lastName: "Martin", email: "a@example.com" }],
      courses: [{ ...course, name: text, classroom: text }],
    };
    expect(problemsOf(file).map((p) => [p.path, p.message])).toEqual([
      ["schools[0].name", "must not contain control characters"],
      ["trainings[0].name", "must not contain control characters"],
      ["students[0].firstName", "must not contain control characters"],
      ["courses[0].name", "must not contain control characters"],
      ["courses[0].classroom", "must not contain control characters"],
    ]);
  });

  it.each([
    ["a right-to-left override (U+202E)", "Lyc\u202eée", "U+202E at 3"],
    ["a left-to-right embedding (U+202A)", "\u202aLycée", "U+202A at 0"],
    ["a first strong isolate (U+2068)", "Lycée\u2068", "U+2068 at 5"],
    ["a pop directional isolate (U+2069)", "a\u2069", "U+2069 at 1"],
    ["a right-to-left mark (U+200F)", "a\u200fb", "U+200F at 1"],
    ["an Arabic letter mark (U+061C)", "a\u061cb", "U+061C at 1"],
    ["a zero-width space (U+200B)", "Ly\u200bcée", "U+200B at 2"],
    ["a zero-width joiner (U+200D)", "a\u200db", "U+200D at 1"],
    ["a word joiner (U+2060)", "a\u2060b", "U+2060 at 1"],
    ["a byte order mark (U+FEFF)", "\ufeffLycée", "U+FEFF at 0"],
  ])("%s is refused in every text field, each with its path and the character", (_what, text, where) => {
    const message = `must not contain bidirectional or zero-width characters (${where})`;
    const file = {
      schools: [{ id: "sch_cc", name: text }],
      groups: [{ id: "grp_cc", schoolId: "sch_cc", name: text }],
      professors: [{ id: "prf_cc", schoolId: "sch_cc", firstName: "Anne", lastName: text, email: "a@example.com" }],
      courses: [{ ...course, name: text, classroom: text }],
    };
    expect(problemsOf(file).map((p) => [p.path, p.message])).toEqual([
      ["schools[0].name", message],
      ["groups[0].name", message],
      ["professors[0].lastName", message],
      ["courses[0].name", message],
      ["courses[0].classroom", message],
    ]);
    expect(labelProblem(text)).toBe(message);
  });

  it("printable text is accepted: accents, a no-break space, an emoji", () => {
    expect(validateImport({ schools: [{ id: "sch_cc", name: "Lycée Pasteur\u00a0— 🎓" }], courses: [course] })).toMatchObject({ ok: true });
  });

  it("key labels refuse the same characters (one rule)", () => {
    expect(labelProblem(OSC52)).toBe("must not contain control characters");
    expect(labelProblem("a\u009bb")).toBe("must not contain control characters");
  });
});
