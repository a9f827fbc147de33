/**
 * The data import file (docs/operations.md § "Data import (operators)"): its schema and its validation,
 * every problem reported at once with its JSON path. The rows it becomes are in
 * src/db/import-rows.ts. Used by `npm run import` (scripts/) and by the tests to load
 * fixtures, so both load data the same way.
 *
 * Runs in Node and in workerd (no Node or Workers APIs).
 */
import { z } from "zod";
import { idSchema, instantSchema, professorAssignmentSchema, textSchema, uniqueProfessors } from "../lib/fields";
import { API_KEY_PATTERN, STRONG_API_KEY_RE } from "../lib/ids";
import { SCOPES } from "../lib/scopes";
import { jsonPath, terminalTextProblem } from "../lib/text";
import { parseInstant } from "../lib/time";

const id = idSchema;
const nonEmpty = textSchema();
const instant = instantSchema();

const KEY_FORM_RE = new RegExp(`^${API_KEY_PATTERN}$`);

/**
 * A key carried by its hash (what `npm run shards -- export` writes): the stored row of a key
 * whose plaintext the operator does not hold, with its id, label, last 4 characters, scopes,
 * creation, revocation and expiry (docs/operations.md § "Data import (operators)").
 */
const keyHashSchema = z.strictObject({
  id,
  /** Lowercase hex SHA-256 of the key. */
  hash: z.string().regex(/^[0-9a-f]{64}$/, "must be the lowercase hex SHA-256 of a key (64 characters [0-9a-f])"),
  label: z.string().min(1, "must not be empty").max(200, "must be at most 200 characters").nullable().default(null),
  last4: z
    .string()
    .regex(/^[A-Za-z0-9_-]{4}$/, "must be 4 characters of [A-Za-z0-9_-]")
    .nullable()
    .default(null),
  scopes: z.array(z.enum(SCOPES)).min(1, "must list at least one scope"),
  createdAt: instant,
  revokedAt: instant.nullable().default(null),
  expiresAt: instant.nullable().default(null),
});

const schoolSchema = z.strictObject({
  id,
  name: nonEmpty,
  apiKeys: z.array(z.string().regex(KEY_FORM_RE, "must start with sk_ and use [A-Za-z0-9_-]")).default([]),
  apiKeyHashes: z.array(keyHashSchema).default([]),
  /**
   * The school's last change number where the file comes from (an export's): the import
   * numbers its changes after it, so that a change cursor of that deployment never skips one here.
   */
  changeSeq: z.number().int().min(0).max(Number.MAX_SAFE_INTEGER).optional(),
});
const namedSchema = z.strictObject({ id, schoolId: id, name: nonEmpty });
const personSchema = z.strictObject({
  id,
  schoolId: id,
  firstName: nonEmpty,
  lastName: nonEmpty,
  email: z.email("must be an email address"),
});
const courseSchema = z.strictObject({
  id,
  schoolId: id,
  name: nonEmpty,
  startDateTime: instant,
  endDateTime: instant,
  classroom: nonEmpty.nullable().optional(),
  creatorId: id.nullable().optional(),
  trainingId: id.nullable().optional(),
  archived: z.boolean().default(false),
  absencesSent: z.boolean().default(false),
  createdAt: instant.optional(),
  updatedAt: instant.optional(),
  /** The version to write for a course new to the database (an export's); see courseSteps in src/db/import-rows.ts. */
  version: z.number().int().min(1).max(Number.MAX_SAFE_INTEGER).optional(),
  groupIds: z.array(id).default([]),
  studentIds: z.array(id).default([]),
  professors: z.array(professorAssignmentSchema).superRefine(uniqueProfessors).default([]),
  surveyTemplateIds: z.array(id).default([]),
});

/** The import file: every array optional. */
export const importFileSchema = z.strictObject({
  schools: z.array(schoolSchema).default([]),
  trainings: z.array(namedSchema).default([]),
  groups: z.array(namedSchema).default([]),
  students: z.array(personSchema).default([]),
  professors: z.array(personSchema).default([]),
  surveyTemplates: z.array(namedSchema).default([]),
  courses: z.array(courseSchema).default([]),
});

/** A validated import file (instants in ms since the epoch). */
export type ImportFile = z.output<typeof importFileSchema>;
/** An import course (validated). */
export type ImportCourse = ImportFile["courses"][number];

/** One problem of an import file: its JSON path (`courses[3].endDateTime`) and message. */
export interface ImportProblem {
  path: string;
  message: string;
}

/** The prefix of demo keys, which a remote import refuses. */
const DEMO_KEY_PREFIX = "sk_test_";

/**
 * Validates a decoded import file, reporting every problem with its JSON path, all at once:
 * the schema (unknown fields included), end after start, control characters in text
 * fields, duplicate ids within a kind, an API
 * key listed twice, shorter than `sk_` + 32 characters of `[A-Za-z0-9_-]` (`STRONG_API_KEY_RE`), or (with
 * `remote`: the import writes to a deployment) a demo `sk_test_` key. References to other
 * ids are checked against the file and the database later (src/db/import-references.ts).
 */
