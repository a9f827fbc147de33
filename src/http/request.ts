/**
 * Request parsing, for every operation (API.md § "Conventions"): the query string against
 * the names an operation defines (unknown names rejected with a hint, repeated names
 * refused or joined), the JSON body (media type, size, UTF-8, JSON, an object), zod
 * validation into the contract's 400s with every problem in `details`, and path ids.
 */
import { z } from "zod";
import { MAX_BODY_BYTES } from "../lib/limits";
import { closestName, jsonPath } from "../lib/text";
import type { ErrorDetail } from "./envelopes";
import { ApiError } from "./errors";

// ---------------------------------------------------------------------------------------
// Query string.

/**
 * 400 UNKNOWN_PARAMETER naming each unknown query parameter (`where: "parameter"`) or body
 * field (`"path"`), with a close accepted name when there is one, and every accepted name.
 */
function unknownParameterError(unknown: string[], accepted: readonly string[], where: "parameter" | "path"): ApiError {
  const hints = unknown.map((name) => {
    const close = closestName(name, accepted);
    return close ? `"${name}" (did you mean "${close}"?)` : `"${name}"`;
  });
  const what = where === "parameter" ? "query parameter" : "body field";
  return new ApiError(
    "UNKNOWN_PARAMETER",
    `Unknown ${what}${unknown.length > 1 ? "s" : ""} ${hints.join(", ")}. Accepted: ${accepted.join(", ")}.`,
    unknown.map((name) => {
      const close = closestName(name, accepted);
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

function zodDetails(error: z.ZodError, as: "parameter" | "path"): ErrorDetail[] {
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
// Body.

/**
 * Reads a JSON request body.
 *
 * @returns the decoded JSON value (any JSON; `parseBodyWith` checks it is an object).
 * @throws ApiError 415 UNSUPPORTED_MEDIA_TYPE (not `application/json`), 413
 *   PAYLOAD_TOO_LARGE (over 1 MiB, by header or by actual size), 400 INVALID_JSON.
 */
export async function readJson(request: Request): Promise<unknown> {
  const type = (request.headers.get("content-type") ?? "").split(";")[0]!.trim().toLowerCase();
  if (type !== "application/json") throw new ApiError("UNSUPPORTED_MEDIA_TYPE");
  const declared = Number(request.headers.get("content-length") ?? "0");
  if (declared > MAX_BODY_BYTES) throw new ApiError("PAYLOAD_TOO_LARGE");
  const bytes = new Uint8Array(await request.arrayBuffer());
  if (bytes.byteLength > MAX_BODY_BYTES) throw new ApiError("PAYLOAD_TOO_LARGE");
  try {
    return JSON.parse(new TextDecoder("utf-8", { fatal: true, ignoreBOM: false }).decode(bytes));
  } catch {
    throw new ApiError("INVALID_JSON", "The body is not valid JSON (UTF-8).");
  }
}

/**
 * Validates a decoded JSON body with an operation's body schema (a `z.strictObject`, whose
 * keys are the accepted field names).
 *
 * @param notObject the message when the body is not a JSON object.
 * @throws ApiError 400 VALIDATION_ERROR (not an object: path `$`; else every problem's JSON
 *   path), or 400 UNKNOWN_PARAMETER when the only problems are unknown fields.
 */
export function parseBodyWith<T extends z.ZodObject>(schema: T, body: unknown, notObject = "The body must be a JSON object."): z.output<T> {
  if (typeof body !== "object" || body === null || Array.isArray(body)) {
    throw new ApiError("VALIDATION_ERROR", notObject, [{ path: "$", message: "must be an object" }]);
  }
  const parsed = schema.safeParse(body);
  if (parsed.success) return parsed.data;
  const unknownIssues = parsed.error.issues.filter((i) => i.code === "unrecognized_keys");
  if (unknownIssues.length === parsed.error.issues.length) {
    const names = unknownIssues.flatMap((i) => i.keys.map((k) => jsonPath([...i.path, k])));
    throw unknownParameterError(names, Object.keys(schema.shape), "path");
  }
  const details: ErrorDetail[] = parsed.error.issues.flatMap((issue) =>
    issue.code === "unrecognized_keys"
      ? issue.keys.map((k) => ({ path: jsonPath([...issue.path, k]), message: "unknown field" }))
      : zodDetails(new z.ZodError([issue]), "path"),
  );
  throw new ApiError(
    "VALIDATION_ERROR",
    `The body breaks the schema: ${details.map((d) => `${"path" in d ? d.path : d.parameter} ${d.message}`).join("; ")}.`,
    details,
  );
}

/** `readJson` then `parseBodyWith`. */
export async function parseBody<T extends z.ZodObject>(schema: T, request: Request, notObject?: string): Promise<z.output<T>> {
  return parseBodyWith(schema, await readJson(request), notObject);
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
