DROP INDEX `courses_school_name_idx`;--> statement-breakpoint
DROP INDEX `courses_school_classroom_folded_idx`;--> statement-breakpoint
CREATE INDEX `courses_school_name_start_idx` ON `courses` (`school_id`,`name_folded`,`start_ms`);--> statement-breakpoint
CREATE INDEX `courses_school_classroom_start_idx` ON `courses` (`school_id`,`classroom_folded`,`start_ms`);