CREATE TABLE `outbox_schools` (
	`school_id` text PRIMARY KEY NOT NULL,
	`fresh_at` integer,
	`retry_at` integer
);
--> statement-breakpoint
CREATE INDEX `outbox_schools_fresh_idx` ON `outbox_schools` (`fresh_at`,`school_id`) WHERE "outbox_schools"."fresh_at" IS NOT NULL;--> statement-breakpoint
CREATE INDEX `outbox_schools_retry_idx` ON `outbox_schools` (`retry_at`,`school_id`) WHERE "outbox_schools"."retry_at" IS NOT NULL;--> statement-breakpoint
DROP INDEX `outbox_unpublished_school_idx`;--> statement-breakpoint
CREATE INDEX `outbox_school_idx` ON `outbox` (`school_id`,`event_id`);--> statement-breakpoint
CREATE INDEX `outbox_unpublished_school_idx` ON `outbox` (`school_id`,`retry_at`,`created_at`) WHERE "outbox"."published_at" IS NULL;