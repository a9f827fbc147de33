/**
 * Moving a school to another shard (docs/operations.md § Database shards), as steps over D1
 * bindings that both `npm run shards -- move` and the tests run: fence the school's writes,
 * drain its outbox, copy its rows in batches within D1's limits, verify counts and a
 * checksum per table, switch the directory, delete the old rows. The directory records the
 * last completed step (`schools.move_step`), so a rerun resumes the move where it stopped;
 * `abortMove` undoes one that has not switched yet. Every step is idempotent.
 */
import { getTableConfig, type SQLiteTable } from "drizzle-orm/sqlite-core";
import { utf8Bytes } from "../lib/batches";
import { sha256Hex } from "../lib/crypto";
import { eventBytesMoveStart } from "./event-quota";
import * as shard from "./shard-schema";

/** The directory and the shards (binding → database) a move works on. */
export interface MoveDatabases {
  directory: D1Database;
  shards: Readonly<Record<string, D1Database>>;
}

/** The steps of a move, in order; `schools.move_step` holds the last one completed. */
const MOVE_STEPS = ["fenced", "drained", "copied", "verified", "switched"] as const;
/** A completed step of a move. */
export type MoveStep = (typeof MOVE_STEPS)[number];

/** A refusal that changes nothing: an unknown school or shard, another move under way. */
export class MoveRefused extends Error {
  constructor(message: string) {
    super(message);
    this.name = "MoveRefused";
  }
}

/** The school's rows of a table, their order and how they are written. */
interface TableSpec {
  name: string;
  columns: string[];
  /** The primary key's columns after `school_id` (or the whole key when it does not start with it): the copy's order. */
  order: string[];
  /** Columns left out of the checksum: `published_at` of the outbox (and `payload`, emptied with it), which the old shard's sweep may still set. */
  unchecked: string[];
  /** Whether a row may weigh up to D1's 2 MB (an event, a stored answer): read 20 per page, so a page stays far below an isolate's 128 MB. */
  large: boolean;
  /** The key (a JSON array) the copy and the check start after at `now` (ms); absent: every row. */
  startAfter?: (now: number) => string;
}

function spec(table: SQLiteTable, unchecked: string[] = [], large = false, startAfter?: (now: number) => string): TableSpec {
  const config = getTableConfig(table);
  const key = config.primaryKeys[0]?.columns.map((c) => c.name) ?? config.columns.filter((c) => c.primary).map((c) => c.name);
  // A table keyed by the school alone (`school_changes`) holds one row: ordered by its key.
  const order = key.filter((c) => c !== "school_id");
  return { name: config.name, columns: config.columns.map((c) => c.name), order: order.length > 0 ? order : key, unchecked, large, startAfter };
}

/** Rows per page of a large-rowed table (see `TableSpec.large`). */
const LARGE_PAGE_ROWS = 20;
const pageRowsOf = (t: TableSpec, limits: CopyLimits) => (t.large ? Math.min(LARGE_PAGE_ROWS, limits.pageRows) : limits.pageRows);

/**
 * The tables of a school's rows on a shard, parents first. Every statement of a move reads
 * them through an index led by `school_id` (their primary keys; the outbox's
 * `outbox_school_idx` and `outbox_unpublished_school_idx`), so its cost is the school's rows,
 * not the shard's (test/courses/move-plans.test.ts reads the plans).
 */
const SCHOOL_TABLES: readonly TableSpec[] = [
  spec(shard.trainings),
  spec(shard.groups),
  spec(shard.surveyTemplates),
  spec(shard.students),
  spec(shard.professors),
  spec(shard.courses),
  spec(shard.courseGroups),
  spec(shard.courseStudents),
  spec(shard.courseProfessors),
  spec(shard.courseSurveyTemplates),
  // The school's change sequence goes with its courses: numbers never repeat across a move.
  spec(shard.schoolChanges),
  // The old shard's sweep may still publish or back off these rows while the move runs.
  spec(shard.outbox, ["published_at", "payload", "attempts", "retry_at"], true),
  spec(shard.idempotencyKeys, [], true),
  // The school's count of event bytes today goes with it: a move does not reset its quota.
  // Past days' rows are left to the cron's pruning (which may run between copy and check).
  spec(shard.eventBytes, [], false, eventBytesMoveStart),
];

