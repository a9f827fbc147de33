/**
 * Where an import puts each school (docs/reference.md § Database shards, § Data import): a
 * school the directory knows stays on its shard; each new one goes, in file order, to the
 * shard with the fewest bytes, counting what the same import placed before it, so that the
 * schools of one file spread; `--shard` places them all on one. Pure: the callers read the
 * directory and the shards (scripts/import.ts through wrangler, the tests through bindings).
 */
import type { ImportFile } from "./import";
import type { ImportStep } from "./import-sql";

/**
 * Bytes a course takes on a shard with its relation rows and indexes, for estimates
 * (measured by `npm run bench`: docs/operations.md § Capacity).
 */
const BYTES_PER_COURSE = 2_500;
/** Bytes of a person, training, group or template row with its index entries (estimate). */
const BYTES_PER_ROW = 200;

/** What the directory and the shards say before an import: each known school's shard, each shard's bytes. */
export interface PlacementState {
  /** The shard of each school the directory knows. */
  known: ReadonlyMap<string, string>;
  /** Every shard (binding → bytes now), in binding order: ties go to the first. */
  bytes: ReadonlyMap<string, number>;
}

/** Estimated bytes of each school's rows in `file` (school id → bytes), in one pass over it. */
function estimatedBytes(file: ImportFile): Map<string, number> {
  const bytes = new Map<string, number>();
  const add = (schoolId: string, n: number) => bytes.set(schoolId, (bytes.get(schoolId) ?? 0) + n);
  for (const list of [file.trainings, file.groups, file.students, file.professors, file.surveyTemplates]) {
    for (const r of list) add(r.schoolId, BYTES_PER_ROW);
  }
  for (const c of file.courses) add(c.schoolId, BYTES_PER_COURSE);
  return bytes;
}

/** Every school id the file's rows name, in file order (its `schools` first). */
export function schoolsOf(file: ImportFile): string[] {
  const ids = new Set(file.schools.map((s) => s.id));
  for (const list of [file.trainings, file.groups, file.students, file.professors, file.surveyTemplates, file.courses]) {
    for (const r of list) ids.add(r.schoolId);
  }
  return [...ids];
}

/**
 * The shard of every school of `file`: a known school's own; a new one `chosen` when given,
 * else the shard with the fewest bytes, counting the estimated bytes of the schools this
 * file placed before it (ties: the first shard).
 *
 * @throws Error when `chosen` is not a shard of `state`, or there is no shard.
 */
export function placeSchools(file: ImportFile, state: PlacementState, chosen?: string): Map<string, string> {
  if (state.bytes.size === 0) throw new Error("no shard: wrangler.toml declares no SHARD_<n> D1 binding");
  if (chosen !== undefined && !state.bytes.has(chosen)) throw new Error(`no shard "${chosen}": the shards are ${[...state.bytes.keys()].join(", ")}`);
  const bytes = new Map(state.bytes);
  const estimated = estimatedBytes(file);
  const placed = new Map<string, string>();
  for (const id of schoolsOf(file)) {
    let shard = state.known.get(id) ?? chosen;
    if (shard === undefined) {
      shard = [...bytes.entries()].reduce((best, e) => (e[1] < best[1] ? e : best))[0];
    }
    placed.set(id, shard);
    bytes.set(shard, (bytes.get(shard) ?? 0) + (estimated.get(id) ?? 0));
  }
  return placed;
}

/** The part of `file` whose schools `placed` puts on `shard` (its schools and their rows). */
export function partOn(file: ImportFile, placed: ReadonlyMap<string, string>, shard: string): ImportFile {
  const mine = <T extends { schoolId: string }>(list: T[]) => list.filter((r) => placed.get(r.schoolId) === shard);
  return {
    schools: file.schools.filter((s) => placed.get(s.id) === shard),
    trainings: mine(file.trainings),
    groups: mine(file.groups),
    students: mine(file.students),
    professors: mine(file.professors),
    surveyTemplates: mine(file.surveyTemplates),
    courses: mine(file.courses),
  };
}

/** The statement that reads which of `ids` the directory knows, with their shard and state (rows `{ id, shard, state }`). */
export const knownSchools = (ids: readonly string[]): ImportStep => ({
  kind: "command",
  sql: (v) => `SELECT id, shard, state FROM schools WHERE id IN (SELECT value FROM json_each(${v(JSON.stringify(ids))}))`,
});

/** A shard's size as `shardSize` reads it. */
export interface ShardSize {
  /** Schools it holds (readably: `active` or `fenced`). */
  schools: number;
  courses: number;
  /** Rows of people, trainings, groups and templates. */
  rows: number;
}

/** The statement that reads a shard's size (one row, `ShardSize`'s columns): a handful of counts. */
export const shardSize: ImportStep = {
  kind: "command",
  sql: () =>
    `SELECT (SELECT count(*) FROM held_schools WHERE state IN ('active', 'fenced')) AS schools, (SELECT count(*) FROM courses) AS courses,
      (SELECT count(*) FROM students) + (SELECT count(*) FROM professors) + (SELECT count(*) FROM trainings) + (SELECT count(*) FROM groups) + (SELECT count(*) FROM survey_templates) AS rows`,
};

/** A shard's bytes estimated from its row counts (placement; `status` reports the database's own size when D1 gives it). */
export const estimateBytes = (size: ShardSize): number => size.courses * BYTES_PER_COURSE + size.rows * BYTES_PER_ROW;

/**
 * Bytes of a relation row (a course's group, student, professor or survey template) with its
 * index entries and its share of the course's stored record part (measured with SQLite's page
 * count: about 290 + 100 bytes with 26-character ids; docs/operations.md §
 * "Deployment settings (wrangler vars)").
 */
const BYTES_PER_RELATION_ROW = 400;

/** The share of a shard's 10 GB above which `npm run shards -- status` warns about one school (docs/operations.md § Database shards). */
export const SCHOOL_SHARE_WARNING = 0.1;

/** A school's rows on a shard as `schoolSize` reads them, each count capped (see there). */
export interface SchoolSize {
  courses: number;
  relations: number;
}

const RELATION_TABLES = ["course_groups", "course_students", "course_professors", "course_survey_templates"];

/**
 * The statement that reads a school's rows on its shard (one row, `SchoolSize`'s columns),
 * each count through the table's primary key and capped at the rows that alone would make
 * `capBytes`: it walks at most that many index entries per table, however large the school,
 * and tells whether the school passes `capBytes` (`estimateSchoolBytes`), not its size beyond.
 */
export function schoolSize(schoolId: string, capBytes: number): ImportStep {
  const capped = (table: string, perRow: number, v: (x: string | number) => string) =>
    `(SELECT count(*) FROM (SELECT 1 FROM ${table} WHERE school_id = ${v(schoolId)} LIMIT ${v(Math.ceil(capBytes / perRow))}))`;
  return {
    kind: "command",
    sql: (v) =>
      `SELECT ${capped("courses", BYTES_PER_COURSE, v)} AS courses, ${RELATION_TABLES.map((t) => capped(t, BYTES_PER_RELATION_ROW, v)).join(" + ")} AS relations`,
  };
}

/** A school's bytes on its shard estimated from `schoolSize` (courses with their indexes, relation rows with their parts). */
export const estimateSchoolBytes = (size: SchoolSize): number => size.courses * BYTES_PER_COURSE + size.relations * BYTES_PER_RELATION_ROW;
