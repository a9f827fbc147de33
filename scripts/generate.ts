/**
 * `npm run generate`: writes a generated dataset (scripts/dataset/build.ts) as an import file
 * (docs/operations.md § Data import (operators)); the same options give the same file.
 *
 * CLI: `tsx scripts/generate.ts [--schools N] [--courses N] [--students N]
 *        [--students-per-course N] [--small-courses N] [--seed S] [--as-of ISO] --out FILE.json`
 *
 * Default ("demo"): `sch_demo`, one school year of a French lycée (3,000 courses over 36
 * weeks from 2026-09-07), plus `sch_other`, a small school with its own key, to show tenant
 * isolation. `--schools 10 --courses 100000`: one school of 100,000 courses and 9 small ones.
 */
import { mkdir, writeFile } from "node:fs/promises";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { DEFAULT_AS_OF, generateDataset, type ImportFileInput } from "./dataset/build";
import { parseCli } from "./lib/args";
import { userPath } from "./lib/wrangler";

/** Counts of a dataset: courses, course↔student rows, and the total rows an import writes. */
export function datasetStats(data: ImportFileInput): { courses: number; enrolments: number; rows: number } {
  const courses = data.courses ?? [];
  let enrolments = 0;
  let rel = 0;
  for (const c of courses) {
    enrolments += c.studentIds?.length ?? 0;
    rel += (c.groupIds?.length ?? 0) + (c.professors?.length ?? 0) + (c.surveyTemplateIds?.length ?? 0);
  }
  const keys = (data.schools ?? []).reduce((n, s) => n + (s.apiKeys?.length ?? 0), 0);
  const base = ["schools", "trainings", "groups", "students", "professors", "surveyTemplates", "courses"] as const;
  const rows = base.reduce((n, k) => n + (data[k]?.length ?? 0), 0) + keys + enrolments + rel;
  return { courses: courses.length, enrolments, rows };
}

/**
 * Writes a dataset as JSON, one record per line (readable, diffable, fast for large files).
 * Creates the parent directory.
 *
 * @returns the number of bytes written.
 */
export async function writeDataset(data: ImportFileInput, file: string): Promise<number> {
  const parts: string[] = ["{"];
  const keys = Object.keys(data) as (keyof ImportFileInput)[];
  keys.forEach((k, i) => {
    const rows = (data[k] ?? []) as unknown[];
    parts.push(`${JSON.stringify(k)}: [`);
    rows.forEach((r, j) => {
      parts.push(JSON.stringify(r) + (j < rows.length - 1 ? "," : ""));
    });
    parts.push(`]${i < keys.length - 1 ? "," : ""}`);
  });
  parts.push("}\n");
  const text = parts.join("\n");
  await mkdir(path.dirname(path.resolve(file)), { recursive: true });
  await writeFile(file, text);
  return Buffer.byteLength(text);
}

const USAGE = `usage: tsx scripts/generate.ts [--schools N] [--courses N] [--students N] [--students-per-course N]
                              [--small-courses N] [--seed S] [--as-of ISO] --out FILE.json

  defaults (the demo): --schools 2 --courses 3000 --students 600 --students-per-course 45 --small-courses 50
                       --seed 2026 --as-of ${DEFAULT_AS_OF}
  benchmark:           --schools 10 --courses 100000 --students-per-course 10   (about 1,000,000 enrolments)`;

/** CLI entry point. Returns the exit status. */
export async function main(argv: string[]): Promise<number> {
  const args = parseCli(
    {
      args: argv,
      options: {
        schools: { type: "string" },
        courses: { type: "string" },
        students: { type: "string" },
        "students-per-course": { type: "string" },
        "small-courses": { type: "string" },
        seed: { type: "string" },
        "as-of": { type: "string" },
        out: { type: "string", short: "o" },
        help: { type: "boolean", short: "h" },
      },
    },
    USAGE,
  );
  if (typeof args === "number") return args;
  const { values } = args;
  if (!values.out) {
    console.error(`--out is required\n${USAGE}`);
    return 2;
  }
  const num = (s: string | undefined) => (s === undefined ? undefined : Number(s));
  const t0 = performance.now();
  let data: ImportFileInput;
  try {
    data = generateDataset({
      schools: num(values.schools),
      courses: num(values.courses),
      students: num(values.students),
      studentsPerCourse: num(values["students-per-course"]),
      smallCourses: num(values["small-courses"]),
      seed: num(values.seed),
      asOf: values["as-of"],
    });
  } catch (err) {
    console.error(`${(err as Error).message}\n${USAGE}`);
    return 2;
  }
  const out = userPath(values.out);
  const bytes = await writeDataset(data, out);
  const s = datasetStats(data);
  const fmt = (n: number) => n.toLocaleString("en-US");
  console.error(
    `wrote ${out}: ${data.schools!.length} schools, ${fmt(s.courses)} courses, ${fmt(s.enrolments)} course↔student rows, ` +
      `${fmt(s.rows)} rows in all, ${(bytes / 2 ** 20).toFixed(1)} MB in ${((performance.now() - t0) / 1000).toFixed(1)} s`,
  );
  for (const school of data.schools!) console.error(`  ${school.id}  ${school.apiKeys![0]}  ${school.name}`);
  return 0;
}

if (process.argv[1] && import.meta.url === pathToFileURL(path.resolve(process.argv[1])).href) {
  process.exitCode = await main(process.argv.slice(2));
}