/**
 * The bounds of a copy: rows read per page, and the bytes of one INSERT's JSON parameter
 * (D1: 2 MB per value, 100 KB per statement's text; each batch is one statement with one
 * bound value, cut by bytes well under the value limit).
 */
interface CopyLimits {
  pageRows: number;
  batchBytes: number;
}

/**
 * 5,000 rows a page: each page costs a request over the D1 HTTP API, whose rate limit bounds a
 * remote move (docs/operations.md § Database shards). Text fields hold at most 200 characters,
 * so a row of these tables stays under about 2 KB and a page under 10 MB, within D1's 50 MB
 * per result.
 */
const COPY_LIMITS: CopyLimits = { pageRows: 5_000, batchBytes: 900_000 };
/** Rows one DELETE of a school's old rows removes (a short statement on the primary). */
const DELETE_ROWS = 5_000;

/** What a move did (or found done). */
export interface MoveOutcome {
  schoolId: string;
  from: string;
  to: string;
  /** `noop`: the school is on `to` already; `moved`: the move completed (maybe resumed). */
  result: "noop" | "moved";
  /** Rows copied per table (of the last copy). */
  rows: Record<string, number>;
}

/** A school's directory row. */
interface SchoolRow {
  id: string;
  shard: string;
  state: string;
  move_from: string | null;
  move_to: string | null;
  move_step: MoveStep | null;
}

async function schoolRow(dbs: MoveDatabases, schoolId: string): Promise<SchoolRow> {
  const row = await dbs.directory.prepare("SELECT id, shard, state, move_from, move_to, move_step FROM schools WHERE id = ?").bind(schoolId).first<SchoolRow>();
  if (!row) throw new MoveRefused(`no school "${schoolId}" in the directory`);
  return row;
}

function shardOf(dbs: MoveDatabases, binding: string): D1Database {
  const d1 = dbs.shards[binding];
  if (!d1) throw new MoveRefused(`no shard "${binding}": the shards are ${Object.keys(dbs.shards).join(", ")}`);
  return d1;
}

const setHeld = (d1: D1Database, schoolId: string, state: string) =>
  d1
    .prepare("INSERT INTO held_schools (school_id, state) VALUES (?, ?) ON CONFLICT(school_id) DO UPDATE SET state = excluded.state")
    .bind(schoolId, state)
    .run();

const setStep = (dbs: MoveDatabases, schoolId: string, step: MoveStep) =>
  dbs.directory.prepare("UPDATE schools SET move_step = ? WHERE id = ?").bind(step, schoolId).run();

/**
 * Step 1, the fence: the directory marks the school `moving` (its course writes answer 503
 * SCHOOL_MOVING from the next request on), then the old shard marks it `fenced` (its trigger
 * refuses the outbox rows of a write already past the directory's check, so no write
 * commits there any more). Reads keep working from the old shard.
 */
async function fence(dbs: MoveDatabases, s: SchoolRow, to: string): Promise<void> {
  await dbs.directory
    .prepare("UPDATE schools SET state = 'moving', move_from = shard, move_to = ?, move_step = NULL WHERE id = ? AND state = 'active'")
    .bind(to, s.id)
    .run();
  await setHeld(shardOf(dbs, s.shard), s.id, "fenced");
  await setStep(dbs, s.id, "fenced");
}

/** Publishes a school's events to its hub and marks them published on `shard`; resolves to how many were (all, unless the hub failed). */
type Publisher = (shard: D1Database, schoolId: string, payloads: string[]) => Promise<number>;

