/**
 * A shard's D1 schema (bindings SHARD_0, SHARD_1, …; drizzle-orm, SQLite dialect): the
 * course data of the schools the directory places on it (docs/reference.md § Database
 * shards). Migrations: `npm run db:generate` (drizzle.shard.config.ts) into migrations/shard/.
 *
 * Every school-owned table has the primary key `(school_id, id)`, so every index is led by
 * the school; instants are INTEGER milliseconds since the epoch (UTC); booleans INTEGER 0/1.
 * `*_folded` columns hold `fold()` of src/lib/text.ts, written by every write path, for the
 * `name` filter, the sorts and the order of nested lists (docs/architecture.md § Course
 * reads: one round trip).
 */
import { sql } from "drizzle-orm";
import { check, index, integer, primaryKey, sqliteTable, text } from "drizzle-orm/sqlite-core";

/**
 * The schools this shard holds, and whether their course writes may commit here: `active`
 * (the school's shard), `fenced` (a move copies it away: a trigger refuses its outbox rows,
 * so no course write commits), `incoming` (a move copies it here; not yet readable), `gone`
 * (moved away: not readable, writes refused, its rows being deleted). A read
 * answers only from a shard whose row says `active` or `fenced`, in the same batch as its
 * page (src/db/shards.ts), so no read answers from a shard that does not hold the school.
 */
export const heldSchools = sqliteTable("held_schools", {
  schoolId: text("school_id").primaryKey(),
  state: text("state", { enum: ["active", "fenced", "incoming", "gone"] }).notNull(),
});

const namedColumns = () => ({
  schoolId: text("school_id").notNull(),
  id: text("id").notNull(),
  name: text("name").notNull(),
});

const named = (table: string) => sqliteTable(table, namedColumns(), (t) => [primaryKey({ columns: [t.schoolId, t.id] })]);

/** Trainings (a course belongs to at most one). */
export const trainings = named("trainings");
/** Student groups (classes). */
export const groups = named("groups");
/** Survey templates attachable to courses. */
export const surveyTemplates = sqliteTable(
  "survey_templates",
  {
    ...namedColumns(),
    /** `fold(name)`: the order of included survey templates. */
    nameFolded: text("name_folded").notNull().default(""),
  },
  (t) => [primaryKey({ columns: [t.schoolId, t.id] })],
);

const people = (table: string) =>
  sqliteTable(
    table,
    {
      schoolId: text("school_id").notNull(),
      id: text("id").notNull(),
      firstName: text("first_name").notNull(),
      lastName: text("last_name").notNull(),
      email: text("email").notNull(),
      /** `fold(firstName)`, `fold(lastName)`: the order of included students and teachers. */
      firstNameFolded: text("first_name_folded").notNull().default(""),
      lastNameFolded: text("last_name_folded").notNull().default(""),
    },
    (t) => [primaryKey({ columns: [t.schoolId, t.id] })],
  );

/** Students. */
export const students = people("students");
/** Professors (teachers). */
export const professors = people("professors");

