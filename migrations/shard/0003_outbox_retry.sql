DROP INDEX `outbox_unpublished_school_idx`;--> statement-breakpoint
ALTER TABLE `outbox` ADD `attempts` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `outbox` ADD `retry_at` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
CREATE INDEX `outbox_unpublished_school_idx` ON `outbox` (`school_id`,`retry_at`,`created_at`,`event_id`) WHERE "outbox"."published_at" IS NULL;