/**
 * The events of a data import (docs/operations.md § "Data import (operators)"): one
 * `course.created` (a course new to the database) or `course.updated` per course an import
 * batch changed, written to the outbox in that batch, so that the cron sweep publishes them
 * like a write's (src/events/outbox.ts) and a crash mid-import loses none. Each body is the
 * JSON a write of the same state publishes — `{id, changeCursor, type, createdAt, schoolId,
 * data: {course}}` with the record of src/courses/record.ts — built in SQL from the stored
 * course, plus `previous` (the filter keys before the change) for a changed course.
 */
import { SQLiteSyncDialect } from "drizzle-orm/sqlite-core";
import { courseRecordJson } from "../courses/record";
import { countImportEventBytes } from "../db/import-quota";
import type { ImportPublish } from "../db/import-rows";
import type { ImportStep } from "../db/import-sql";
import { changeCursorSql } from "../lib/change-cursor";
import { numberedIdSql } from "../lib/ids";
import { IMPORT_EVENT_BYTES_PER_DAY } from "../lib/limits";
import { formatInstant } from "../lib/time";

/** The course record as events carry it (no includes), as SQL text of the `courses` row in scope. */
const RECORD = new SQLiteSyncDialect().sqlToQuery(courseRecordJson({ students: false, teachers: false, surveyTemplates: false, training: false })).sql;

/** Bytes of `,"previous":` before a change's filter keys in a stored body, which the delivered body leaves out. */
const PREVIOUS_KEY_BYTES = 12;

/**
 * The events of an import started at `now` (`ImportPublish` of src/db/import-rows.ts), for
 * every batch of that import: per school of a batch, one INSERT of its changed courses'
 * events in change order (the batch numbers them by course id), then their bytes counted
 * (`countImportEventBytes`). Event ids are `numberedIdSql`'s, the same random part for a
 * school throughout the import, so that its events' ids sort in change order.
 *
 * @param now ms since the epoch: the events' `createdAt`, the UTC day they are counted on and
 *   the time part of their ids. Outbox rows take the database's clock at their batch
 *   (`created_at`: the sweep takes them 30 s after they commit, in commit order).
 * @param bound the import bound of event bytes per school and UTC day (bytes).
 */
export function importEvents(now: number, bound = IMPORT_EVENT_BYTES_PER_DAY): ImportPublish {
  const ids = new Map<string, string>();
  const createdAt = formatInstant(now);
  return (schoolIds) =>
    schoolIds.flatMap((schoolId): ImportStep[] => {
      let id = ids.get(schoolId);
      if (id === undefined) {
        id = numberedIdSql("evt", now, `"courses"."change_seq"`);
        ids.set(schoolId, id);
      }
      // CROSS JOIN: SQLite walks the batch's courses (the scratch table's), never the school's.
      const changed = "import_course_states s CROSS JOIN courses ON courses.school_id = s.school_id AND courses.id = s.course_id";
      return [
        {
          kind: "command",
          sql: (v) => `INSERT INTO outbox (event_id, school_id, payload, created_at)
            SELECT e.id, e.school_id, concat('{"id":"', e.id, '","changeCursor":', json_quote(e.cursor), ',"type":"', e.type, '","createdAt":"${createdAt}","schoolId":',
              json_quote(e.school_id), ',"data":{"course":', e.record, '}', e.previous, '}'), CAST(unixepoch('subsec') * 1000 AS INTEGER)
            FROM (SELECT ${id} AS id, courses.school_id, s.course_id, ${changeCursorSql(`"courses"."change_seq"`)} AS cursor,
                iif(s.state = '', 'course.created', 'course.updated') AS type, ${RECORD} AS record,
                iif(s.state = '', '', ',"previous":' || s.state) AS previous
              FROM ${changed} WHERE s.school_id = ${v(schoolId)}) AS e ORDER BY e.course_id`,
        },
        countImportEventBytes(
          schoolId,
          (v) => `(SELECT sum(octet_length(o.payload) - iif(s.state = '', 0, ${PREVIOUS_KEY_BYTES} + octet_length(s.state)))
            FROM ${changed} JOIN outbox o ON o.event_id = ${id} WHERE s.school_id = ${v(schoolId)})`,
          now,
          bound,
        ),
      ];
    });
}
