-- `outbox_schools` (src/db/shard-schema.ts), kept by the outbox's own statements: one row per
-- school with unpublished rows, `fresh_at` the oldest `created_at` of its never-failed ones
-- (`retry_at` = 0), `retry_at` the earliest `retry_at` of those that failed before. The sweep
-- chooses its schools there (src/events/outbox.ts `schoolsDue`), so schools that only back
-- off cost it nothing. A trigger recounts the school's row only when the outbox row was at
-- one of its minimums or sets a lower one; each recount is two seeks of the partial index
-- `outbox_unpublished_school_idx`. The code never changes `created_at`, nor makes a published
-- row unpublished again; the triggers follow such changes all the same (tests make them).
--
-- Rows written before this migration by an older version carried the event's `createdAt`,
-- which can lie in the future (a course imported with `updatedAt` in 2099): from now on
-- `created_at` is the Worker's clock at the write, so those are brought back to now first.
UPDATE `outbox` SET `created_at` = CAST(strftime('%s', 'now') AS INTEGER) * 1000
WHERE `published_at` IS NULL AND `created_at` > CAST(strftime('%s', 'now') AS INTEGER) * 1000;
--> statement-breakpoint
INSERT INTO `outbox_schools` (`school_id`, `fresh_at`, `retry_at`)
SELECT `school_id`, min(iif(`retry_at` = 0, `created_at`, NULL)), min(nullif(`retry_at`, 0))
FROM `outbox` WHERE `published_at` IS NULL GROUP BY `school_id`;
--> statement-breakpoint
CREATE TRIGGER `outbox_schools_insert` AFTER INSERT ON `outbox` WHEN new.`published_at` IS NULL BEGIN
  INSERT INTO `outbox_schools` (`school_id`, `fresh_at`, `retry_at`)
  VALUES (new.`school_id`, iif(new.`retry_at` = 0, new.`created_at`, NULL), nullif(new.`retry_at`, 0))
  ON CONFLICT (`school_id`) DO UPDATE SET
    `fresh_at` = min(coalesce(`fresh_at`, excluded.`fresh_at`), coalesce(excluded.`fresh_at`, `fresh_at`)),
    `retry_at` = min(coalesce(`retry_at`, excluded.`retry_at`), coalesce(excluded.`retry_at`, `retry_at`))
  WHERE excluded.`fresh_at` < coalesce(`fresh_at`, excluded.`fresh_at` + 1) OR excluded.`retry_at` < coalesce(`retry_at`, excluded.`retry_at` + 1);
END;
--> statement-breakpoint
CREATE TRIGGER `outbox_schools_update` AFTER UPDATE OF `published_at`, `retry_at`, `created_at` ON `outbox`
WHEN old.`published_at` IS NULL OR new.`published_at` IS NULL BEGIN
  INSERT INTO `outbox_schools` (`school_id`) SELECT new.`school_id` WHERE new.`published_at` IS NULL ON CONFLICT (`school_id`) DO NOTHING;
  UPDATE `outbox_schools` SET
    `fresh_at` = (SELECT min(o.`created_at`) FROM `outbox` AS o WHERE o.`school_id` = new.`school_id` AND o.`published_at` IS NULL AND o.`retry_at` = 0),
    `retry_at` = (SELECT min(o.`retry_at`) FROM `outbox` AS o WHERE o.`school_id` = new.`school_id` AND o.`published_at` IS NULL AND o.`retry_at` > 0)
  WHERE `school_id` = new.`school_id` AND (
    (`fresh_at` IS NULL AND `retry_at` IS NULL)
    OR (old.`published_at` IS NULL AND ((old.`retry_at` = 0 AND `fresh_at` = old.`created_at`) OR (old.`retry_at` > 0 AND `retry_at` = old.`retry_at`)))
    OR (new.`published_at` IS NULL AND ((new.`retry_at` = 0 AND coalesce(new.`created_at` < `fresh_at`, 1)) OR (new.`retry_at` > 0 AND coalesce(new.`retry_at` < `retry_at`, 1)))));
  DELETE FROM `outbox_schools` WHERE `school_id` = new.`school_id` AND `fresh_at` IS NULL AND `retry_at` IS NULL;
END;
--> statement-breakpoint
CREATE TRIGGER `outbox_schools_delete` AFTER DELETE ON `outbox` WHEN old.`published_at` IS NULL BEGIN
  UPDATE `outbox_schools` SET
    `fresh_at` = (SELECT min(o.`created_at`) FROM `outbox` AS o WHERE o.`school_id` = old.`school_id` AND o.`published_at` IS NULL AND o.`retry_at` = 0),
    `retry_at` = (SELECT min(o.`retry_at`) FROM `outbox` AS o WHERE o.`school_id` = old.`school_id` AND o.`published_at` IS NULL AND o.`retry_at` > 0)
  WHERE `school_id` = old.`school_id`
    AND ((old.`retry_at` = 0 AND `fresh_at` = old.`created_at`) OR (old.`retry_at` > 0 AND `retry_at` = old.`retry_at`));
  DELETE FROM `outbox_schools` WHERE `school_id` = old.`school_id` AND `fresh_at` IS NULL AND `retry_at` IS NULL;
END;
