-- The `name` filter's trigram index (src/courses/query.ts `nameCondition`): an FTS5 table
-- over the folded name, its content read from `courses` by rowid, kept in sync by triggers.
-- case_sensitive 1: the names are folded already; instr() on the folded name decides.
-- `courses` has no INTEGER PRIMARY KEY, so a VACUUM may renumber its rowids: after one (or a
-- restore), run INSERT INTO courses_name_fts(courses_name_fts) VALUES ('rebuild').
CREATE VIRTUAL TABLE `courses_name_fts` USING fts5(`name_folded`, content='courses', content_rowid='rowid', tokenize='trigram case_sensitive 1');
--> statement-breakpoint
CREATE TRIGGER `courses_name_fts_insert` AFTER INSERT ON `courses` BEGIN
  INSERT INTO `courses_name_fts`(rowid, `name_folded`) VALUES (new.rowid, new.`name_folded`);
END;
--> statement-breakpoint
CREATE TRIGGER `courses_name_fts_delete` AFTER DELETE ON `courses` BEGIN
  INSERT INTO `courses_name_fts`(`courses_name_fts`, rowid, `name_folded`) VALUES ('delete', old.rowid, old.`name_folded`);
END;
--> statement-breakpoint
CREATE TRIGGER `courses_name_fts_update` AFTER UPDATE OF `name_folded` ON `courses` BEGIN
  INSERT INTO `courses_name_fts`(`courses_name_fts`, rowid, `name_folded`) VALUES ('delete', old.rowid, old.`name_folded`);
  INSERT INTO `courses_name_fts`(rowid, `name_folded`) VALUES (new.rowid, new.`name_folded`);
END;
--> statement-breakpoint
-- Per trigram, how many courses hold it: the page statement reads it to choose between the
-- trigram index and a walk in the requested order (src/courses/query.ts `namePageRowids`).
CREATE VIRTUAL TABLE `courses_name_vocab` USING fts5vocab(`courses_name_fts`, 'row');
