/**
 * What an import writes (docs/operations.md § "Data import (operators)"), as one row model
 * (src/db/import-sql.ts, which also renders it): upserts by id (per school) and the
 * replacement of each imported course's relation lists, in dependency order. Running them
 * twice leaves the database as once. API keys are stored only as SHA-256 hashes (with a key
 * id and their last 4 characters, as `npm run keys` stores them); a key already stored keeps
 * its state.
 */
import { cutBatches } from "../lib/batches";
import { sha256Hex } from "../lib/crypto";
import { mintId } from "../lib/ids";
import { formatScopes } from "../lib/scopes";
import { fold } from "../lib/text";
import type { ImportCourse, ImportFile, ImportProblem } from "./import";
import { type ImportStep, upsert, type Value } from "./import-sql";
import { RECORD_PARTS, rebuildPartsText } from "./record-parts";

const bool = (b: boolean) => (b ? 1 : 0);

/**
 * The directory's steps of importing a validated file: its schools, each with the shard
 * `placed` names (a known school keeps its own), and its API keys.
 *
 * @param now ms since the epoch: the keys' `created_at`.
 */
export async function directorySteps(file: ImportFile, placed: ReadonlyMap<string, string>, now = Date.now()): Promise<ImportStep[]> {
  const keyRows: Value[][] = [];
  for (const k of await importedKeys(file)) keyRows.push([k.hash, k.schoolId, now, mintId("key", now), k.last4]);
  return [
    upsert(
      "schools",
      ["id", "name", "shard"],
      file.schools.map((s) => [s.id, s.name, placed.get(s.id)!]),
      "ON CONFLICT(id) DO UPDATE SET name = excluded.name",
    ),
    // A stored key keeps its school, id, label and state: importing it again never revokes
    // or un-revokes it (a key of another school refuses the whole file before this runs:
    // `keyOwnershipProblems`). Only the last 4 characters of a key stored without them are filled.
    upsert(
      "api_keys",
      ["key_hash", "school_id", "created_at", "id", "last4"],
      keyRows,
      "ON CONFLICT(key_hash) DO UPDATE SET last4 = coalesce(api_keys.last4, excluded.last4) WHERE api_keys.school_id = excluded.school_id",
    ),
    // Keys carried by their hash (an export's) are written as they were stored, under the same rule.
    upsert(
      "api_keys",
      ["key_hash", "school_id", "created_at", "id", "last4", "label", "scopes", "revoked_at", "expires_at"],
      file.schools.flatMap((s) =>
        s.apiKeyHashes.map((k) => [k.hash, s.id, k.createdAt, k.id, k.last4, k.label, formatScopes(k.scopes), k.revokedAt, k.expiresAt]),
      ),
      "ON CONFLICT(key_hash) DO UPDATE SET last4 = coalesce(api_keys.last4, excluded.last4) WHERE api_keys.school_id = excluded.school_id",
    ),
  ];
}

/**
 * A shard's steps of importing the part of a validated file placed on it, in dependency
 * order: the shard records that it holds the file's schools, then their rows.
 *
 * @param now ms since the epoch, used for `createdAt`/`updatedAt` of courses that omit them
 *   (on first insert, and `updatedAt` of a course the import changes).
 * @param publish the events of the changed courses (`ImportPublish`); none without it.
 */