export function validateImport(data: unknown, opts: { remote?: boolean } = {}): { ok: true; file: ImportFile } | { ok: false; problems: ImportProblem[] } {
  const parsed = importFileSchema.safeParse(data);
  const problems: ImportProblem[] = parsed.success
    ? []
    : parsed.error.issues.map((i) => ({
        path: jsonPath(i.path),
        message: i.code === "unrecognized_keys" ? `unknown field(s): ${(i as { keys: string[] }).keys.join(", ")}` : i.message,
      }));
  problems.push(...crossChecks(data, opts.remote === true));
  return parsed.success && problems.length === 0 ? { ok: true, file: parsed.data } : { ok: false, problems };
}

const KINDS = ["schools", "trainings", "groups", "students", "professors", "surveyTemplates", "courses"] as const;

/**
 * The text fields of each kind, which refuse control, bidirectional and zero-width characters
 * (`terminalTextProblem`, the key labels' rule): operators' terminals print them (`npm run shards -- status`), where an
 * escape sequence could act (docs/operations.md § "Data import").
 */
const TEXT_FIELDS: Record<(typeof KINDS)[number], readonly string[]> = {
  schools: ["name"],
  trainings: ["name"],
  groups: ["name"],
  students: ["firstName", "lastName"],
  professors: ["firstName", "lastName"],
  surveyTemplates: ["name"],
  courses: ["name", "classroom"],
};

/**
 * Checks across items, run on the raw file so that they report alongside schema problems
 * (items too malformed to tell are skipped): control, bidirectional and zero-width characters in text fields (not in the
 * schema, which the tests' fixtures also load through), duplicate ids within a kind (per school), an
 * API key listed twice, weak or (`remote`) a demo key, a course whose end is not after its start.
 */
function crossChecks(data: unknown, remote: boolean): ImportProblem[] {
  const problems: ImportProblem[] = [];
  if (typeof data !== "object" || data === null) return problems;
  const items = (kind: string): Record<string, unknown>[] => {
    const list = (data as Record<string, unknown>)[kind];
    return Array.isArray(list) ? list.map((x) => (typeof x === "object" && x !== null ? (x as Record<string, unknown>) : {})) : [];
  };
  for (const kind of KINDS) {
    items(kind).forEach((r, i) => {
      for (const field of TEXT_FIELDS[kind]) {
        const text = r[field];
        const problem = typeof text === "string" ? terminalTextProblem(text) : null;
        if (problem !== null) problems.push({ path: `${kind}[${i}].${field}`, message: problem });
      }
    });
  }
  for (const kind of KINDS) {
    const seen = new Set<string>();
    items(kind).forEach((r, i) => {
      if (typeof r.id !== "string") return;
      const key = `${typeof r.schoolId === "string" ? r.schoolId : ""}/${r.id}`;
      if (seen.has(key)) problems.push({ path: `${kind}[${i}].id`, message: `duplicate id "${r.id}"` });
      seen.add(key);
    });
  }
  const keys = new Set<string>();
  items("schools").forEach((s, i) => {
    if (!Array.isArray(s.apiKeys)) return;
    s.apiKeys.forEach((k, j) => {
      if (typeof k !== "string") return;
      const path = `schools[${i}].apiKeys[${j}]`;
      // A key the schema refuses already is reported once, by the schema.
      if (!KEY_FORM_RE.test(k)) return;
      if (!STRONG_API_KEY_RE.test(k)) problems.push({ path, message: "must be sk_ followed by at least 32 characters of [A-Za-z0-9_-]" });
      else if (remote && k.startsWith(DEMO_KEY_PREFIX))
        problems.push({ path, message: "a demo key (sk_test_…): --remote refuses them; mint live keys with npm run keys -- create" });
      if (keys.has(k)) problems.push({ path, message: "API key listed twice" });
      keys.add(k);
    });
  });
  const hashes = new Set<string>();
  const keyIds = new Set<string>();
  items("schools").forEach((s, i) => {
    if (!Array.isArray(s.apiKeyHashes)) return;
    s.apiKeyHashes.forEach((k: unknown, j) => {
      if (typeof k !== "object" || k === null) return;
      const { hash, id: keyId, label } = k as Record<string, unknown>;
      const path = `schools[${i}].apiKeyHashes[${j}]`;
      const labelProblem = typeof label === "string" ? terminalTextProblem(label) : null;
      if (labelProblem !== null) problems.push({ path: `${path}.label`, message: labelProblem });
      if (typeof hash === "string" && hashes.has(hash)) problems.push({ path: `${path}.hash`, message: "API key listed twice" });
      if (typeof keyId === "string" && keyIds.has(keyId)) problems.push({ path: `${path}.id`, message: `duplicate key id "${keyId}"` });
      if (typeof hash === "string") hashes.add(hash);
      if (typeof keyId === "string") keyIds.add(keyId);
    });
  });
  items("courses").forEach((c, i) => {
    const start = typeof c.startDateTime === "string" ? parseInstant(c.startDateTime) : undefined;
    const end = typeof c.endDateTime === "string" ? parseInstant(c.endDateTime) : undefined;
    if (start !== undefined && end !== undefined && !(end > start)) {
      problems.push({ path: `courses[${i}].endDateTime`, message: "endDateTime must be after startDateTime" });
    }
  });
  return problems;
}
