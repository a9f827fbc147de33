/**
 * Reading and validating a JSON request body, for every operation (docs/reference.md § "Conventions"):
 * media type, size (never more than 1 MiB read), UTF-8 and JSON; then, whatever the schema,
 * what no body may hold (prototype keys, unpaired surrogates, over-long lists), and the
 * schema's verdict as the contract's 400s with the problems in `details`.
 */
import { z } from "zod";
import { MAX_BODY_BYTES, SEARCH_MAX_IDS } from "../lib/limits";
import { jsonPath } from "../lib/text";
import type { ErrorDetail } from "./envelopes";
import { ApiError } from "./errors";
import { catalogueMessage, unknownParameterError, zodDetails } from "./request";

/**
 * Reads a JSON request body.
 *
 * @returns the decoded JSON value (any JSON; `parseBodyWith` checks it is an object).
 * @throws ApiError 415 UNSUPPORTED_MEDIA_TYPE (not `application/json`), 413
 *   PAYLOAD_TOO_LARGE (over 1 MiB, by header or by the bytes read: no more than 1 MiB is
 *   ever read), 400 INVALID_JSON.
 */
export async function readJson(request: Request): Promise<unknown> {
  const type = (request.headers.get("content-type") ?? "").split(";")[0]!.trim().toLowerCase();
  if (type !== "application/json") throw new ApiError("UNSUPPORTED_MEDIA_TYPE");
  const declared = Number(request.headers.get("content-length") ?? "0");
  if (declared > MAX_BODY_BYTES) throw new ApiError("PAYLOAD_TOO_LARGE");
  const bytes = await readAtMost(request, MAX_BODY_BYTES);
  if (bytes === undefined) throw new ApiError("PAYLOAD_TOO_LARGE");
  try {
    return JSON.parse(new TextDecoder("utf-8", { fatal: true, ignoreBOM: false }).decode(bytes));
  } catch {
    throw new ApiError("INVALID_JSON", "The body is not valid JSON (UTF-8).");
  }
}

/**
 * The JSON body of an operation whose body may be absent (every field optional): `{}` when
 * the request has no body (or an empty one), else what `readJson` reads.
 *
 * @throws ApiError as `readJson` (415, 413, 400 INVALID_JSON).
 */
export async function readOptionalJson(request: Request): Promise<unknown> {
  const length = request.headers.get("content-length");
  const present = length !== null ? Number(length) > 0 : request.body !== null;
  return present ? readJson(request) : {};
}

/**
 * The body's bytes, read chunk by chunk and given up past `limit`: a body sent without
 * `content-length` (chunked) is not buffered whole before its size is known.
 *
 * @returns the bytes, or `undefined` when there are more than `limit` (the rest is not read).
 */
async function readAtMost(request: Request, limit: number): Promise<Uint8Array | undefined> {
  if (request.body === null) return new Uint8Array(0);
  const reader = request.body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.byteLength;
    if (total > limit) {
      await reader.cancel();
      return undefined;
    }
    chunks.push(value);
  }
  const bytes = new Uint8Array(total);
  let at = 0;
  for (const c of chunks) {
    bytes.set(c, at);
    at += c.byteLength;
  }
  return bytes;
}

/**
 * Body keys that are never fields, at any depth of any body (docs/reference.md § "Conventions"): they
 * name JavaScript's prototype machinery. `JSON.parse` makes `"__proto__"` an own property,
 * which zod's object parsing drops silently instead of reporting it as unknown, so these
 * keys are looked for before any schema runs.
 */
const PROTOTYPE_KEYS: ReadonlySet<string> = new Set(["__proto__", "constructor", "prototype"]);

/**
 * Longest list any body may hold, in items: the longest any field accepts (a search id
 * list). A longer one is refused before any schema judges its items one by one.
 */
const MAX_BODY_LIST = SEARCH_MAX_IDS;

/** An unpaired UTF-16 surrogate (with the `u` flag, a well-formed pair is one code point and does not match). */
const LONE_SURROGATE = /[\uD800-\uDFFF]/u;

/** A JSON path as a list of keys and indexes (`["professors", 0, "signed"]`; `[]` is the root). */
type BodyPath = (string | number)[];

/**
 * What a decoded JSON body holds that no operation accepts, whatever its schema:
 * - `prototypeKeys`: paths of keys in `PROTOTYPE_KEYS` (→ 400 UNKNOWN_PARAMETER);
 * - `illFormed`: paths of strings (keys or values) with an unpaired surrogate (`"\ud800"`):
 *   such a string has no UTF-8 form, so D1 would store something else than was sent
 *   (→ 400 VALIDATION_ERROR);
 * - `longLists`: paths of arrays of more than `MAX_BODY_LIST` items (→ 400 VALIDATION_ERROR).
 *
 * Walks the value depth first, in document order, without recursion (a 1 MiB body may nest
 * half a million levels deep) and with one small frame per level of the current path (a
 * 1 MiB array may hold half a million items); stops once each list holds `max` paths.
 */
