-- Course writes count the bytes they store beside those they publish, against one quota
-- (src/db/event-quota.ts): a table CHECK needs the table rebuilt; it holds one row per school and day.
CREATE TABLE `__new_event_bytes` (
	`school_id` text NOT NULL,
	`day` integer NOT NULL,
	`bytes` integer NOT NULL,
	`quota` integer NOT NULL,
	`stored_bytes` integer DEFAULT 0 NOT NULL,
	`import_bytes` integer DEFAULT 0 NOT NULL,
	`import_bound` integer DEFAULT 0 NOT NULL,
	PRIMARY KEY(`school_id`, `day`),
	CONSTRAINT "event_bytes_within_quota" CHECK(bytes + stored_bytes <= quota),
	CONSTRAINT "event_bytes_import_within_bound" CHECK(import_bytes <= import_bound)
);
--> statement-breakpoint
INSERT INTO `__new_event_bytes`("school_id", "day", "bytes", "quota", "stored_bytes", "import_bytes", "import_bound") SELECT "school_id", "day", "bytes", "quota", 0, "import_bytes", "import_bound" FROM `event_bytes`;--> statement-breakpoint
DROP TABLE `event_bytes`;--> statement-breakpoint
ALTER TABLE `__new_event_bytes` RENAME TO `event_bytes`;--> statement-breakpoint
CREATE INDEX `event_bytes_day_idx` ON `event_bytes` (`day`);