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
    close: closestName(name, accepted),
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
  const parsed = schema.safeParse(raw);
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
