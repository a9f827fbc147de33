/**
 * What the CLIs print of stored text is escaped (docs/operations.md § "Operating the service"):
 * `printable` (scripts/lib/printable.ts) writes every C0, DEL and C1 control as `\uXXXX`, so a
 * school name stored before the import refused them reaches `npm run shards -- status` (and
 * `keys list`, the import's problems) inert. (The CLIs themselves open D1 files in Node and
 * are not loaded here: each passes stored text through these helpers.)
 */
import { describe, expect, it } from "vitest";
import { printable, printableJson } from "../../scripts/lib/printable";

const OSC52 = "Lycée\u001b]52;c;cm0gLXJmIH4=\u0007";
// biome-ignore lint/suspicious/noControlCharactersInRegex: what must not be printed.
const ANY_CONTROL = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f]/;

describe("printable", () => {
  it("escapes C0, DEL and C1 controls as \\uXXXX and leaves the rest", () => {
    expect(printable(OSC52)).toBe("Lycée\\u001b]52;c;cm0gLXJmIH4=\\u0007");
    expect(printable("a\nb\tc\u007fd\u0085e\u009bf")).toBe("a\\u000ab\\u0009c\\u007fd\\u0085e\\u009bf");
    expect(printable("Lycée Pasteur — 🎓\u00a0")).toBe("Lycée Pasteur — 🎓\u00a0");
  });

  it("escapes the bidirectional and zero-width characters imported text refuses, stored before that rule", () => {
    expect(printable("a\u202eb\u2066c\u200fd\u061ce\u200bf\u200dg\u2060h\ufeffi")).toBe("a\\u202eb\\u2066c\\u200fd\\u061ce\\u200bf\\u200dg\\u2060h\\ufeffi");
    expect(printableJson({ name: "x\u202ey" })).toBe('{\n  "name": "x\\u202ey"\n}');
  });

  it("printableJson: no raw control inside strings, and it parses to the same value", () => {
    const value = { name: `${OSC52}\u009d52;c;eA==\u009c\u007f` };
    const text = printableJson(value);
    expect(text).not.toMatch(ANY_CONTROL);
    expect(JSON.parse(text)).toEqual(value);
  });
});
