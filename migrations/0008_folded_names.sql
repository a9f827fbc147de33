ALTER TABLE `professors` ADD `first_name_folded` text DEFAULT '' NOT NULL;--> statement-breakpoint
ALTER TABLE `professors` ADD `last_name_folded` text DEFAULT '' NOT NULL;--> statement-breakpoint
ALTER TABLE `students` ADD `first_name_folded` text DEFAULT '' NOT NULL;--> statement-breakpoint
ALTER TABLE `students` ADD `last_name_folded` text DEFAULT '' NOT NULL;--> statement-breakpoint
ALTER TABLE `survey_templates` ADD `name_folded` text DEFAULT '' NOT NULL;--> statement-breakpoint
-- Fill the folded keys of existing rows. SQLite's lower() folds ASCII only, so this is
-- exactly fold() (src/lib/text.ts) for ASCII texts; a text with other characters gets its
-- exact key when its row is written again (importing the same file again rewrites every
-- key: src/db/import-rows.ts); until then such a person or template may be listed out of
-- place in a course's includes (`Élodie` after `Zoé`).
UPDATE `students` SET `first_name_folded` = lower(`first_name`), `last_name_folded` = lower(`last_name`);
--> statement-breakpoint
UPDATE `professors` SET `first_name_folded` = lower(`first_name`), `last_name_folded` = lower(`last_name`);
--> statement-breakpoint
UPDATE `survey_templates` SET `name_folded` = lower(`name`);
