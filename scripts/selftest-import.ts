/**
 * Self-test of the import CLI (`npm run test:import`, about 1–2 min), on a throw-away local D1
 * (`--persist-to`): (a) broken files exit non-zero, report every problem with its JSON path,
 * write nothing; (b) a file imported twice gives identical counts and fingerprints; a shorter
 * student list replaces the stored one; new courses at version 1 with a course.created, an
 * edit +1 with one course.updated; a courses-only file updates an imported school's courses,
 * a course of a school neither in the file nor in the directory refuses the file; (c) a
 * revoked key stays revoked when re-imported; (d) a key stored for another school refuses the
 * file, naming its path; (e) the progress bar ends on the file's rows and the writing time,
 * and the summary's time is the whole command's (start-up, read+validate, placement, writing); (f) a course naming an id in neither the file nor the database refuses the whole file.
 * Prints `ok`/`not ok` lines; exit 1 when a check fails.
 */
import { createHash } from "node:crypto";
import { existsSync } from "node:fs";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { Writable } from "node:stream";
import { validateImport } from "../src/db/import";
import { generateDataset } from "./dataset/build";
import { writeDataset } from "./generate";
import { countRows, main as importMain } from "./import";
import { execLocalD1, queryLocalD1 } from "./lib/d1-file";
import { formatInt, Progress } from "./lib/progress";
import { check, migratedState, runCounted, runScript, runSelfTest } from "./lib/selftest";
import { shardBindingsOfConfig } from "./lib/wrangler";

/** The directory's tables. */
const DIRECTORY_TABLES = ["schools", "api_keys"];
/** Each shard's tables. */
const SHARD_TABLES = [
  "held_schools",
  "trainings",
  "groups",
  "survey_templates",
  "students",
  "professors",
  "courses",
  "course_groups",
  "course_students",
  "course_professors",
  "course_survey_templates",
];

/** Checks that the local state under `persistTo` still has snapshot `before`: "<what>: nothing written". */
async function checkUnchanged(persistTo: string, before: Record<string, number>, what: string): Promise<void> {
  const now = JSON.stringify(await snapshot(persistTo));
  check(now === JSON.stringify(before), `${what}: nothing written`, now);
}

/** Runs `tsx scripts/import.ts <args>`; resolves with its exit code and output. */
const runImport = (args: string[]) => runScript("import.ts", args);

/**
 * Runs the import's `main(args)` in this process (a refusal needs no process of its own: the
 * first broken file runs the CLI's, for its exit status); its exit code, output and how many
 * processes it started.
 */
const refuseImport = (args: string[]) => runCounted(importMain, args);

const TABLES = [...DIRECTORY_TABLES, ...SHARD_TABLES];

/**
 * Row count of every table (each shard's summed), plus sums that change when a stored value
 * changes, and `shard_<k>_courses`: the courses of each shard. Read from the local files
 * (node:sqlite, milliseconds): the import under test writes through wrangler.
 */
async function snapshot(persistTo: string): Promise<Record<string, number>> {
  const count = (t: string) => `(SELECT count(*) FROM ${t}) AS ${t}`;
  const [out = {}] = await queryLocalD1<Record<string, number>>(
    `SELECT ${[...DIRECTORY_TABLES.map(count), "(SELECT total(created_at) FROM api_keys) AS key_created_sum", "(SELECT total(revoked_at) FROM api_keys) AS key_revoked_sum"].join(", ")}`,
    persistTo,
  );
  const parts = [
    ...SHARD_TABLES.map(count),
    "(SELECT total(start_ms) + total(end_ms) + total(created_at) + total(updated_at) + total(archived) + total(absences_sent) + total(length(name)) + total(length(classroom)) FROM courses) AS course_sum",
    "(SELECT total(co_teacher) * 1000000 + total(signed) FROM course_professors) AS professor_sum",
    "(SELECT total(version) FROM courses) AS version_sum",
    "(SELECT count(*) FROM courses WHERE version <> 1) AS versions_not_1",
    // The import's events, written to the outbox (nothing publishes them here: no Worker runs).
    "(SELECT count(*) FROM outbox) AS events",
    `(SELECT count(*) FROM outbox WHERE payload LIKE '%"type":"course.updated"%') AS updated_events`,
    "(SELECT total(seq) FROM school_changes) AS change_seq_sum",
  ];
  for (const shard of shardBindingsOfConfig()) {
    const [row = {}] = await queryLocalD1<Record<string, number>>(`SELECT ${parts.join(", ")}`, persistTo, shard);
    for (const [k, v] of Object.entries(row)) out[k] = (out[k] ?? 0) + v;
    out[`${shard}_courses`] = row.courses ?? 0;
  }
  return out;
}