function bodyHazards(value: unknown, max = 20): { prototypeKeys: BodyPath[]; illFormed: BodyPath[]; longLists: BodyPath[] } {
  const prototypeKeys: BodyPath[] = [];
  const illFormed: BodyPath[] = [];
  const longLists: BodyPath[] = [];
  /** An object or array being walked: its keys (objects), the next child, and its own key in its parent. */
  type Frame = { node: Record<string, unknown> | unknown[]; keys: string[] | null; next: number; key: string | number };
  const frames: Frame[] = [];
  const pathTo = (key: string | number | undefined): BodyPath => {
    const path = frames.slice(1).map((f) => f.key);
    if (key !== undefined) path.push(key);
    return path;
  };
  const visit = (v: unknown, key: string | number | undefined) => {
    if (typeof key === "string") {
      if (PROTOTYPE_KEYS.has(key) && prototypeKeys.length < max) prototypeKeys.push(pathTo(key));
      if (LONE_SURROGATE.test(key) && illFormed.length < max) illFormed.push(pathTo(key));
    }
    if (typeof v === "string") {
      if (illFormed.length < max && LONE_SURROGATE.test(v)) illFormed.push(pathTo(key));
    } else if (v !== null && typeof v === "object") {
      if (Array.isArray(v) && v.length > MAX_BODY_LIST && longLists.length < max) longLists.push(pathTo(key));
      frames.push({ node: v as Frame["node"], keys: Array.isArray(v) ? null : Object.keys(v), next: 0, key: key ?? "" });
    }
  };
  visit(value, undefined);
  while (frames.length > 0 && (prototypeKeys.length < max || illFormed.length < max || longLists.length < max)) {
    const f = frames[frames.length - 1]!;
    if (f.keys === null) {
      const list = f.node as unknown[];
      if (f.next >= list.length) frames.pop();
      else visit(list[f.next], f.next++);
    } else if (f.next >= f.keys.length) {
      frames.pop();
    } else {
      const key = f.keys[f.next++]!;
      visit((f.node as Record<string, unknown>)[key], key);
    }
  }
  return { prototypeKeys, illFormed, longLists };
}

/** Most problems a VALIDATION_ERROR lists in `details` (and in its message, 10); the rest are counted. */
const MAX_REPORTED_PROBLEMS = 100;

/**
 * Validates a decoded JSON body with an operation's body schema (a `z.strictObject`, whose
 * keys are the accepted field names): the one place where every body's fields are judged.
 *
 * Besides the schema (`bodyHazards`, docs/reference.md § "Conventions"): a key `__proto__`,
 * `constructor` or `prototype` at any depth is an unknown field; a string with an unpaired
 * surrogate is invalid; a list of more than `MAX_BODY_LIST` items is invalid, judged before
 * the schema runs (which would otherwise report one issue per item).
 *
 * @param notObject the message when the body is not a JSON object.
 * @throws ApiError 400 VALIDATION_ERROR (not an object: path `$`; else the problems' JSON
 *   paths, at most 100 in `details`, 10 in `message`, the rest counted), or 400
 *   UNKNOWN_PARAMETER when the only problems are unknown fields.
 */
export function parseBodyWith<T extends z.ZodObject>(schema: T, body: unknown, notObject = "The body must be a JSON object."): z.output<T> {
  if (typeof body !== "object" || body === null || Array.isArray(body)) {
    throw new ApiError("VALIDATION_ERROR", notObject, [{ path: "$", message: "must be an object" }]);
  }
  const hazards = bodyHazards(body);
  const tooLong: ErrorDetail[] = hazards.longLists.map((path) => ({ path: jsonPath(path), message: `must list at most ${MAX_BODY_LIST} items` }));
  const parsed = tooLong.length > 0 ? undefined : schema.safeParse(body, { error: catalogueMessage });
  if (parsed?.success && hazards.prototypeKeys.length === 0 && hazards.illFormed.length === 0) return parsed.data;
  const issues = parsed === undefined || parsed.success ? [] : parsed.error.issues;
  const schemaProblems = issues.filter((i) => i.code !== "unrecognized_keys");
  const unknown = [
    ...new Set([
      ...hazards.prototypeKeys.map(jsonPath),
      ...issues.flatMap((i) => (i.code === "unrecognized_keys" ? i.keys.map((k) => jsonPath([...i.path, k])) : [])),
    ]),
  ];
  const invalid: ErrorDetail[] = [
    ...tooLong,
    ...hazards.illFormed.map((path) => ({
      path: jsonPath(path),
      message: "must be well-formed Unicode text (an unpaired surrogate such as \\ud800 has no UTF-8 form)",
    })),
    ...schemaProblems.slice(0, MAX_REPORTED_PROBLEMS).flatMap((issue) => zodDetails(new z.ZodError([issue]), "path")),
  ];
  if (invalid.length === 0) throw unknownParameterError(unknown, Object.keys(schema.shape), "path");
  const found = unknown.length + invalid.length + Math.max(0, schemaProblems.length - MAX_REPORTED_PROBLEMS);
  const details: ErrorDetail[] = [...unknown.map((path) => ({ path, message: "unknown field" })), ...invalid].slice(0, MAX_REPORTED_PROBLEMS);
  const more = (shown: number) => (found > shown ? ` (and ${found - shown} more)` : "");
  throw new ApiError(
    "VALIDATION_ERROR",
    `The body breaks the schema: ${details
      .slice(0, 10)
      .map((d) => `${"path" in d ? d.path : d.parameter} ${d.message}`)
      .join("; ")}${more(Math.min(10, details.length))}.`,
    details,
  );
}

/** `readJson` then `parseBodyWith`. */
export async function parseBody<T extends z.ZodObject>(schema: T, request: Request, notObject?: string): Promise<z.output<T>> {
  return parseBodyWith(schema, await readJson(request), notObject);
}