/** Courses. Instants in ms since epoch. */
export const courses = sqliteTable(
  "courses",
  {
    schoolId: text("school_id").notNull(),
    id: text("id").notNull(),
    name: text("name").notNull(),
    nameFolded: text("name_folded").notNull(),
    startMs: integer("start_ms").notNull(),
    endMs: integer("end_ms").notNull(),
    classroom: text("classroom"),
    classroomFolded: text("classroom_folded"),
    creatorId: text("creator_id"),
    trainingId: text("training_id"),
    archived: integer("archived", { mode: "boolean" }).notNull().default(false),
    absencesSent: integer("absences_sent", { mode: "boolean" }).notNull().default(false),
    createdAt: integer("created_at").notNull(),
    updatedAt: integer("updated_at").notNull(),
    /**
     * Id of the last API write (null after an import). Writes are compare-and-set on it, so
     * a concurrent PATCH is retried on fresh state instead of overwriting it.
     */
    revision: text("revision"),
    /**
     * The course's version (docs/reference.md § "Course record"): 1 at creation or first import, +1 per
     * committed change. `revision` stays the compare-and-set token: two racing writes from
     * version n would both write n + 1, so the guard needs a token unique per write.
     */
    version: integer("version").notNull().default(1),
    /**
     * The school's change sequence number of the course's latest committed change
     * (`schoolChanges`; docs/reference.md § "GET /v3/courses/changes"): set in the batch of
     * every write or import that changes the course, so the change query walks
     * `courses_school_change_idx` from a cursor.
     */
    changeSeq: integer("change_seq").notNull().default(0),
  },
  (t) => [
    primaryKey({ columns: [t.schoolId, t.id] }),
    // Default order and the courseStartDateTime filter.
    index("courses_school_start_idx").on(t.schoolId, t.startMs, t.id),
    index("courses_school_end_idx").on(t.schoolId, t.endMs),
    // Equality filters, each in the default order (start, id): SQLite walks the filter's
    // courses in the requested order and stops at the page, and a second equality filter
    // (archived + classroom, …) is checked on the rows walked instead of sorting them.
    index("courses_school_archived_idx").on(t.schoolId, t.archived, t.startMs, t.id),
    index("courses_school_absences_idx").on(t.schoolId, t.absencesSent, t.startMs, t.id),
    index("courses_school_classroom_idx").on(t.schoolId, t.classroom, t.startMs, t.id),
    index("courses_school_creator_idx").on(t.schoolId, t.creatorId, t.startMs, t.id),
    index("courses_school_training_idx").on(t.schoolId, t.trainingId, t.startMs, t.id),
    index("courses_school_created_idx").on(t.schoolId, t.createdAt),
    index("courses_school_updated_idx").on(t.schoolId, t.updatedAt),
    // Search sorts by folded name / classroom, then start (walk in order, stop at the page).
    index("courses_school_name_start_idx").on(t.schoolId, t.nameFolded, t.startMs),
    index("courses_school_classroom_start_idx").on(t.schoolId, t.classroomFolded, t.startMs),
    // `name` then `startDateTime` descending (then id): the mixed-direction sort of a long
    // id-list search walks this in order instead of sorting every course of the first names.
    index("courses_school_name_start_desc_idx").on(t.schoolId, t.nameFolded, sql`${t.startMs} desc`, t.id),
    // The change query: a school's courses in change order, from a cursor.
    index("courses_school_change_idx").on(t.schoolId, t.changeSeq),
  ],
);

/**
 * Each school's change sequence (docs/reference.md § "GET /v3/courses/changes"): `seq` is the
 * number of the school's last committed course change. A write or an import raises it in
 * its own batch and stamps each course it changes with a number of its own
 * (`courses.change_seq`), so numbers never repeat, even when courses leave the school's
 * shard; a move copies the row with the school's other rows (src/db/move.ts).
 */
export const schoolChanges = sqliteTable("school_changes", {
  schoolId: text("school_id").primaryKey(),
  seq: integer("seq").notNull(),
});

/** course ↔ group. */
export const courseGroups = sqliteTable(
  "course_groups",
  {
    schoolId: text("school_id").notNull(),
    courseId: text("course_id").notNull(),
    groupId: text("group_id").notNull(),
  },
  (t) => [primaryKey({ columns: [t.schoolId, t.courseId, t.groupId] }), index("course_groups_group_idx").on(t.schoolId, t.groupId, t.courseId)],
);

/** course ↔ student (enrolment). */
export const courseStudents = sqliteTable(
  "course_students",
  {
    schoolId: text("school_id").notNull(),
    courseId: text("course_id").notNull(),
    studentId: text("student_id").notNull(),
  },
  (t) => [primaryKey({ columns: [t.schoolId, t.courseId, t.studentId] }), index("course_students_student_idx").on(t.schoolId, t.studentId, t.courseId)],
);

/** course ↔ professor, with co-teaching and signature flags. */
export const courseProfessors = sqliteTable(
  "course_professors",
  {
    schoolId: text("school_id").notNull(),
    courseId: text("course_id").notNull(),
    professorId: text("professor_id").notNull(),
    coTeacher: integer("co_teacher", { mode: "boolean" }).notNull().default(false),
    signed: integer("signed", { mode: "boolean" }).notNull().default(false),
  },
  (t) => [
    primaryKey({ columns: [t.schoolId, t.courseId, t.professorId] }),
    index("course_professors_professor_idx").on(t.schoolId, t.professorId, t.courseId),
    // professorSignatureMissing: courses with at least one unsigned professor.
    index("course_professors_unsigned_idx").on(t.schoolId, t.signed, t.courseId),
  ],
);