/** The progress bar off a terminal: its last line is the step's total and the time the step measured. */
function checkProgressInALog(): void {
  let out = "";
  const log = new Writable({
    write(chunk, _encoding, done) {
      out += String(chunk);
      done();
    },
  });
  const bar = new Progress(1_000, "rows", log);
  bar.update(1_000, "chunk 1 done");
  bar.finish(12.3);
  const last = out.trimEnd().split("\n").at(-1) ?? "";
  check(
    last.startsWith("[########################] 100%  1,000/1,000 rows") && last.includes("  12.3 s  chunk 1 done"),
    "progress bar in a log: its last line is the step's",
    out,
  );
}

async function main(): Promise<void> {
  checkProgressInALog();
  const dir = await mkdtemp(path.join(os.tmpdir(), "import-selftest-"));
  try {
    // (a) Broken files: schema problems (several paths), then the cross-row checks.
    const persistBroken = path.join(dir, "never-created");
    const schemaBroken = {
      schools: [{ id: "sch_t", name: "Lycée Test", apiKeys: ["pk_live_nope"] }],
      students: [{ id: "stu_1", schoolId: "sch_t", firstName: "Léa", lastName: "Martin", email: "not-an-email" }],
      courses: [
        { id: "crs 1", schoolId: "sch_t", name: "Algèbre", startDateTime: "2026-09-07T10:00:00+02:00", endDateTime: "2026-09-07T12:00:00+02:00" },
        { id: "crs_2", schoolId: "sch_t", name: "Économie", startDateTime: "2026-09-07T10:00:00+02:00", endDateTime: "2026-09-07T09:00:00+02:00" },
        { id: "crs_3", schoolId: "sch_t", name: "", startDateTime: "2026-09-07T10:00:00", endDateTime: "2026-09-07T11:00:00Z", colour: "red" },
      ],
      teachers: [],
    };
    const schemaPaths = [
      "$", // unknown root field "teachers"
      "schools[0].apiKeys[0]",
      "students[0].email",
      "courses[0].id",
      "courses[1].endDateTime",
      "courses[2].name",
      "courses[2].startDateTime",
      "courses[2]", // unknown field "colour"
    ];
    const dupBroken = {
      schools: [
        { id: "sch_t", name: "Lycée Test", apiKeys: ["sk_test_dup_0123456789abcdefghijklmnopq"] },
        { id: "sch_u", name: "Lycée Autre", apiKeys: ["sk_test_dup_0123456789abcdefghijklmnopq"] },
      ],
      groups: [
        { id: "grp_1", schoolId: "sch_t", name: "2nde A" },
        { id: "grp_1", schoolId: "sch_t", name: "2nde B" },
        { id: "grp_1", schoolId: "sch_u", name: "2nde A" },
      ],
    };
    const dupPaths = ["schools[1].apiKeys[0]", "groups[1].id"];
    const expectedPaths = (file: unknown) => {
      const r = validateImport(file);
      return r.ok ? [] : r.problems.map((p) => p.path);
    };
    // Guard: the model reports what this test expects (else the CLI check below means little).
    check(
      JSON.stringify(expectedPaths(schemaBroken).sort()) === JSON.stringify([...schemaPaths].sort()),
      "validateImport reports the expected schema problem paths",
      `got ${JSON.stringify(expectedPaths(schemaBroken))}`,
    );
    check(
      JSON.stringify(expectedPaths(dupBroken).sort()) === JSON.stringify([...dupPaths].sort()),
      "validateImport reports duplicate ids and keys",
      `got ${JSON.stringify(expectedPaths(dupBroken))}`,
    );
    const weakBroken = { schools: [{ id: "sch_t", name: "Lycée Test", apiKeys: ["sk_test_short_key", `sk_${"a".repeat(32)}`] }] };
    for (const [name, data, paths] of [
      ["schema", schemaBroken, schemaPaths],
      ["duplicates", dupBroken, dupPaths],
      ["a key shorter than sk_ + 32 characters", weakBroken, ["schools[0].apiKeys[0]"]],
    ] as const) {
      const f = path.join(dir, `broken-${name}.json`);
      await writeFile(f, JSON.stringify(data, null, 2));
      const r = await (name === "schema" ? runImport : refuseImport)([f, "--persist-to", persistBroken, "--quiet"]);
      check(r.code !== 0, `broken file (${name}): non-zero exit`, `exit ${r.code}`);
      const missing = paths.filter((p) => !r.stderr.split("\n").some((line) => line.trimStart().startsWith(`${p}: `)));
      check(
        missing.length === 0,
        `broken file (${name}): every problem reported with its path (${paths.length})`,
        `missing ${missing.join(", ")}\n${r.stderr}`,
      );
      check(!existsSync(persistBroken), `broken file (${name}): nothing written (wrangler not started)`);
    }
    const bad = path.join(dir, "bad.json");
    await writeFile(bad, "{ not json");
    const rj = await refuseImport([bad, "--persist-to", persistBroken, "--quiet"]);
    check(rj.code !== 0 && /\$: invalid JSON/.test(rj.stderr), "invalid JSON: non-zero exit, reported at $", rj.stderr);
    // --remote refuses the demo keys while validating, before wrangler or any network.
    const demo = path.join(dir, "demo-key.json");
    await writeFile(demo, JSON.stringify({ schools: [{ id: "sch_demo", name: "Démo", apiKeys: ["sk_test_demo_4qX7mB2nR9tK5wE8yC3vL6pZ"] }] }));
    const rr = await refuseImport([demo, "--remote", "--quiet"]);
    check(
      rr.code !== 0 && rr.stderr.split("\n").some((l) => l.trimStart().startsWith("schools[0].apiKeys[0]: ") && l.includes("--remote refuses")),
      "--remote: a sk_test_ key refuses the file, with its path",
      rr.stderr,
    );

    // (b) A small file imported twice into a throw-away database.
    const persist = path.join(dir, "state");
    await migratedState(persist);
    const data = generateDataset({ courses: 120, students: 40, studentsPerCourse: 6, schools: 2, smallCourses: 20 });
    const file = path.join(dir, "small.json");
    await writeDataset(data, file);
    const checked = validateImport(data);
    if (!checked.ok) throw new Error(`generated data invalid: ${JSON.stringify(checked.problems.slice(0, 3))}`);

    const importStarted = performance.now();
    const first = await runImport([file, "--persist-to", persist]);
    const waited = (performance.now() - importStarted) / 1000;
    check(first.code === 0, "small file: first import succeeds", `${first.stdout}${first.stderr}`);
    // Its progress bar (stderr, a pipe here) ends on every row of the file and the summary's time.
    const lastBar =
      first.stderr
        .split("\n")
        .filter((l) => /^\[[#-]{24}\]/.test(l))
        .at(-1) ?? "";
    const writingSeconds = / writing ([\d.]+) s /.exec(first.stdout)?.[1] ?? "?";
    const fileRows = formatInt(countRows(checked.file));
    check(
      lastBar.includes(`${fileRows}/${fileRows} rows`) && lastBar.includes(`  ${writingSeconds} s`),
      "small file: the progress bar's last line shows every row and the summary's writing time",
      `${lastBar} | ${first.stdout}`,
    );
    // The summary's time is the whole command's (what the user waited), its parts named.
    const times = / in ([\d.]+) s: start-up ([\d.]+) s, read\+validate ([\d.]+) s, placement ([\d.]+) s, writing ([\d.]+) s /.exec(first.stdout);
    const [whole = Number.NaN, ...parts] = (times?.slice(1) ?? []).map(Number);
    const sumOfParts = parts.reduce((a, b) => a + b, 0);
    check(
      parts.length === 4 && whole >= sumOfParts - 0.25 && whole <= waited,
      "small file: the summary's time covers start-up, read+validate, placement and writing, within the time the command took",
      `summary ${first.stdout.trim()}; parts ${sumOfParts.toFixed(1)} s; waited ${waited.toFixed(1)} s`,
    );
    const s1 = await snapshot(persist);
    const stored = TABLES.reduce((n, t) => n + (s1[t] ?? 0), 0);
    check(
      stored === countRows(checked.file),
      "small file: stored rows = rows of the file",
      `stored ${stored}, file ${countRows(checked.file)}: ${JSON.stringify(s1)}`,
    );
    // The progress bar counts to countRows: the rows the import reports writing must be that total.
    const reported = Number(/imported ([\d,]+) rows/.exec(first.stdout)?.[1]?.replaceAll(",", ""));
    check(
      reported === countRows(checked.file),
      "small file: the rows reported = the progress bar's total",
      `reported ${reported}, total ${countRows(checked.file)}`,
    );
    check((s1.courses ?? 0) === 140 && (s1.schools ?? 0) === 2, "small file: 140 courses in 2 schools", JSON.stringify(s1));
    // Placement: the first school (120 courses) on SHARD_0, the second (20) on the emptier SHARD_1.
    check(s1.SHARD_0_courses === 120 && s1.SHARD_1_courses === 20, "small file: its two schools spread over the two shards", JSON.stringify(s1));
    check(s1.versions_not_1 === 0, "small file: every new course is at version 1", JSON.stringify(s1));
    check(
      s1.events === 140 && s1.updated_events === 0 && s1.change_seq_sum === 140,
      "small file: one course.created per course, each with a change number",
      JSON.stringify(s1),
    );

    const second = await runImport([file, "--persist-to", persist, "--quiet"]);
    check(second.code === 0, "small file: second import succeeds", `${second.stdout}${second.stderr}`);
    const s2 = await snapshot(persist);
    check(
      JSON.stringify(s1) === JSON.stringify(s2),
      "small file: importing twice changes nothing and publishes nothing (counts and sums identical)",
      `${JSON.stringify(s1)}\n${JSON.stringify(s2)}`,
    );

    // A course's relation lists are replaced, not merged.
    const courses = data.courses!;
    const target = courses.find((c) => (c.studentIds?.length ?? 0) > 1)!;
    const edited = { ...data, courses: [{ ...target, studentIds: target.studentIds!.slice(1) }] };
    const editedFile = path.join(dir, "edited.json");
    await writeDataset(edited, editedFile);
    const third = await runImport([editedFile, "--persist-to", persist, "--quiet"]);
    const s3 = await snapshot(persist);
    check(
      third.code === 0 && s3.course_students === (s2.course_students ?? 0) - 1 && s3.courses === s2.courses,
      "re-import of one course with one student less replaces its student list",
      `${third.stderr}\nbefore ${s2.course_students}, after ${s3.course_students}`,
    );
    check(
      s3.version_sum === (s2.version_sum ?? 0) + 1 && s3.versions_not_1 === 1,
      "re-import of one changed course raises its version by one, and no other",
      JSON.stringify(s3),
    );
    check(
      s3.events === (s2.events ?? 0) + 1 && s3.updated_events === 1 && s3.change_seq_sum === (s2.change_seq_sum ?? 0) + 1,
      "re-import of one changed course publishes one course.updated and takes one change number",
      JSON.stringify(s3),
    );

    // A courses-only file (a nightly update): the courses of a school the directory holds are
    // written, with no directory chunk; a course of a school neither listed nor known refuses the file.
    const nightly = { courses: [{ ...target, name: `${target.name} (nightly)` }] };
    const nightlyFile = path.join(dir, "nightly.json");
    await writeFile(nightlyFile, JSON.stringify(nightly));
    const beforeNightly = await snapshot(persist);
    const coursesOnly = await runImport([nightlyFile, "--persist-to", persist, "--quiet"]);
    const afterNightly = await snapshot(persist);
    check(
      coursesOnly.code === 0 &&
        afterNightly.version_sum === (beforeNightly.version_sum ?? 0) + 1 &&
        afterNightly.updated_events === (beforeNightly.updated_events ?? 0) + 1,
      "a courses-only file of an imported school: exit 0, the course updated (version + 1, one course.updated)",
      `exit ${coursesOnly.code}\n${coursesOnly.stdout}${coursesOnly.stderr}\n${JSON.stringify(afterNightly)}`,
    );
    const stray = { courses: [nightly.courses[0], { ...target, id: "crs_stray", schoolId: "sch_nowhere" }] };
    const strayFile = path.join(dir, "stray.json");
    await writeFile(strayFile, JSON.stringify(stray));
    const strayRun = await refuseImport([strayFile, "--persist-to", persist, "--quiet"]);
    check(
      strayRun.code === 2 &&
        strayRun.stderr.split("\n").some((l) => l.trimStart().startsWith("courses[1].schoolId: ") && l.includes("sch_nowhere")) &&
        JSON.stringify(await snapshot(persist)) === JSON.stringify(afterNightly),
      "a course of a school neither in the file nor in the directory: exit 2, its path and school named, nothing written",
      `exit ${strayRun.code}\n${strayRun.stdout}${strayRun.stderr}`,
    );

    // (c) API keys already stored keep their state: a re-import never un-revokes one.
    const key = data.schools![0]!.apiKeys![0]!;
    const hash = createHash("sha256").update(key).digest("hex");
    await execLocalD1("UPDATE api_keys SET revoked_at = 1234 WHERE key_hash = ?", [hash], persist);
    const keyRow = async () => (await queryLocalD1(`SELECT school_id, id, revoked_at FROM api_keys WHERE key_hash = '${hash}'`, persist))[0];
    const revoked = await keyRow();
    const fourth = await runImport([file, "--persist-to", persist, "--quiet"]);
    check(
      fourth.code === 0 && JSON.stringify(await keyRow()) === JSON.stringify(revoked),
      "re-import keeps a revoked key revoked (and its id)",
      JSON.stringify(await keyRow()),
    );

    // (d) A key stored for another school refuses the whole file, with its JSON path.
    const s4 = await snapshot(persist);
    const stolen = {
      schools: [{ id: "sch_thief", name: "Autre lycée", apiKeys: ["sk_test_selftest_fresh_0123456789abcdefgh", key] }],
      trainings: [{ id: "trn_thief", schoolId: "sch_thief", name: "BTS" }],
    };
    const stolenFile = path.join(dir, "stolen.json");
    await writeFile(stolenFile, JSON.stringify(stolen));
    const fifth = await refuseImport([stolenFile, "--persist-to", persist, "--quiet"]);
    check(
      fifth.code === 2 &&
        fifth.stderr.split("\n").some((line) => line.trimStart().startsWith("schools[0].apiKeys[1]: ") && line.includes(data.schools![0]!.id)),
      "a key stored for another school: exit 2, reported with its JSON path and the school",
      `exit ${fifth.code}\n${fifth.stderr}`,
    );
    await checkUnchanged(persist, s4, "a key stored for another school");

    // (e) --shard places a new school there, even on the fuller shard; an unknown shard writes nothing.
    const placed = { schools: [{ id: "sch_placed", name: "Placé", apiKeys: [] }], trainings: [{ id: "trn_p", schoolId: "sch_placed", name: "BTS" }] };
    const placedFile = path.join(dir, "placed.json");
    await writeFile(placedFile, JSON.stringify(placed));
    const s5 = await snapshot(persist);
    const unknown = await refuseImport([placedFile, "--persist-to", persist, "--quiet", "--shard", "SHARD_9"]);
    check(
      unknown.code === 2 && unknown.stderr.includes('no shard "SHARD_9"') && JSON.stringify(await snapshot(persist)) === JSON.stringify(s5),
      "--shard SHARD_9 (unknown): exit 2, nothing written",
      `exit ${unknown.code}\n${unknown.stderr}`,
    );
    const sixth = await runImport([placedFile, "--persist-to", persist, "--quiet", "--shard", "SHARD_0"]);
    const [where] = await queryLocalD1<{ shard: string }>("SELECT shard FROM schools WHERE id = 'sch_placed'", persist);
    check(sixth.code === 0 && where?.shard === "SHARD_0", "--shard SHARD_0 places the new school there", `${sixth.stderr}\n${JSON.stringify(where)}`);

    // (f) A course naming an id in neither the file nor the database refuses the whole file,
    // naming the course, the id and its JSON path; an id the database holds is accepted.
    const s6 = await snapshot(persist);
    const school = data.schools![0]!.id;
    const storedGroup = data.groups!.find((g) => g.schoolId === school)!.id;
    const dangling = {
      courses: [{ ...courses.find((c) => c.schoolId === school)!, id: "crs_dangling", groupIds: [storedGroup, "grp_nowhere"], studentIds: [] }],
    };
    const danglingFile = path.join(dir, "dangling.json");
    await writeFile(danglingFile, JSON.stringify(dangling));
    const seventh = await refuseImport([danglingFile, "--persist-to", persist, "--quiet"]);
    const danglingLines = seventh.stderr.split("\n").filter((line) => / (group|student|professor|training|survey template) "/.test(line));
    check(
      seventh.code === 2 &&
        danglingLines.length === 1 &&
        danglingLines[0]!.trimStart().startsWith("courses[0].groupIds[1]: ") &&
        danglingLines[0]!.includes('"crs_dangling"') &&
        danglingLines[0]!.includes('"grp_nowhere"'),
      "a group id in neither the file nor the database: exit 2, reported with its course, id and JSON path (the stored one accepted)",
      `exit ${seventh.code}\n${seventh.stderr}`,
    );
    await checkUnchanged(persist, s6, "a group id in neither the file nor the database");
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

await runSelfTest("import", main);
