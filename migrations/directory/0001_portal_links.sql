-- Portal links (docs/reference.md § Portal sessions): `link` marks a token minted by
-- POST /v3/portal-sessions, which can only be redeemed, once; a redeemed session is 0. Rows
-- stored before this migration become links (default 1): the narrower credential, so a
-- token of before answers 401 outside the redeem and opens once more, as a link.
-- The revoked index serves the cron's pruning of revoked rows a day after revocation.
ALTER TABLE `portal_sessions` ADD `link` integer DEFAULT true NOT NULL;--> statement-breakpoint
CREATE INDEX `portal_sessions_revoked_idx` ON `portal_sessions` (`revoked_at`);