/** course ↔ survey template. */
export const courseSurveyTemplates = sqliteTable(
  "course_survey_templates",
  {
    schoolId: text("school_id").notNull(),
    courseId: text("course_id").notNull(),
    surveyTemplateId: text("survey_template_id").notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.schoolId, t.courseId, t.surveyTemplateId] }),
    // A survey template's courses, whose stored parts its rename makes stale.
    index("course_survey_templates_template_idx").on(t.schoolId, t.surveyTemplateId, t.courseId),
  ],
);

/**
 * The included lists of each course's record, stored (docs/architecture.md § Course reads):
 * one row per course and `part` — `students`, `teachers`, `surveyTemplates`, the record's
 * keys — whose `json` is the list's JSON text exactly as the record embeds it, so that a page
 * concatenates it instead of building it (src/courses/record.ts). One row per part, so a row
 * is at most one list (D1: 2,000,000 bytes per row). Rebuilt in the batch of every write that
 * changes what a part shows: course writes, imports, renames (through `coursePartsStale`).
 */
export const courseParts = sqliteTable(
  "course_parts",
  {
    schoolId: text("school_id").notNull(),
    courseId: text("course_id").notNull(),
    part: text("part", { enum: ["students", "teachers", "surveyTemplates"] }).notNull(),
    /** The list's JSON text (`[]` when empty). */
    json: text("json").notNull(),
  },
  (t) => [primaryKey({ columns: [t.schoolId, t.courseId, t.part] })],
);

/**
 * Parts to rebuild: filled by the triggers of migrations/shard/0008_record_parts.sql when a
 * student, professor or survey template changes what the parts show (a rename), and emptied
 * by the rebuild that every batch updating those tables ends with (src/db/import-rows.ts),
 * so that it is empty between batches. A course listing several renamed people is rebuilt once.
 */
export const coursePartsStale = sqliteTable(
  "course_parts_stale",
  {
    part: text("part", { enum: ["students", "teachers", "surveyTemplates"] }).notNull(),
    schoolId: text("school_id").notNull(),
    courseId: text("course_id").notNull(),
  },
  (t) => [primaryKey({ columns: [t.part, t.schoolId, t.courseId] })],
);

/**
 * Transactional outbox (docs/architecture.md § The outbox): events written in the same D1 batch as the course
 * write, marked `published_at` once the school's hub acknowledged them. The sweep finds the
 * schools with due rows in `outbox_schools` (kept by triggers, migrations/shard/0005_outbox_schools_triggers.sql),
 * and each one's due rows through the partial index of unpublished rows by school and retry
 * time; a failed row waits `retry_at` (src/events/outbox.ts). `outbox_school_idx` serves a
 * move's statements over all of a school's rows (src/db/move.ts).
 */
export const outbox = sqliteTable(
  "outbox",
  {
    eventId: text("event_id").primaryKey(),
    schoolId: text("school_id").notNull(),
    /** JSON of the event (see src/events/types.ts); `''` once published (emptied by the statement that sets `published_at`). */
    payload: text("payload").notNull(),
    /**
     * When the row was written, by the Worker's clock (ms since epoch), never the event's
     * `createdAt` (which follows the course's `updatedAt`, imported data included): the sweep
     * takes a never-failed row 30 s after it.
     */
    createdAt: integer("created_at").notNull(),
    publishedAt: integer("published_at"),
    /** Failed publishes of the row by the sweep so far. */
    attempts: integer("attempts").notNull().default(0),
    /** No sweep publishes it again before this instant (ms since epoch); 0: never failed. */
    retryAt: integer("retry_at").notNull().default(0),
  },
  (t) => [
    index("outbox_pending_idx").on(t.publishedAt, t.createdAt),
    // Ends with the rowid (implicit): rows written together keep their order (`ORDER BY …, rowid`).
    index("outbox_unpublished_school_idx").on(t.schoolId, t.retryAt, t.createdAt).where(sql`${t.publishedAt} IS NULL`),
    index("outbox_school_idx").on(t.schoolId, t.eventId),
  ],
);

/**
 * One row per school with unpublished outbox rows, and when its first ones are due: written
 * only by the outbox's triggers (migrations/shard/0005_outbox_schools_triggers.sql) in the
 * statement that changes the outbox, so it always says what the outbox holds. The sweep
 * reads the due schools from its two indexes, oldest first (src/events/outbox.ts
 * `schoolsDue`): its cost is the schools it takes, however many others back off.
 */
