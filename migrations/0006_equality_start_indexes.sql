DROP INDEX `courses_school_archived_idx`;--> statement-breakpoint
DROP INDEX `courses_school_absences_idx`;--> statement-breakpoint
DROP INDEX `courses_school_classroom_idx`;--> statement-breakpoint
DROP INDEX `courses_school_creator_idx`;--> statement-breakpoint
DROP INDEX `courses_school_training_idx`;--> statement-breakpoint
CREATE INDEX `courses_school_name_start_desc_idx` ON `courses` (`school_id`,`name_folded`,"start_ms" desc,`id`);--> statement-breakpoint
CREATE INDEX `courses_school_archived_idx` ON `courses` (`school_id`,`archived`,`start_ms`,`id`);--> statement-breakpoint
CREATE INDEX `courses_school_absences_idx` ON `courses` (`school_id`,`absences_sent`,`start_ms`,`id`);--> statement-breakpoint
CREATE INDEX `courses_school_classroom_idx` ON `courses` (`school_id`,`classroom`,`start_ms`,`id`);--> statement-breakpoint
CREATE INDEX `courses_school_creator_idx` ON `courses` (`school_id`,`creator_id`,`start_ms`,`id`);--> statement-breakpoint
CREATE INDEX `courses_school_training_idx` ON `courses` (`school_id`,`training_id`,`start_ms`,`id`);