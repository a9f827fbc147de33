CREATE TABLE `course_parts` (
	`school_id` text NOT NULL,
	`course_id` text NOT NULL,
	`part` text NOT NULL,
	`json` text NOT NULL,
	PRIMARY KEY(`school_id`, `course_id`, `part`)
);
--> statement-breakpoint
CREATE TABLE `course_parts_stale` (
	`part` text NOT NULL,
	`school_id` text NOT NULL,
	`course_id` text NOT NULL,
	PRIMARY KEY(`part`, `school_id`, `course_id`)
);
--> statement-breakpoint
CREATE INDEX `course_survey_templates_template_idx` ON `course_survey_templates` (`school_id`,`survey_template_id`,`course_id`);--> statement-breakpoint
-- A rename makes the stored parts of the courses listing the row stale (src/db/shard-schema.ts
-- `coursePartsStale`): the batch that renames rebuilds them before it ends (src/db/import-rows.ts).
CREATE TRIGGER `students_parts_stale` AFTER UPDATE ON `students`
WHEN OLD.`first_name` IS NOT NEW.`first_name` OR OLD.`last_name` IS NOT NEW.`last_name` OR OLD.`email` IS NOT NEW.`email`
  OR OLD.`first_name_folded` IS NOT NEW.`first_name_folded` OR OLD.`last_name_folded` IS NOT NEW.`last_name_folded`
BEGIN
  INSERT INTO `course_parts_stale` (`part`, `school_id`, `course_id`)
    SELECT 'students', `school_id`, `course_id` FROM `course_students` WHERE `school_id` = NEW.`school_id` AND `student_id` = NEW.`id`
    ON CONFLICT DO NOTHING;
END;--> statement-breakpoint
CREATE TRIGGER `professors_parts_stale` AFTER UPDATE ON `professors`
WHEN OLD.`first_name` IS NOT NEW.`first_name` OR OLD.`last_name` IS NOT NEW.`last_name` OR OLD.`email` IS NOT NEW.`email`
  OR OLD.`first_name_folded` IS NOT NEW.`first_name_folded` OR OLD.`last_name_folded` IS NOT NEW.`last_name_folded`
BEGIN
  INSERT INTO `course_parts_stale` (`part`, `school_id`, `course_id`)
    SELECT 'teachers', `school_id`, `course_id` FROM `course_professors` WHERE `school_id` = NEW.`school_id` AND `professor_id` = NEW.`id`
    ON CONFLICT DO NOTHING;
END;--> statement-breakpoint
CREATE TRIGGER `survey_templates_parts_stale` AFTER UPDATE ON `survey_templates`
WHEN OLD.`name` IS NOT NEW.`name` OR OLD.`name_folded` IS NOT NEW.`name_folded`
BEGIN
  INSERT INTO `course_parts_stale` (`part`, `school_id`, `course_id`)
    SELECT 'surveyTemplates', `school_id`, `course_id` FROM `course_survey_templates` WHERE `school_id` = NEW.`school_id` AND `survey_template_id` = NEW.`id`
    ON CONFLICT DO NOTHING;
END;--> statement-breakpoint
-- The parts of the courses stored before them (src/courses/record.ts `rebuildPartsText`).
INSERT INTO course_parts (school_id, course_id, part, json) SELECT k.school_id, k.course_id, 'students', (SELECT concat('[', group_concat(concat('{', '"id":', json_quote(p.id), ',"firstName":', json_quote(p.first_name), ',"lastName":', json_quote(p.last_name), ',"email":', json_quote(p.email), '}'), ',' ORDER BY p.last_name_folded, p.last_name, p.first_name_folded, p.first_name, p.id), ']') FROM course_students r JOIN students p ON p.school_id = r.school_id AND p.id = r.student_id WHERE r.school_id = k.school_id AND r.course_id = k.course_id) FROM (SELECT `school_id`, `id` AS `course_id` FROM `courses`) AS k WHERE true ON CONFLICT (school_id, course_id, part) DO UPDATE SET json = excluded.json;--> statement-breakpoint
INSERT INTO course_parts (school_id, course_id, part, json) SELECT k.school_id, k.course_id, 'teachers', (SELECT concat('[', group_concat(concat('{', '"id":', json_quote(p.id), ',"firstName":', json_quote(p.first_name), ',"lastName":', json_quote(p.last_name), ',"email":', json_quote(p.email), ',"coTeacher":', CASE WHEN r.co_teacher THEN 'true' ELSE 'false' END, ',"signed":', CASE WHEN r.signed THEN 'true' ELSE 'false' END, '}'), ',' ORDER BY p.last_name_folded, p.last_name, p.first_name_folded, p.first_name, p.id), ']') FROM course_professors r JOIN professors p ON p.school_id = r.school_id AND p.id = r.professor_id WHERE r.school_id = k.school_id AND r.course_id = k.course_id) FROM (SELECT `school_id`, `id` AS `course_id` FROM `courses`) AS k WHERE true ON CONFLICT (school_id, course_id, part) DO UPDATE SET json = excluded.json;--> statement-breakpoint
INSERT INTO course_parts (school_id, course_id, part, json) SELECT k.school_id, k.course_id, 'surveyTemplates', (SELECT concat('[', group_concat(concat('{', '"id":', json_quote(t.id), ',"name":', json_quote(t.name), '}'), ',' ORDER BY t.name_folded, t.name, t.id), ']') FROM course_survey_templates r JOIN survey_templates t ON t.school_id = r.school_id AND t.id = r.survey_template_id WHERE r.school_id = k.school_id AND r.course_id = k.course_id) FROM (SELECT `school_id`, `id` AS `course_id` FROM `courses`) AS k WHERE true ON CONFLICT (school_id, course_id, part) DO UPDATE SET json = excluded.json;