/**
 * Step 2, the drain: with a `publish`er, the school's unpublished outbox rows are published
 * (in the sweep's order: never-failed first, oldest first; 100 at a time) until none is
 * left. Without one (the CLI has no hub), they move unpublished with the school and the
 * sweep publishes them from the new shard; a
 * publish is idempotent by event id, so a row the old shard's sweep publishes meanwhile is
 * a duplicate the hub drops.
 *
 * @throws Error when the hub fails (rerun the move later).
 */
async function drain(from: D1Database, schoolId: string, publish?: Publisher): Promise<void> {
  if (!publish) return;
  for (;;) {
    const { results } = await from
      // The sweep's order, read along the partial index of unpublished rows: no sort of the backlog.
      .prepare(
        "SELECT payload FROM outbox INDEXED BY outbox_unpublished_school_idx WHERE school_id = ? AND published_at IS NULL ORDER BY retry_at, created_at, rowid LIMIT 100",
      )
      .bind(schoolId)
      .all<{ payload: string }>();
    if (results.length === 0) return;
    const published = await publish(
      from,
      schoolId,
      results.map((r) => r.payload),
    );
    if (published < results.length) throw new Error(`the hub of ${schoolId} did not take its events; run the move again`);
  }
}

/** One page of a table's rows of the school, in key order after `after` (a JSON array of the key's values), each as a JSON array of its columns. */
async function page(d1: D1Database, t: TableSpec, schoolId: string, after: string | null, rows: number): Promise<{ rows: string[]; last: string | null }> {
  const key = t.order.map((c) => `"${c}"`).join(", ");
  const keyJson = `json_array(${key})`;
  const afterSql = after === null ? "" : ` AND (${key}) > (SELECT ${t.order.map((_, i) => `json_extract(?2, '$[${i}]')`).join(", ")})`;
  const { results } = await d1
    .prepare(
      `SELECT json_array(${t.columns.map((c) => `"${c}"`).join(", ")}) AS r, ${keyJson} AS k FROM "${t.name}" WHERE school_id = ?1${afterSql} ORDER BY ${key} LIMIT ${rows}`,
    )
    .bind(...(after === null ? [schoolId] : [schoolId, after]))
    .all<{ r: string; k: string }>();
  return { rows: results.map((x) => x.r), last: results.at(-1)?.k ?? null };
}

/** Inserts rows (JSON arrays of the columns) into `t`, one statement per batch of at most `batchBytes` of JSON. */
async function insertRows(d1: D1Database, t: TableSpec, rows: string[], batchBytes: number): Promise<void> {
  const sql = `INSERT INTO "${t.name}" (${t.columns.map((c) => `"${c}"`).join(", ")}) SELECT ${t.columns
    .map((_, i) => `json_extract(value, '$[${i}]')`)
    .join(", ")} FROM json_each(?)`;
  const batches: string[][] = [];
  let bytes = 0;
  for (const r of rows) {
    const size = utf8Bytes(r) + 1;
    if (batches.length === 0 || bytes + size > batchBytes) {
      batches.push([]);
      bytes = 0;
    }
    batches.at(-1)!.push(r);
    bytes += size;
  }
  if (batches.length > 0) await d1.batch(batches.map((b) => d1.prepare(sql).bind(`[${b.join(",")}]`)));
}

/** Deletes the school's rows of every table of `d1`, DELETE_ROWS rows per statement. */
async function deleteSchool(d1: D1Database, schoolId: string): Promise<void> {
  for (const t of [...SCHOOL_TABLES].reverse()) {
    for (;;) {
      const r = await d1
        .prepare(`DELETE FROM "${t.name}" WHERE rowid IN (SELECT rowid FROM "${t.name}" WHERE school_id = ? LIMIT ${DELETE_ROWS})`)
        .bind(schoolId)
        .run();
      if ((r.meta.changes ?? 0) < DELETE_ROWS) break;
    }
  }
}

