CREATE TABLE `event_bytes` (
	`school_id` text NOT NULL,
	`day` integer NOT NULL,
	`bytes` integer NOT NULL,
	`quota` integer NOT NULL,
	PRIMARY KEY(`school_id`, `day`),
	CONSTRAINT "event_bytes_within_quota" CHECK(bytes <= quota)
);
--> statement-breakpoint
CREATE INDEX `event_bytes_day_idx` ON `event_bytes` (`day`);