-- Scopes (docs/reference.md § Scopes): what each API key and portal session may do. Keys of
-- before keep every scope; sessions of before keep the webhook operations they had.
-- expires_at: a key may expire (null: never).
ALTER TABLE `api_keys` ADD `scopes` text DEFAULT 'courses:read courses:write students:read webhooks:read webhooks:write events:read portal' NOT NULL;--> statement-breakpoint
ALTER TABLE `api_keys` ADD `expires_at` integer;--> statement-breakpoint
ALTER TABLE `portal_sessions` ADD `scopes` text DEFAULT 'webhooks:read webhooks:write events:read' NOT NULL;