/**
 * Step 3, the copy: the target's rows of the school (a copy interrupted before) are deleted,
 * the target marks the school `incoming` (not readable), then every table is copied page by
 * page in key order.
 *
 * @returns rows copied per table.
 */
async function copy(from: D1Database, to: D1Database, schoolId: string, limits: CopyLimits): Promise<Record<string, number>> {
  await setHeld(to, schoolId, "incoming");
  await deleteSchool(to, schoolId);
  const counts: Record<string, number> = {};
  for (const t of SCHOOL_TABLES) {
    let copied = 0;
    let after = t.startAfter?.(Date.now()) ?? null;
    for (;;) {
      const p = await page(from, t, schoolId, after, pageRowsOf(t, limits));
      await insertRows(to, t, p.rows, limits.batchBytes);
      copied += p.rows.length;
      counts[t.name] = copied;
      if (p.rows.length < pageRowsOf(t, limits)) break;
      after = p.last;
    }
  }
  return counts;
}

/** Count and checksum of the school's rows of a table: SHA-256 over the pages of its checked columns, in key order. */
async function digest(d1: D1Database, t: TableSpec, schoolId: string, limits: CopyLimits): Promise<{ rows: number; sha256: string }> {
  const checked = { ...t, columns: t.columns.filter((c) => !t.unchecked.includes(c)) };
  let rows = 0;
  let sum = "";
  let after = t.startAfter?.(Date.now()) ?? null;
  for (;;) {
    const p = await page(d1, checked, schoolId, after, pageRowsOf(t, limits));
    rows += p.rows.length;
    sum = await sha256Hex(`${sum}\n${p.rows.join("\n")}`);
    if (p.rows.length < pageRowsOf(t, limits)) return { rows, sha256: sum };
    after = p.last;
  }
}

/**
 * Step 4, the check: every table's count and checksum equal on both shards.
 *
 * @throws Error naming the first table that differs (run the move again: it copies again).
 */
async function verify(from: D1Database, to: D1Database, schoolId: string, limits: CopyLimits): Promise<void> {
  for (const t of SCHOOL_TABLES) {
    const [a, b] = [await digest(from, t, schoolId, limits), await digest(to, t, schoolId, limits)];
    if (a.rows !== b.rows || a.sha256 !== b.sha256) {
      throw new Error(`${t.name}: the copy differs (${a.rows} rows, ${a.sha256.slice(0, 12)} ≠ ${b.rows} rows, ${b.sha256.slice(0, 12)}); run the move again`);
    }
  }
}

/**
 * Step 5, the switch: the target marks the school `active`, the directory names the target
 * (writes resume there), then the old shard marks it `gone` (reads there are repeated on the
 * shard the directory names; a late write is refused by the fence).
 */
async function switchShard(dbs: MoveDatabases, schoolId: string, from: string, to: string): Promise<void> {
  await setHeld(shardOf(dbs, to), schoolId, "active");
  await dbs.directory.prepare("UPDATE schools SET shard = ?, state = 'active', move_step = 'switched' WHERE id = ?").bind(to, schoolId).run();
  await setHeld(shardOf(dbs, from), schoolId, "gone");
}

/**
 * Step 6: the old shard marks the school `gone` (again: a switch may have stopped before
 * it), then its old rows are deleted and the move's record cleared. The mark comes first on
 * every path, a resumed move and `abortMove` included, so that no read answers a page of
 * rows being deleted and `shardSize` no longer counts the school there.
 */
async function finish(dbs: MoveDatabases, schoolId: string, from: string): Promise<void> {
  const old = shardOf(dbs, from);
  await setHeld(old, schoolId, "gone");
  await deleteSchool(old, schoolId);
  await dbs.directory.prepare("UPDATE schools SET move_from = NULL, move_to = NULL, move_step = NULL WHERE id = ?").bind(schoolId).run();
}

