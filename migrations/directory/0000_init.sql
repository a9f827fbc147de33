CREATE TABLE `api_keys` (
	`key_hash` text PRIMARY KEY NOT NULL,
	`school_id` text NOT NULL,
	`created_at` integer NOT NULL,
	`revoked_at` integer,
	`id` text NOT NULL,
	`label` text,
	`last4` text
);
--> statement-breakpoint
CREATE INDEX `api_keys_school_idx` ON `api_keys` (`school_id`);--> statement-breakpoint
CREATE UNIQUE INDEX `api_keys_id_idx` ON `api_keys` (`id`);--> statement-breakpoint
CREATE TABLE `portal_sessions` (
	`token_hash` text PRIMARY KEY NOT NULL,
	`school_id` text NOT NULL,
	`created_at` integer NOT NULL,
	`expires_at` integer NOT NULL,
	`read_only` integer DEFAULT false NOT NULL,
	`revoked_at` integer,
	`key_id` text
);
--> statement-breakpoint
CREATE INDEX `portal_sessions_school_idx` ON `portal_sessions` (`school_id`,`expires_at`);--> statement-breakpoint
CREATE INDEX `portal_sessions_expires_idx` ON `portal_sessions` (`expires_at`);--> statement-breakpoint
CREATE INDEX `portal_sessions_key_idx` ON `portal_sessions` (`key_id`);--> statement-breakpoint
CREATE TABLE `schools` (
	`id` text PRIMARY KEY NOT NULL,
	`name` text NOT NULL,
	`shard` text NOT NULL,
	`state` text DEFAULT 'active' NOT NULL,
	`move_from` text,
	`move_to` text,
	`move_step` text
);
