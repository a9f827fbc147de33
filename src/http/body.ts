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
