/**
 * One zod schema per field rule of the contract (docs/reference.md § "Conventions"), used by every
 * operation, the import model and the OpenAPI document alike: ids, instants, text lengths,
 * id lists, query-string integers and booleans, a course's professors.
 *
 * The error messages here are the `message` of each problem in a 400's `details`. Schemas
 * carry only the documentation that belongs to the rule itself (`format`, patterns); each
 * use adds its own `description` and `example` with `.meta()`.
 */
import { z } from "zod";
import { ID_RE } from "./ids";
import { readInstant, repairQueryInstant } from "./time";

// ---------------------------------------------------------------------------------------
// Ids.

/** An id read from a client: 1–64 characters `[A-Za-z0-9_-]`. */
export const idSchema = z.string().regex(ID_RE, "must be an id of 1–64 characters [A-Za-z0-9_-]");

/** An id as the API writes it, documented as opaque. */
export const opaqueIdSchema = idSchema.meta({ description: "An opaque id: 1–64 characters `[A-Za-z0-9_-]`." });

/** An id minted by the service: its type prefix (`crs_`, `wh_`, `evt_`) and a time-sortable part. */
export const mintedIdSchema = (prefix: "crs" | "wh" | "evt", example: string) =>
  z
    .string()
    .regex(new RegExp(`^${prefix}_[A-Za-z0-9_-]{1,60}$`))
    .meta({ description: `An id minted by the service: \`${prefix}_\` followed by a time-sortable random part.`, example });

/** Splits a comma-separated id list: items trimmed, empty items dropped. */
export function splitIds(value: string): string[] {
  return value
    .split(",")
    .map((s) => s.trim())
    .filter((s) => s.length > 0);
}

/**
 * A query-string id list: comma-separated (items trimmed, empty items dropped), each an id.
 * The parameter may be repeated (`groupId=a&groupId=b`, OpenAPI `style: form, explode: true`):
 * documented as a string or an array of strings, so that generated clients take either. The
 * operation joins the repetitions before validating (src/http/request.ts, `collectQuery`); an
 * array is read the same way, its items joined.
 */
export const queryIdListSchema = () =>
  z
    .union([z.string(), z.array(z.string())])
    .transform((v) => splitIds(Array.isArray(v) ? v.join(",") : v))
    .pipe(z.array(idSchema))
    .meta({ param: { style: "form", explode: true } });

/** A body id list: a JSON array of ids (a comma-separated string is accepted too), at most `max`. */
export const bodyIdListSchema = (max: number) =>
  z
    .union([z.string().transform(splitIds), z.array(z.unknown())], { error: "must be an array of ids or a comma-separated string" })
    // The count first: a 1 MiB comma-separated string splits into half a million items, and
    // judging each would be half a million issues.
    .pipe(z.array(z.unknown()).max(max, `must list at most ${max} ids`))
    .pipe(z.array(idSchema));

// ---------------------------------------------------------------------------------------
// Instants.

/** Pattern of the instants the API writes: ISO 8601 UTC with milliseconds. */
const INSTANT_OUT_RE = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

/** An instant as the API writes it: `2026-09-07T08:00:00.000Z`. */
export const instantOutSchema = z
  .string()
  .regex(INSTANT_OUT_RE)
  .meta({ format: "date-time", description: "ISO 8601 instant, UTC, with milliseconds.", example: "2026-09-07T08:00:00.000Z" });

/**
 * An instant read from a client: ISO 8601 with a zone (`Z` or `±hh:mm`), parsed into ms
 * since the epoch. `repair` (query strings): a `+` of the offset that arrived as a space is
 * read as `+` (`repairQueryInstant`).
 */
