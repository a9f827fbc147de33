-- The write fence of a move (src/db/move.ts): while a school's row in `held_schools` says
-- `fenced` (a move copies it away) or `gone` (moved away), no outbox row of it can be
-- inserted, so no course write of it commits here (every write that changes a course inserts
-- its events in the same batch, which this aborts whole). The error message carries
-- SCHOOL_MOVING (src/courses/session.ts answers 503 SCHOOL_MOVING).
CREATE TRIGGER `outbox_move_fence` BEFORE INSERT ON `outbox`
WHEN (SELECT `state` FROM `held_schools` WHERE `school_id` = new.`school_id`) IN ('fenced', 'gone')
BEGIN
  SELECT raise(ABORT, 'SCHOOL_MOVING: this school is being moved to another shard');
END;