export function shardSteps(file: ImportFile, now = Date.now(), publish?: ImportPublish): ImportStep[] {
  // Folded keys (`fold()`) are written beside the names they fold: the page statement orders
  // included people and survey templates by them (src/courses/query.ts).
  const named = (table: string, rows: { id: string; schoolId: string; name: string }[]) =>
    upsert(
      table,
      ["school_id", "id", "name"],
      rows.map((r) => [r.schoolId, r.id, r.name]),
      "ON CONFLICT(school_id, id) DO UPDATE SET name = excluded.name",
    );
  const surveys = upsert(
    "survey_templates",
    ["school_id", "id", "name", "name_folded"],
    file.surveyTemplates.map((r) => [r.schoolId, r.id, r.name, fold(r.name)]),
    "ON CONFLICT(school_id, id) DO UPDATE SET name = excluded.name, name_folded = excluded.name_folded",
  );
  const people = (table: string, rows: ImportFile["students"]) =>
    upsert(
      table,
      ["school_id", "id", "first_name", "last_name", "email", "first_name_folded", "last_name_folded"],
      rows.map((r) => [r.schoolId, r.id, r.firstName, r.lastName, r.email, fold(r.firstName), fold(r.lastName)]),
      "ON CONFLICT(school_id, id) DO UPDATE SET first_name = excluded.first_name, last_name = excluded.last_name, email = excluded.email, first_name_folded = excluded.first_name_folded, last_name_folded = excluded.last_name_folded",
    );
  return [
    upsert(
      "held_schools",
      ["school_id", "state"],
      file.schools.map((s) => [s.id, "active"]),
      "ON CONFLICT(school_id) DO NOTHING",
    ),
    // A school's change numbers go on after those of the deployment its file was exported from.
    upsert(
      "school_changes",
      ["school_id", "seq"],
      file.schools.filter((s) => s.changeSeq !== undefined).map((s) => [s.id, s.changeSeq!]),
      "ON CONFLICT(school_id) DO UPDATE SET seq = max(seq, excluded.seq)",
    ),
    named("trainings", file.trainings),
    named("groups", file.groups),
    surveys,
    people("students", file.students),
    people("professors", file.professors),
    ...(file.students.length + file.professors.length + file.surveyTemplates.length > 0 ? staleSteps() : []),
    ...courseSteps(file.courses, now, publish),
  ];
}

// --- Stored record parts (docs/architecture.md § Course reads).

/**
 * The parts made stale by the renames of this batch's upserts of people and survey templates
 * (the triggers of migrations/shard/0008_record_parts.sql list them in `course_parts_stale`),
 * rebuilt once each, then the list emptied: a course listing 30 renamed students is rebuilt
 * once. Each statement's cost is the stale courses' relation rows, read through primary keys.
 */
function staleSteps(): ImportStep[] {
  return [
    ...RECORD_PARTS.map(
      (part): ImportStep => ({
        kind: "command",
        sql: () => rebuildPartsText(part, `SELECT school_id, course_id FROM course_parts_stale WHERE part = '${part}'`),
      }),
    ),
    { kind: "command", sql: () => "DELETE FROM course_parts_stale" },
  ];
}

/**
 * Every part of the batch's imported courses (staged in `import_course_states`), rebuilt after
 * their relation lists are written: a new course gets its parts, a changed one exact ones.
 */
const importedPartsSteps = (): ImportStep[] =>
  RECORD_PARTS.map((part): ImportStep => ({ kind: "command", sql: () => rebuildPartsText(part, "SELECT school_id, course_id FROM import_course_states") }));

// --- End of stored record parts.

/** An API key of an import file: where the file lists it, its school, hash and last 4 characters. */
export interface ImportedKey {
  /** JSON path in the file (`schools[0].apiKeys[1]`). */
  path: string;
  schoolId: string;
  /** Lowercase hex SHA-256 of the key. */
  hash: string;
  last4: string;
}

/** The file's API keys given in plain (`apiKeys`), in file order. */
export async function importedKeys(file: ImportFile): Promise<ImportedKey[]> {
  const keys: ImportedKey[] = [];
  for (const [i, s] of file.schools.entries()) {
    for (const [j, k] of s.apiKeys.entries()) keys.push({ path: `schools[${i}].apiKeys[${j}]`, schoolId: s.id, hash: await sha256Hex(k), last4: k.slice(-4) });
  }
  return keys;
}

