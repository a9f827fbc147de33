CREATE TABLE `course_groups` (
	`school_id` text NOT NULL,
	`course_id` text NOT NULL,
	`group_id` text NOT NULL,
	PRIMARY KEY(`school_id`, `course_id`, `group_id`)
);
--> statement-breakpoint
CREATE INDEX `course_groups_group_idx` ON `course_groups` (`school_id`,`group_id`,`course_id`);--> statement-breakpoint
CREATE TABLE `course_professors` (
	`school_id` text NOT NULL,
	`course_id` text NOT NULL,
	`professor_id` text NOT NULL,
	`co_teacher` integer DEFAULT false NOT NULL,
	`signed` integer DEFAULT false NOT NULL,
	PRIMARY KEY(`school_id`, `course_id`, `professor_id`)
);
--> statement-breakpoint
CREATE INDEX `course_professors_professor_idx` ON `course_professors` (`school_id`,`professor_id`,`course_id`);--> statement-breakpoint
CREATE INDEX `course_professors_unsigned_idx` ON `course_professors` (`school_id`,`signed`,`course_id`);--> statement-breakpoint
CREATE TABLE `course_students` (
	`school_id` text NOT NULL,
	`course_id` text NOT NULL,
	`student_id` text NOT NULL,
	PRIMARY KEY(`school_id`, `course_id`, `student_id`)
);
--> statement-breakpoint
CREATE INDEX `course_students_student_idx` ON `course_students` (`school_id`,`student_id`,`course_id`);--> statement-breakpoint
CREATE TABLE `course_survey_templates` (
	`school_id` text NOT NULL,
	`course_id` text NOT NULL,
	`survey_template_id` text NOT NULL,
	PRIMARY KEY(`school_id`, `course_id`, `survey_template_id`)
);
--> statement-breakpoint
CREATE TABLE `courses` (
	`school_id` text NOT NULL,
	`id` text NOT NULL,
	`name` text NOT NULL,
	`name_folded` text NOT NULL,
	`start_ms` integer NOT NULL,
	`end_ms` integer NOT NULL,
	`classroom` text,
	`classroom_folded` text,
	`creator_id` text,
	`training_id` text,
	`archived` integer DEFAULT false NOT NULL,
	`absences_sent` integer DEFAULT false NOT NULL,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL,
	`revision` text,
	`version` integer DEFAULT 1 NOT NULL,
	PRIMARY KEY(`school_id`, `id`)
);
--> statement-breakpoint
CREATE INDEX `courses_school_start_idx` ON `courses` (`school_id`,`start_ms`,`id`);--> statement-breakpoint
CREATE INDEX `courses_school_end_idx` ON `courses` (`school_id`,`end_ms`);--> statement-breakpoint
CREATE INDEX `courses_school_archived_idx` ON `courses` (`school_id`,`archived`,`start_ms`,`id`);--> statement-breakpoint
CREATE INDEX `courses_school_absences_idx` ON `courses` (`school_id`,`absences_sent`,`start_ms`,`id`);--> statement-breakpoint
CREATE INDEX `courses_school_classroom_idx` ON `courses` (`school_id`,`classroom`,`start_ms`,`id`);--> statement-breakpoint
CREATE INDEX `courses_school_creator_idx` ON `courses` (`school_id`,`creator_id`,`start_ms`,`id`);--> statement-breakpoint
CREATE INDEX `courses_school_training_idx` ON `courses` (`school_id`,`training_id`,`start_ms`,`id`);--> statement-breakpoint
CREATE INDEX `courses_school_created_idx` ON `courses` (`school_id`,`created_at`);--> statement-breakpoint
CREATE INDEX `courses_school_updated_idx` ON `courses` (`school_id`,`updated_at`);--> statement-breakpoint
CREATE INDEX `courses_school_name_start_idx` ON `courses` (`school_id`,`name_folded`,`start_ms`);--> statement-breakpoint
CREATE INDEX `courses_school_classroom_start_idx` ON `courses` (`school_id`,`classroom_folded`,`start_ms`);--> statement-breakpoint
CREATE INDEX `courses_school_name_start_desc_idx` ON `courses` (`school_id`,`name_folded`,"start_ms" desc,`id`);--> statement-breakpoint
CREATE TABLE `groups` (
	`school_id` text NOT NULL,
	`id` text NOT NULL,
	`name` text NOT NULL,
	PRIMARY KEY(`school_id`, `id`)
);
--> statement-breakpoint
CREATE TABLE `held_schools` (
	`school_id` text PRIMARY KEY NOT NULL,
	`state` text NOT NULL
);
--> statement-breakpoint
CREATE TABLE `idempotency_keys` (
	`school_id` text NOT NULL,
	`key` text NOT NULL,
	`request_hash` text NOT NULL,
	`status` integer NOT NULL,
	`body` text NOT NULL,
	`location` text,
	`created_at` integer NOT NULL,
	PRIMARY KEY(`school_id`, `key`)
);
--> statement-breakpoint
CREATE INDEX `idempotency_keys_created_idx` ON `idempotency_keys` (`created_at`);--> statement-breakpoint
CREATE TABLE `import_course_states` (
	`school_id` text NOT NULL,
	`course_id` text NOT NULL,
	`state` text NOT NULL,
	PRIMARY KEY(`school_id`, `course_id`)
);
--> statement-breakpoint
CREATE TABLE `outbox` (
	`event_id` text PRIMARY KEY NOT NULL,
	`school_id` text NOT NULL,
	`payload` text NOT NULL,
	`created_at` integer NOT NULL,
	`published_at` integer
);
--> statement-breakpoint
CREATE INDEX `outbox_pending_idx` ON `outbox` (`published_at`,`created_at`);--> statement-breakpoint
CREATE INDEX `outbox_unpublished_school_idx` ON `outbox` (`school_id`,`created_at`,`event_id`) WHERE "outbox"."published_at" IS NULL;--> statement-breakpoint
CREATE TABLE `professors` (
	`school_id` text NOT NULL,
	`id` text NOT NULL,
	`first_name` text NOT NULL,
	`last_name` text NOT NULL,
	`email` text NOT NULL,
	`first_name_folded` text DEFAULT '' NOT NULL,
	`last_name_folded` text DEFAULT '' NOT NULL,
	PRIMARY KEY(`school_id`, `id`)
);
--> statement-breakpoint
CREATE TABLE `students` (
	`school_id` text NOT NULL,
	`id` text NOT NULL,
	`first_name` text NOT NULL,
	`last_name` text NOT NULL,
	`email` text NOT NULL,
	`first_name_folded` text DEFAULT '' NOT NULL,
	`last_name_folded` text DEFAULT '' NOT NULL,
	PRIMARY KEY(`school_id`, `id`)
);
--> statement-breakpoint
CREATE TABLE `survey_templates` (
	`school_id` text NOT NULL,
	`id` text NOT NULL,
	`name` text NOT NULL,
	`name_folded` text DEFAULT '' NOT NULL,
	PRIMARY KEY(`school_id`, `id`)
);
--> statement-breakpoint
CREATE TABLE `trainings` (
	`school_id` text NOT NULL,
	`id` text NOT NULL,
	`name` text NOT NULL,
	PRIMARY KEY(`school_id`, `id`)
);
