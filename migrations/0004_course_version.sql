CREATE TABLE `import_course_states` (
	`school_id` text NOT NULL,
	`course_id` text NOT NULL,
	`state` text NOT NULL,
	PRIMARY KEY(`school_id`, `course_id`)
);
--> statement-breakpoint
ALTER TABLE `courses` ADD `version` integer DEFAULT 1 NOT NULL;