/** The file's API keys given by their hash (`apiKeyHashes`), in file order, for `keyOwnershipProblems`. */
export function hashedKeys(file: ImportFile): ImportedKey[] {
  return file.schools.flatMap((s, i) =>
    s.apiKeyHashes.map((k, j) => ({ path: `schools[${i}].apiKeyHashes[${j}]`, schoolId: s.id, hash: k.hash, last4: k.last4 ?? "" })),
  );
}

/** Hashes per ownership query: one JSON parameter, and a literal statement far below D1's 100 KB. */
const HASHES_PER_QUERY = 500;

/**
 * The statements that read which school stores each of `hashes` already (rows
 * `{ key_hash, school_id }`), for `keyOwnershipProblems`; each list travels as one JSON
 * parameter (`json_each`).
 */
export function storedKeyOwners(hashes: readonly string[]): ImportStep[] {
  const steps: ImportStep[] = [];
  for (let i = 0; i < hashes.length; i += HASHES_PER_QUERY) {
    const list = JSON.stringify(hashes.slice(i, i + HASHES_PER_QUERY));
    steps.push({ kind: "command", sql: (v) => `SELECT key_hash, school_id FROM api_keys WHERE key_hash IN (SELECT value FROM json_each(${v(list)}))` });
  }
  return steps;
}

/**
 * The import's rule for keys already stored (docs/operations.md § "Data import (operators)"): a key that belongs to
 * another school is an error, and the whole file is refused.
 *
 * @param stored the rows `storedKeyOwners` read.
 * @returns one problem per such key, with its JSON path (empty: the file may be imported).
 */
export function keyOwnershipProblems(keys: readonly ImportedKey[], stored: readonly { key_hash: string; school_id: string }[]): ImportProblem[] {
  const owner = new Map(stored.map((r) => [r.key_hash, r.school_id]));
  return keys
    .filter((k) => owner.has(k.hash) && owner.get(k.hash) !== k.schoolId)
    .map((k) => ({
      path: k.path,
      message: `this API key is already stored for school "${owner.get(k.hash)}": a key belongs to exactly one school`,
    }));
}

const COURSE_COLUMNS = [
  "school_id",
  "id",
  "name",
  "name_folded",
  "start_ms",
  "end_ms",
  "classroom",
  "classroom_folded",
  "creator_id",
  "training_id",
  "archived",
  "absences_sent",
  "created_at",
  "updated_at",
  "version",
];

/**
 * The upsert of a stored course. Its version was raised by one already if the batch changes
 * it (it is then in `import_course_states`); a file that states a higher one (an export's)
 * raises it to that: a version never goes back, and an unchanged course keeps its own.
 */
const COURSE_CONFLICT =
  "ON CONFLICT(school_id, id) DO UPDATE SET name = excluded.name, name_folded = excluded.name_folded, start_ms = excluded.start_ms, end_ms = excluded.end_ms, classroom = excluded.classroom, classroom_folded = excluded.classroom_folded, creator_id = excluded.creator_id, training_id = excluded.training_id, archived = excluded.archived, absences_sent = excluded.absences_sent, " +
  "version = CASE WHEN EXISTS (SELECT 1 FROM import_course_states s WHERE s.school_id = excluded.school_id AND s.course_id = excluded.id) THEN max(courses.version, excluded.version) ELSE courses.version END";

/**
 * A course's content as the import file states it, in the shape `STORED_STATE` renders the
 * stored course: equal strings ⇔ the import changes nothing in the course. Timestamps are
 * left out: `version` counts changes of the record's content.
 */
function importedState(c: ImportCourse): string {
  const ids = (list: string[]) => [...new Set(list)].sort();
  // A professor listed twice keeps its last flags, as the upsert does.
  const professors = [...new Map(c.professors.map((p) => [p.professorId, p])).values()]
    .sort((a, b) => (a.professorId < b.professorId ? -1 : a.professorId > b.professorId ? 1 : 0))
    .map((p) => [p.professorId, bool(p.coTeacher), bool(p.signed)]);
  return JSON.stringify([
    c.name,
    c.startDateTime,
    c.endDateTime,
    c.classroom ?? null,
    c.creatorId ?? null,
    c.trainingId ?? null,
    bool(c.archived),
    bool(c.absencesSent),
    ids(c.groupIds),
    ids(c.studentIds),
    ids(c.surveyTemplateIds),
    professors,
  ]);
}