export const outboxSchools = sqliteTable(
  "outbox_schools",
  {
    schoolId: text("school_id").primaryKey(),
    /** The oldest `created_at` of the school's never-failed unpublished rows (ms since epoch); null when none. */
    freshAt: integer("fresh_at"),
    /** The earliest `retry_at` of the school's unpublished rows that failed before (ms since epoch); null when none. */
    retryAt: integer("retry_at"),
  },
  (t) => [
    index("outbox_schools_fresh_idx").on(t.freshAt, t.schoolId).where(sql`${t.freshAt} IS NOT NULL`),
    index("outbox_schools_retry_idx").on(t.retryAt, t.schoolId).where(sql`${t.retryAt} IS NOT NULL`),
  ],
);

/**
 * The write bytes of each school per UTC day (docs/reference.md § "Event quota";
 * src/db/event-quota.ts): every course write adds the UTF-8 bytes of the events it
 * publishes (`bytes`) and the bytes it stores (`stored_bytes`), in the batch that writes the
 * course and its outbox rows, and stores the deployment's `EVENT_BYTES_PER_DAY` in force as
 * `quota`. The CHECK refuses a total (`bytes + stored_bytes`) over it,
 * which aborts that batch whole: nothing written, no event. Imports count theirs apart
 * (`import_bytes`, against `import_bound`). The cron prunes the days before today through
 * `event_bytes_day_idx`.
 */
export const eventBytes = sqliteTable(
  "event_bytes",
  {
    schoolId: text("school_id").notNull(),
    /** The UTC day: whole days since 1970-01-01 (`floor(ms / 86,400,000)`). */
    day: integer("day").notNull(),
    /** UTF-8 bytes of the event bodies the school's writes published that day. */
    bytes: integer("bytes").notNull(),
    /** The daily quota (bytes) in force at the day's last counted write. */
    quota: integer("quota").notNull(),
    /** Bytes the school's writes stored that day: rows and record parts at their index factors (`STORED_FACTOR`, src/db/event-quota.ts). */
    storedBytes: integer("stored_bytes").notNull().default(0),
    /** UTF-8 bytes of the event bodies the school's imports published that day: counted apart, never against `quota`. */
    importBytes: integer("import_bytes").notNull().default(0),
    /** The import bound (bytes; `IMPORT_EVENT_BYTES_PER_DAY`) in force at the day's last counted import. */
    importBound: integer("import_bound").notNull().default(0),
  },
  (t) => [
    primaryKey({ columns: [t.schoolId, t.day] }),
    index("event_bytes_day_idx").on(t.day),
    check("event_bytes_within_quota", sql`bytes + stored_bytes <= quota`),
    check("event_bytes_import_within_bound", sql`import_bytes <= import_bound`),
  ],
);

/**
 * Scratch table of the import (src/db/import-rows.ts): each imported course's content, so
 * that one statement can raise the version of exactly the courses the import changes.
 * Emptied at the start and end of each import batch.
 */
export const importCourseStates = sqliteTable(
  "import_course_states",
  {
    schoolId: text("school_id").notNull(),
    courseId: text("course_id").notNull(),
    /** JSON array of the course's content (`importedState`). */
    state: text("state").notNull(),
  },
  (t) => [primaryKey({ columns: [t.schoolId, t.courseId] })],
);

/**
 * Idempotency keys of POST /v3/courses (src/db/idempotency.ts): the first response of each
 * key, written in the same batch as the course, kept 24 h (pruned by the cron).
 */
export const idempotencyKeys = sqliteTable(
  "idempotency_keys",
  {
    schoolId: text("school_id").notNull(),
    key: text("key").notNull(),
    /** SHA-256 hex of the first request's JSON body. */
    requestHash: text("request_hash").notNull(),
    status: integer("status").notNull(),
    /** The first response's exact body text. */
    body: text("body").notNull(),
    location: text("location"),
    /** ms since epoch. */
    createdAt: integer("created_at").notNull(),
  },
  (t) => [primaryKey({ columns: [t.schoolId, t.key] }), index("idempotency_keys_created_idx").on(t.createdAt)],
);
