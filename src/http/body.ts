import { ApiError } from "./errors";

/** Largest accepted request body, in bytes (1 MiB; API.md § "Error codes"). */
export const MAX_BODY_BYTES = 1024 * 1024;

/**
 * Reads a JSON request body.
 *
 * @returns the decoded JSON value (any JSON, objects are checked by the caller's schema).
 * @throws ApiError 415 UNSUPPORTED_MEDIA_TYPE (not `application/json`), 413
 *   PAYLOAD_TOO_LARGE (over 1 MiB, by header or by the bytes read: no more than 1 MiB is
 *   ever read), 400 INVALID_JSON.
 */
export async function readJson(request: Request): Promise<unknown> {
  const type = (request.headers.get("content-type") ?? "").split(";")[0]!.trim().toLowerCase();
  if (type !== "application/json") {
    throw new ApiError(415, "UNSUPPORTED_MEDIA_TYPE", "Send the body as JSON with `content-type: application/json`.");
  }
  const tooLarge = () =>
    new ApiError(413, "PAYLOAD_TOO_LARGE", `The body is larger than ${MAX_BODY_BYTES} bytes (1 MiB).`);
  const declared = Number(request.headers.get("content-length") ?? "0");
  if (declared > MAX_BODY_BYTES) throw tooLarge();
  const bytes = await readAtMost(request, MAX_BODY_BYTES);
  if (bytes === undefined) throw tooLarge();
  let text: string;
  try {
    text = new TextDecoder("utf-8", { fatal: true, ignoreBOM: false }).decode(bytes);
    return JSON.parse(text);
  } catch {
    throw new ApiError(400, "INVALID_JSON", "The body is not valid JSON (UTF-8).");
  }
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
 * Body keys that are never fields, at any depth of any body (API.md § "Conventions"): they
 * name JavaScript's prototype machinery. `JSON.parse` makes `"__proto__"` an own property,
 * which zod's object parsing drops silently instead of reporting it as unknown, so these
 * keys are looked for before any schema runs.
 */
export const PROTOTYPE_KEYS: ReadonlySet<string> = new Set(["__proto__", "constructor", "prototype"]);

/**
 * Longest list any body may hold, in items: the longest any field accepts (a search id
 * list, API.md § "POST /v3/courses:search": up to 10,000). A longer one is refused before
 * any schema judges its items one by one.
 */
export const MAX_BODY_LIST = 10_000;

/** An unpaired UTF-16 surrogate (with the `u` flag, a well-formed pair is one code point and does not match). */
const LONE_SURROGATE = /[\uD800-\uDFFF]/u;

/** A JSON path as a list of keys and indexes (`["professors", 0, "signed"]`; `[]` is the root). */
export type BodyPath = (string | number)[];

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
export function bodyHazards(value: unknown, max = 20): { prototypeKeys: BodyPath[]; illFormed: BodyPath[]; longLists: BodyPath[] } {
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