export const instantSchema = (opts: { repair?: boolean } = {}) =>
  z
    .string()
    .transform((raw, ctx) => {
      const read = readInstant(opts.repair ? repairQueryInstant(raw) : raw);
      if ("problem" in read) {
        // The value is echoed (cut to 100 characters) so that a client sees what arrived.
        const shown = raw.length > 100 ? `${raw.slice(0, 100)}…` : raw;
        ctx.addIssue({
          code: "custom",
          message: `${JSON.stringify(shown)} ${read.problem}: must be an ISO 8601 instant with a zone, within years 0000–9999 in UTC, e.g. 2026-09-07T08:00:00Z or 2026-09-07T10:00:00+02:00`,
        });
        return z.NEVER;
      }
      return read.ms;
    })
    .meta({ format: "date-time" });

// ---------------------------------------------------------------------------------------
// Text.

/** Longest name, classroom and other short text, in characters. */
const MAX_TEXT = 200;

/** A text of 1–`max` characters (`trim`: measured after trimming, and stored trimmed). */
export const textSchema = (opts: { max?: number; trim?: boolean } = {}) => {
  const max = opts.max ?? MAX_TEXT;
  return (opts.trim ? z.string().trim() : z.string()).min(1, "must not be empty").max(max, `must be at most ${max} characters`);
};

// ---------------------------------------------------------------------------------------
// Query-string scalars. A query string carries only strings; the document declares each
// parameter by what it means (`boolean`, `integer` with its bounds) so that generated clients
// take a boolean or a number, and the schema reads every spelling the wire allows.

/** `true`, `false`, `1` or `0` (documented as `boolean`); anything else is a 400. */
export const queryBooleanSchema = z
  .enum(["true", "false", "1", "0"], { error: "must be one of true, false, 1, 0" })
  .transform((v) => v === "true" || v === "1")
  .meta({ type: "boolean" });

/**
 * An integer from `min` to `max` written in decimal digits, documented as `integer` with
 * `minimum`, `maximum` and, when given, the `fallback` the operation uses when the parameter
 * is omitted as `default` (documentation only: the schema leaves an omitted parameter out).
 */
export const queryIntegerSchema = (min: number, max: number, fallback?: number) =>
  z
    .string()
    .regex(/^\d{1,9}$/, `must be an integer from ${min} to ${max}`)
    .transform(Number)
    .refine((n) => n >= min && n <= max, `must be an integer from ${min} to ${max}`)
    .meta({ type: "integer", minimum: min, maximum: max, ...(fallback === undefined ? {} : { default: fallback }) });

/**
 * A JSON integer from `min` to `max`: every problem (not a number, a fraction, out of range)
 * reads as the query's `must be an integer from min to max`.
 */
export const bodyIntegerSchema = (min: number, max: number) => {
  const message = `must be an integer from ${min} to ${max}`;
  return z.number({ error: message }).int(message).min(min, message).max(max, message);
};

// ---------------------------------------------------------------------------------------
// A course's professors (docs/reference.md § "POST /v3/courses — create a course · PATCH /v3/courses/{id} — change one", docs/operations.md § "Data import (operators)").

/** A professor assigned to a course; `coTeacher` and `signed` default to false. */
export const professorAssignmentSchema = z
  .strictObject({
    professorId: idSchema.meta({ example: "prf_4" }),
    coTeacher: z.boolean().default(false).meta({ description: "Assigned as co-teacher." }),
    signed: z.boolean().default(false).meta({ description: "Has signed (false → true publishes `course.professor_signed`)." }),
  })
  .meta({ id: "ProfessorAssignment", description: "A professor assigned to the course.", example: { professorId: "prf_4", coTeacher: false, signed: true } });

/** The rule of a course's professor list: each professor at most once (the second listing is the problem). */
export function uniqueProfessors(list: readonly { professorId: string }[], ctx: z.RefinementCtx): void {
  const seen = new Set<string>();
  list.forEach((p, i) => {
    if (seen.has(p.professorId)) ctx.addIssue({ code: "custom", path: [i, "professorId"], message: `professor "${p.professorId}" is listed twice` });
    seen.add(p.professorId);
  });
}
