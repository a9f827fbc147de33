/**
 * What the CLIs print of stored text (school names, key labels, import problems), made safe
 * for a terminal (docs/operations.md § "Operating the service"): a control character could
 * start an escape sequence (OSC 52 writes the clipboard, others retitle or recolour).
 */
import { CONTROL_CHAR_RE, INVISIBLE_CHAR_RE } from "../../src/lib/text";

/** The characters imported text refuses (src/lib/text.ts), every one of them: controls, bidirectional and zero-width ones. */
const CONTROLS = new RegExp(`${CONTROL_CHAR_RE.source}|${INVISIBLE_CHAR_RE.source}`, "g");

/**
 * `text` with every C0 (U+0000–U+001F), DEL and C1 (U+0080–U+009F) control and every
 * bidirectional or zero-width character (`INVISIBLE_CHAR_RE`) written as a JSON escape,
 * `\u001b`; the rest unchanged. Applied to `JSON.stringify` output it keeps it valid
 * JSON (the C1 controls and DEL, which `JSON.stringify` leaves raw, become escapes of themselves).
 */
export function printable(text: string): string {
  return text.replace(CONTROLS, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);
}

/**
 * `JSON.stringify(value, null, 2)` safe for a terminal: it escapes C0 controls in strings
 * already; DEL and the C1 controls, which it leaves raw, are escaped too (still valid JSON,
 * parsing to the same value).
 */
export function printableJson(value: unknown): string {
  return JSON.stringify(value, null, 2).replace(new RegExp(`[\\u007f-\\u009f]|${INVISIBLE_CHAR_RE.source}`, "g"), printable);
}
