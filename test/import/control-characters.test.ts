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

  it("printable text is accepted: accents, a no-break space, an emoji", () => {
    expect(validateImport({ schools: [{ id: "sch_cc", name: "Lycée Pasteur\u00a0— 🎓" }], courses: [course] })).toMatchObject({ ok: true });
  });

  it("key labels refuse the same characters (one rule)", () => {
    expect(labelProblem(OSC52)).toBe("must not contain control characters");
    expect(labelProblem("a\u009bb")).toBe("must not contain control characters");
  });
});
