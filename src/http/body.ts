import { ApiError } from "./errors";

/** Largest accepted request body, in bytes (1 MiB; API.md § "Error codes"). */
export const MAX_BODY_BYTES = 1024 * 1024;

/**
 * Reads a JSON request body.
 *
 * @returns the decoded JSON value (any JSON, objects are checked by the caller's schema).
 * @throws ApiError 415 UNSUPPORTED_MEDIA_TYPE (not `application/json`), 413
 *   PAYLOAD_TOO_LARGE (over 1 MiB, by header or by actual size), 400 INVALID_JSON.
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
  const bytes = new Uint8Array(await request.arrayBuffer());
  if (bytes.byteLength > MAX_BODY_BYTES) throw tooLarge();
  let text: string;
  try {
    text = new TextDecoder("utf-8", { fatal: true, ignoreBOM: false }).decode(bytes);
    return JSON.parse(text);
  } catch {
    throw new ApiError(400, "INVALID_JSON", "The body is not valid JSON (UTF-8).");
  }
}

/**
 * Body keys that are never fields, at any depth of any body (API.md § "Conventions"): they
 * name JavaScript's prototype machinery. `JSON.parse` makes `"__proto__"` an own property,
 * which zod's object parsing drops silently instead of reporting it as unknown, so these
 * keys are looked for before any schema runs.
 */
export const PROTOTYPE_KEYS: ReadonlySet<string> = new Set(["__proto__", "constructor", "prototype"]);

/** An unpaired UTF-16 surrogate (with the `u` flag, a well-formed pair is one code point and does not match). */
const LONE_SURROGATE = /[\uD800-\uDFFF]/u;

/** A JSON path as a list of keys and indexes (`["professors", 0, "signed"]`; `[]` is the root). */
export type BodyPath = (string | number)[];

/**
 * What a decoded JSON body holds that no operation accepts, whatever its schema:
 * - `prototypeKeys`: paths of keys in `PROTOTYPE_KEYS` (→ 400 UNKNOWN_PARAMETER);
 * - `illFormed`: paths of strings (keys or values) with an unpaired surrogate (`"\ud800"`):
 *   such a string has no UTF-8 form, so D1 would store something else than was sent
 *   (→ 400 VALIDATION_ERROR).
 *
 * Walks the value iteratively (a 1 MiB body may nest half a million levels deep); each list
 * holds at most `max` paths.
 */
export function bodyHazards(value: unknown, max = 20): { prototypeKeys: BodyPath[]; illFormed: BodyPath[] } {
  type Link = { parent: Link | undefined; key: string | number } | undefined;
  const pathOf = (link: Link): BodyPath => {
    const out: BodyPath = [];
    for (let l = link; l; l = l.parent) out.push(l.key);
    return out.reverse();
  };
  const prototypeKeys: BodyPath[] = [];
  const illFormed: BodyPath[] = [];
  const stack: [unknown, Link][] = [[value, undefined]];
  // Depth first, in document order (children are pushed last to first).
  while (stack.length > 0) {
    const [v, link] = stack.pop()!;
    if (link && typeof link.key === "string") {
      if (PROTOTYPE_KEYS.has(link.key) && prototypeKeys.length < max) prototypeKeys.push(pathOf(link));
      if (LONE_SURROGATE.test(link.key) && illFormed.length < max) illFormed.push(pathOf(link));
    }
    if (typeof v === "string") {
      if (LONE_SURROGATE.test(v) && illFormed.length < max) illFormed.push(pathOf(link));
    } else if (Array.isArray(v)) {
      for (let i = v.length - 1; i >= 0; i--) stack.push([v[i], { parent: link, key: i }]);
    } else if (v !== null && typeof v === "object") {
      const keys = Object.keys(v);
      for (let i = keys.length - 1; i >= 0; i--) stack.push([(v as Record<string, unknown>)[keys[i]!], { parent: link, key: keys[i]! }]);
    }
  }
  return { prototypeKeys, illFormed };
}
