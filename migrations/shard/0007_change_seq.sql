CREATE TABLE `school_changes` (
	`school_id` text PRIMARY KEY NOT NULL,
	`seq` integer NOT NULL
);
--> statement-breakpoint
ALTER TABLE `courses` ADD `change_seq` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
CREATE INDEX `courses_school_change_idx` ON `courses` (`school_id`,`change_seq`);--> statement-breakpoint
-- Courses written before the change sequence: numbered per school in the order of their last change.
UPDATE `courses` SET `change_seq` = r.rn FROM (SELECT `school_id`, `id`, row_number() OVER (PARTITION BY `school_id` ORDER BY `updated_at`, `id`) AS rn FROM `courses`) AS r WHERE r.`school_id` = `courses`.`school_id` AND r.`id` = `courses`.`id`;--> statement-breakpoint
INSERT INTO `school_changes` (`school_id`, `seq`) SELECT `school_id`, max(`change_seq`) FROM `courses` GROUP BY `school_id`;