/** Options of `moveSchool`. */
export interface MoveOptions {
  /** Publishes the drained outbox rows (the Worker's hubs); without it they move unpublished. */
  publish?: Publisher;
  /** Called after each completed step (tests interleave requests there; the CLI prints). */
  onStep?: (step: MoveStep | "deleted") => Promise<void> | void;
  limits?: Partial<CopyLimits>;
}

/**
 * Moves `schoolId` to the shard `to`, or finishes a move to `to` that was interrupted.
 *
 * @returns `noop` when the school is on `to` with no move under way, else `moved`.
 * @throws MoveRefused (nothing changed) for an unknown school or shard, or when a move to
 *   another shard is under way (finish it, or `abortMove` it first); Error when a step
 *   fails (the move stays resumable: run it again).
 */
export async function moveSchool(dbs: MoveDatabases, schoolId: string, to: string, opts: MoveOptions = {}): Promise<MoveOutcome> {
  const limits = { ...COPY_LIMITS, ...opts.limits };
  const s = await schoolRow(dbs, schoolId);
  const target = shardOf(dbs, to);
  if (s.move_to !== null && s.move_to !== to) {
    throw new MoveRefused(`school "${schoolId}" is being moved to ${s.move_to}: finish that move (--to ${s.move_to}) or undo it (--abort) first`);
  }
  if (s.move_step === null && s.shard === to) return { schoolId, from: to, to, result: "noop", rows: {} };
  const from = s.move_from ?? s.shard;
  const source = shardOf(dbs, from);
  const done = (step: MoveStep) => s.move_step !== null && MOVE_STEPS.indexOf(s.move_step) >= MOVE_STEPS.indexOf(step);
  const step = async (name: MoveStep | "deleted") => {
    await opts.onStep?.(name);
  };
  let rows: Record<string, number> = {};
  if (!done("fenced")) {
    await fence(dbs, s, to);
    await step("fenced");
  }
  if (!done("drained")) {
    await drain(source, schoolId, opts.publish);
    await setStep(dbs, schoolId, "drained");
    await step("drained");
  }
  if (!done("copied")) {
    rows = await copy(source, target, schoolId, limits);
    await setStep(dbs, schoolId, "copied");
    await step("copied");
  }
  if (!done("verified")) {
    await verify(source, target, schoolId, limits);
    await setStep(dbs, schoolId, "verified");
    await step("verified");
  }
  if (!done("switched")) {
    await switchShard(dbs, schoolId, from, to);
    await step("switched");
  }
  await finish(dbs, schoolId, from);
  await step("deleted");
  return { schoolId, from, to, result: "moved", rows };
}

/**
 * Undoes a move that has not switched yet: the target's copy is deleted, the old shard
 * holds the school `active` again and the directory lifts the fence. A move that switched
 * already is finished instead (its old rows deleted).
 *
 * @returns what was undone: `none` (no move under way), `undone` or `finished`.
 * @throws MoveRefused for an unknown school.
 */
export async function abortMove(dbs: MoveDatabases, schoolId: string): Promise<"none" | "undone" | "finished"> {
  const s = await schoolRow(dbs, schoolId);
  if (s.move_to === null) return "none";
  const from = s.move_from ?? s.shard;
  if (s.move_step === "switched") {
    await finish(dbs, schoolId, from);
    return "finished";
  }
  const target = shardOf(dbs, s.move_to);
  await deleteSchool(target, schoolId);
  await target.prepare("DELETE FROM held_schools WHERE school_id = ?").bind(schoolId).run();
  await setHeld(shardOf(dbs, from), schoolId, "active");
  await dbs.directory.prepare("UPDATE schools SET state = 'active', move_from = NULL, move_to = NULL, move_step = NULL WHERE id = ?").bind(schoolId).run();
  return "undone";
}
