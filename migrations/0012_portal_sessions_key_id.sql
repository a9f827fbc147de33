ALTER TABLE `portal_sessions` ADD `key_id` text;--> statement-breakpoint
CREATE INDEX `portal_sessions_key_idx` ON `portal_sessions` (`key_id`);