const storedIds = (table: string, column: string) =>
  `json((SELECT json_group_array(${column}) FROM (SELECT ${column} FROM ${table} r WHERE r.school_id = c.school_id AND r.course_id = c.id ORDER BY ${column})))`;

/** SQL rendering of a stored course `c` in the shape of `importedState` (`json()` keeps nested arrays JSON across subqueries). */
const STORED_STATE = `json_array(c.name, c.start_ms, c.end_ms, c.classroom, c.creator_id, c.training_id, c.archived, c.absences_sent,
  ${storedIds("course_groups", "group_id")}, ${storedIds("course_students", "student_id")}, ${storedIds("course_survey_templates", "survey_template_id")},
  json((SELECT json_group_array(json_array(professor_id, co_teacher, signed)) FROM (SELECT professor_id, co_teacher, signed FROM course_professors r WHERE r.school_id = c.school_id AND r.course_id = c.id ORDER BY professor_id))))`;

/**
 * What an import publishes for the courses it changed (src/events/import-events.ts builds
 * it; the import script always passes one, the tests' fixture loader only when asked): the
 * steps run, in the batch that changed them, once the changed courses are written and
 * numbered — `import_course_states` then holds exactly them, `state` `''` for a course new
 * to the shard, else the JSON `{"trainingId","groupIds","professorIds"}` of its filter keys
 * before the change. Called once per batch with the batch's schools.
 */
export type ImportPublish = (schoolIds: readonly string[]) => ImportStep[];

/** The filter keys of a stored course `c` before the change, as a JSON object (ids ascending). */
const STORED_KEYS = `json_object('trainingId', c.training_id, 'groupIds', ${storedIds("course_groups", "group_id")},
  'professorIds', ${storedIds("course_professors", "professor_id")})`;

/**
 * Upserts of courses and the replacement of their relation lists, preceded by the version
 * step and followed by the change numbers (docs/operations.md § "Data import (operators)"):
 * the imported states are staged in `import_course_states` and those equal to the stored
 * ones dropped, so that it holds exactly the courses the batch changes; each existing one
 * gets `version + 1` (or the file's `version` if higher), `updatedAt` the import's time
 * (unless the file states it) and its `revision` cleared (so that an API write racing the
 * import retries on fresh state), then the rows are written (a new course with the file's
 * `version`, default 1); then each changed course takes a
 * change number of its school's sequence, by course id (`school_changes.seq` raised by as
 * many), and `publish` writes its events. Identical re-imports change nothing.
 */
