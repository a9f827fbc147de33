/**
 * Request parsing outside the body, for every operation (docs/reference.md § "Conventions"): the query
 * string against the names an operation defines (unknown names rejected with a hint,
 * repeated names refused or joined), zod validation into the contract's 400s with the
 * problems in `details`, and path ids. The body has its own module (src/http/body.ts), which
 * reports unknown fields and schema problems with the helpers exported here.
 */
import type { z } from "zod";
import { closestName, jsonPath } from "../lib/text";
import type { ErrorDetail } from "./envelopes";
import { ApiError } from "./errors";

// ---------------------------------------------------------------------------------------
// Query string.

/** Most unknown names an UNKNOWN_PARAMETER error lists (the rest are counted). */
const MAX_REPORTED_UNKNOWN = 20;
/** Longest unknown name quoted as it is (a longer one is cut, with `…`). */
const MAX_QUOTED_NAME = 100;

/**
 * 400 UNKNOWN_PARAMETER naming the unknown query parameters (`where: "parameter"`) or body
 * fields (`"path"`) — at most 20, each cut to 100 characters, the rest counted — with a
 * close accepted name for each when there is one, and every accepted name.
 */
export function unknownParameterError(unknown: string[], accepted: readonly string[], where: "parameter" | "path"): ApiError {
  const listed = unknown.slice(0, MAX_REPORTED_UNKNOWN).map((name) => ({
    name: name.length > MAX_QUOTED_NAME ? `${name.slice(0, MAX_QUOTED_NAME)}…` : name,
    // `accepted` are top-level names: a nested path (`professors[0].constructor`) gets no hint.
    close: where === "path" && /[.[]/.test(name) ? undefined : closestName(name, accepted),
  }));
  const hints = listed.map(({ name, close }) => (close ? `"${name}" (did you mean "${close}"?)` : `"${name}"`));
  const more = unknown.length - listed.length;
  const what = where === "parameter" ? "query parameter" : "body field";
  return new ApiError(
    "UNKNOWN_PARAMETER",
    `Unknown ${what}${unknown.length > 1 ? "s" : ""} ${hints.join(", ")}${more > 0 ? ` and ${more} more` : ""}. Accepted: ${accepted.join(", ")}.`,
    listed.map(({ name, close }) => {
      const message = close ? `unknown; did you mean "${close}"?` : "unknown";
      return where === "parameter" ? { parameter: name, message } : { path: name, message };
    }),
  );
}

/**
 * Reads a query string against the names an operation accepts.
 *
 * @param lists names whose repetitions are joined with commas (`groupId=a&groupId=b`).
 * @returns the value of each parameter given, by name.
 * @throws ApiError 400 UNKNOWN_PARAMETER (a name not in `accepted`), 400 INVALID_PARAMETER
 *   (a name of another kind given more than once).
 */
export function collectQuery(params: URLSearchParams, accepted: readonly string[], lists: readonly string[] = []): Record<string, string> {
  const out: Record<string, string> = {};
  const unknown: string[] = [];
  const repeated = new Set<string>();
  for (const [key, value] of params) {
    if (!accepted.includes(key)) {
      if (!unknown.includes(key)) unknown.push(key);
      continue;
    }
    if (key in out) {
      if (lists.includes(key)) out[key] = `${out[key]},${value}`;
      else repeated.add(key);
      continue;
    }
    out[key] = value;
  }
  if (unknown.length > 0) throw unknownParameterError(unknown, accepted, "parameter");
  if (repeated.size > 0) {
    throw new ApiError(
      "INVALID_PARAMETER",
      `Parameter${repeated.size > 1 ? "s" : ""} ${[...repeated].join(", ")} given more than once.`,
      [...repeated].map((parameter) => ({ parameter, message: "given more than once; send it once" })),
    );
  }
  return out;
}

/** Rejects any query parameter, for an operation that defines none: 400 UNKNOWN_PARAMETER. */
export function rejectQuery(request: Request): void {
  collectQuery(new URL(request.url).searchParams, []);
}

/** How a value received is named in a message: its JSON kind (`a string`, `null`, …). */
function kindOf(input: unknown): string {
  if (input === null) return "null";
  if (Array.isArray(input)) return "an array";
  if (typeof input === "object") return "an object";
  return typeof input === "number" && !Number.isInteger(input) ? "a fractional number" : `a ${typeof input}`;
}

/** The catalogue's name for the kind zod expected (`int` → `an integer`). */
const EXPECTED: Record<string, string> = {
  string: "a string",
  number: "a number",
  int: "an integer",
  boolean: "a boolean",
  object: "an object",
  array: "an array",
  null: "null",
};

/**
 * The catalogue's words for a zod issue that its schema left without a message of its own
 * (docs/reference.md § "Error codes"): the one place library wording ("Invalid input:
 * expected …") becomes a `details` message. A schema's own message (`must be an integer from
 * 1 to 100`) wins over this one. Passed as the per-parse `error` of every request parse.
 *
 * @returns e.g. `is required`, `must be a number, not a string`, `must be at most 100`,
 *   `must be one of asc, desc`.
 */
export function catalogueMessage(issue: z.core.$ZodRawIssue): string {
  const bound = (n: number | bigint, inclusive: boolean | undefined, more: boolean) =>
    inclusive === false ? `${more ? "greater" : "less"} than ${n}` : `${more ? "at least" : "at most"} ${n}`;
  // An absent field: zod reports it as the kind or the value it lacks.
  const absent = issue.code === "invalid_type" || issue.code === "invalid_value" || issue.code === "invalid_union";
  if (absent && issue.input === undefined) return "is required";
  switch (issue.code) {
    case "invalid_type":
      return `must be ${EXPECTED[issue.expected] ?? issue.expected}, not ${kindOf(issue.input)}`;
    case "too_small":
    case "too_big": {
      const more = issue.code === "too_small";
      const n = more ? issue.minimum : issue.maximum;
      if (issue.origin === "string") return more && Number(n) === 1 ? "must not be empty" : `must be ${bound(n, issue.inclusive, more)} characters`;
      if (issue.origin === "array" || issue.origin === "set") return `must list ${bound(n, issue.inclusive, more)} items`;
      return `must be ${bound(n, issue.inclusive, more)}`;
    }
    case "not_multiple_of":
      return `must be a multiple of ${issue.divisor}`;
    case "invalid_value":
      return `must be one of ${issue.values.map(String).join(", ")}`;
    case "invalid_format":
      return issue.format === "regex" && "pattern" in issue ? `must match the pattern ${String(issue.pattern)}` : `must be a valid ${issue.format}`;
    case "unrecognized_keys":
      return "unknown field";
    case "invalid_union":
      return "matches none of the accepted forms";
    case "invalid_key":
      return "has a key that is not accepted";
    case "invalid_element":
      return "has an item that is not accepted";
    default:
      return "is not accepted";
  }
}

export function zodDetails(error: z.ZodError, as: "parameter" | "path"): ErrorDetail[] {
  return error.issues.map((issue) => {
    if (as === "parameter") {
      // A query parameter is named alone; an item of an id list is told in the message.
      const [name, index] = issue.path;
      const message = typeof index === "number" ? `item ${index + 1}: ${issue.message}` : issue.message;
      return { parameter: name === undefined ? "$" : String(name), message };
    }
    return { path: jsonPath(issue.path), message: issue.message };
  });
}

/**
 * Parses collected query parameters (`collectQuery`) with a zod schema.
 *
 * @throws ApiError 400 INVALID_PARAMETER listing every problem.
 */
export function parseQueryWith<T extends z.ZodType>(schema: T, raw: Record<string, string>): z.output<T> {
  const parsed = schema.safeParse(raw, { error: catalogueMessage });
  if (!parsed.success) {
    const details = zodDetails(parsed.error, "parameter");
    throw new ApiError(
      "INVALID_PARAMETER",
      `Invalid query parameter${details.length > 1 ? "s" : ""}: ${details.map((d) => `${"parameter" in d ? d.parameter : d.path} ${d.message}`).join("; ")}.`,
      details,
    );
  }
  return parsed.data;
}

/**
 * Reads a request's query string with an operation's query schema: its keys are the
 * accepted names, none repeats.
 *
 * @throws ApiError 400 UNKNOWN_PARAMETER, INVALID_PARAMETER.
 */
export function parseQuery<T extends z.ZodObject>(schema: T, request: Request): z.output<T> {
  return parseQueryWith(schema, collectQuery(new URL(request.url).searchParams, Object.keys(schema.shape)));
}

// ---------------------------------------------------------------------------------------
// Path.

/**
 * A `{name}` path segment of a route, percent-decoded. A malformed %-escape is kept as it
 * is: it matches no id, so the caller answers its 404 rather than a 500.
 */
export function pathParam(req: { params: Record<string, string | undefined> }, name = "id"): string {
  const raw = req.params[name] ?? "";
  try {
    return decodeURIComponent(raw);
  } catch {
    return raw;
  }
}
