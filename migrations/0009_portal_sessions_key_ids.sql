CREATE TABLE `portal_sessions` (
	`token_hash` text PRIMARY KEY NOT NULL,
	`school_id` text NOT NULL,
	`created_at` integer NOT NULL,
	`expires_at` integer NOT NULL,
	`read_only` integer DEFAULT false NOT NULL,
	`revoked_at` integer
);
--> statement-breakpoint
CREATE INDEX `portal_sessions_school_idx` ON `portal_sessions` (`school_id`,`expires_at`);--> statement-breakpoint
CREATE INDEX `portal_sessions_expires_idx` ON `portal_sessions` (`expires_at`);--> statement-breakpoint
ALTER TABLE `api_keys` ADD `id` text;--> statement-breakpoint
ALTER TABLE `api_keys` ADD `label` text;--> statement-breakpoint
ALTER TABLE `api_keys` ADD `last4` text;--> statement-breakpoint
-- Every stored key gets an id (`npm run keys -- revoke KEY_ID` names keys by it): keys
-- stored before this migration get a random one, new keys a time-sortable one (mintId).
-- Their last 4 characters are unknown (only the hash is stored): `last4` stays NULL.
UPDATE `api_keys` SET `id` = 'key_' || upper(hex(randomblob(13))) WHERE `id` IS NULL;
--> statement-breakpoint
CREATE UNIQUE INDEX `api_keys_id_idx` ON `api_keys` (`id`);