function courseSteps(list: ImportCourse[], now: number, publish?: ImportPublish): ImportStep[] {
  const row = (c: ImportCourse): Value[] => [
    c.schoolId,
    c.id,
    c.name,
    fold(c.name),
    c.startDateTime,
    c.endDateTime,
    c.classroom ?? null,
    c.classroom == null ? null : fold(c.classroom),
    c.creatorId ?? null,
    c.trainingId ?? null,
    bool(c.archived),
    bool(c.absencesSent),
    c.createdAt ?? now,
    c.updatedAt ?? now,
    c.version ?? 1,
  ];
  const stamped = list.filter((c) => c.createdAt !== undefined && c.updatedAt !== undefined);
  const unstamped = list.filter((c) => !(c.createdAt !== undefined && c.updatedAt !== undefined));
  const steps: ImportStep[] = [
    { kind: "command", sql: () => "DELETE FROM import_course_states" },
    {
      ...upsert(
        "import_course_states",
        ["school_id", "course_id", "state"],
        list.map((c) => [c.schoolId, c.id, importedState(c)]),
        "ON CONFLICT DO UPDATE SET state = excluded.state",
      ),
      scratch: true,
    },
    {
      kind: "command",
      sql: () => `DELETE FROM import_course_states AS s WHERE EXISTS (SELECT 1 FROM courses c
        WHERE c.school_id = s.school_id AND c.id = s.course_id AND json(s.state) IS ${STORED_STATE})`,
    },
    {
      kind: "command",
      sql: () =>
        `UPDATE import_course_states AS s SET state = coalesce((SELECT ${STORED_KEYS} FROM courses c WHERE c.school_id = s.school_id AND c.id = s.course_id), '')`,
    },
    {
      kind: "command",
      sql: (v) => `UPDATE courses SET version = version + 1, revision = NULL, updated_at = ${v(now)}
        WHERE (school_id, id) IN (SELECT school_id, course_id FROM import_course_states WHERE state <> '')`,
    },
    upsert("courses", COURSE_COLUMNS, stamped.map(row), `${COURSE_CONFLICT}, created_at = excluded.created_at, updated_at = excluded.updated_at`),
    upsert("courses", COURSE_COLUMNS, unstamped.map(row), COURSE_CONFLICT),
  ];
  // Replace relation lists: one DELETE per relation table for all the courses of a school.
  const bySchool = new Map<string, string[]>();
  for (const c of list) {
    const ids = bySchool.get(c.schoolId);
    if (ids) ids.push(c.id);
    else bySchool.set(c.schoolId, [c.id]);
  }
  for (const [schoolId, ids] of bySchool) {
    // Cut so that the list, bound or written as a literal, stays far below D1's 100 KB statement.
    for (const batch of cutBatches(ids, { count: 1_000, bytes: 50_000 })) {
      for (const table of ["course_groups", "course_students", "course_professors", "course_survey_templates"]) {
        steps.push({
          kind: "command",
          sql: (v) => `DELETE FROM ${table} WHERE school_id = ${v(schoolId)} AND course_id IN (SELECT value FROM json_each(${v(batch.json)}))`,
        });
      }
    }
  }
  const rel = (table: string, column: string, pick: (c: ImportCourse) => string[]) =>
    upsert(
      table,
      ["school_id", "course_id", column],
      list.flatMap((c) => [...new Set(pick(c))].map((v) => [c.schoolId, c.id, v])),
      "ON CONFLICT DO NOTHING",
    );
  steps.push(
    rel("course_groups", "group_id", (c) => c.groupIds),
    rel("course_students", "student_id", (c) => c.studentIds),
    rel("course_survey_templates", "survey_template_id", (c) => c.surveyTemplateIds),
    upsert(
      "course_professors",
      ["school_id", "course_id", "professor_id", "co_teacher", "signed"],
      list.flatMap((c) => c.professors.map((p) => [c.schoolId, c.id, p.professorId, bool(p.coTeacher), bool(p.signed)])),
      "ON CONFLICT DO UPDATE SET co_teacher = excluded.co_teacher, signed = excluded.signed",
    ),
    ...importedPartsSteps(),
    // Change numbers after the school's last, by course id; then the sequence takes them.
    {
      kind: "command",
      sql: () => `UPDATE courses SET change_seq = n.seq FROM (SELECT s.school_id, s.course_id,
          coalesce((SELECT seq FROM school_changes WHERE school_id = s.school_id), 0) + row_number() OVER (PARTITION BY s.school_id ORDER BY s.course_id) AS seq
        FROM import_course_states s) AS n WHERE courses.school_id = n.school_id AND courses.id = n.course_id`,
    },
    {
      kind: "command",
      sql: () => `INSERT INTO school_changes (school_id, seq) SELECT school_id, count(*) FROM import_course_states WHERE true GROUP BY school_id
        ON CONFLICT(school_id) DO UPDATE SET seq = seq + excluded.seq`,
    },
    ...(publish ? publish([...bySchool.keys()]) : []),
    { kind: "command", sql: () => "DELETE FROM import_course_states" },
  );
  return steps;
}
