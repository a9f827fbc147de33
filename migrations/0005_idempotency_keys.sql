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
CREATE INDEX `idempotency_keys_created_idx` ON `idempotency_keys` (`created_at`);