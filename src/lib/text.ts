/**
 * A control character: C0 (U+0000–U+001F), DEL (U+007F) or C1 (U+0080–U+009F). Text that an
 * operator's terminal may print (key labels, imported names: docs/operations.md) refuses them:
 * an escape sequence such as OSC 52 (`ESC ] 52 ; c ; … BEL`) can write the clipboard.
 */
// biome-ignore lint/suspicious/noControlCharactersInRegex: the characters refused.
export const CONTROL_CHAR_RE = /[\u0000-\u001f\u007f-\u009f]/;

/** The message of a text refused for `CONTROL_CHAR_RE`. */
const CONTROL_CHAR_MESSAGE = "must not contain control characters";

/**
 * A character that reorders or hides text where it is shown: the bidirectional controls
 * (U+202A–U+202E embeddings and overrides, U+2066–U+2069 isolates, U+200E/U+200F marks,
 * U+061C) and the zero-width ones (U+200B–U+200D, U+2060, U+FEFF). In a terminal's table a
 * name holding one can show another's text or look like another name ("Trojan Source").
 */
export const INVISIBLE_CHAR_RE = /[\u202a-\u202e\u2066-\u2069\u200e\u200f\u061c\u200b-\u200d\u2060\ufeff]/;

/**
 * Why text that an operator's terminal prints (imported names, key labels:
 * docs/operations.md § "Data import") cannot be stored, or null: a control character
 * (`CONTROL_CHAR_MESSAGE`), or a bidirectional or zero-width one (`INVISIBLE_CHAR_RE`),
 * named by its code point and position (0-based, in UTF-16 units).
 */
export function terminalTextProblem(text: string): string | null {
  if (CONTROL_CHAR_RE.test(text)) return CONTROL_CHAR_MESSAGE;
  const m = INVISIBLE_CHAR_RE.exec(text);
  if (m === null) return null;
  const code = `U+${m[0].charCodeAt(0).toString(16).toUpperCase().padStart(4, "0")}`;
  return `must not contain bidirectional or zero-width characters (${code} at ${m.index})`;
}

/**
 * Case- and accent-folding shared by the `name` filter and the `name` / `classroom` sorts
 * (docs/reference.md § "GET /v3/courses", § "POST /v3/courses:search").
 *
 * `fold("Économie")` → `"economie"`: NFKD decomposition, combining marks removed, lower
 * case, plus the ligatures that do not decompose (œ, æ, ß).
 */
export function fold(text: string): string {
  return text.normalize("NFKD").replace(/\p{M}/gu, "").toLowerCase().replace(/œ/g, "oe").replace(/æ/g, "ae").replace(/ß/g, "ss");
}

/** Levenshtein distance, for "did you mean" hints on unknown parameters. */
function editDistance(a: string, b: string): number {
  const prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    let diag = prev[0]!;
    prev[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const up = prev[j]!;
      prev[j] = Math.min(up + 1, prev[j - 1]! + 1, diag + (a[i - 1] === b[j - 1] ? 0 : 1));
      diag = up;
    }
  }
  return prev[b.length]!;
}

/** Shortest name matched as a prefix or suffix of an accepted one (a shorter one says too little). */
const MIN_AFFIX = 4;

/**
 * The accepted name closest to `name`: the nearest by case-insensitive edit distance ≤ 3,
 * else one that `name` begins or ends (`courseStartDate`, `startDateTime` →
 * `courseStartDateTime`) or that begins or ends `name`, the closest in length; if any.
 */
export function closestName(name: string, accepted: readonly string[]): string | undefined {
  const lower = name.toLowerCase();
  let best: string | undefined;
  let bestDistance = 4;
  for (const candidate of accepted) {
    const other = candidate.toLowerCase();
    // The distance is at least the difference in length: skip the quadratic work (a name
    // may be a megabyte long).
    if (Math.abs(lower.length - other.length) >= bestDistance) continue;
    const d = editDistance(lower, other);
    if (d < bestDistance) {
      best = candidate;
      bestDistance = d;
    }
  }
  if (best !== undefined) return best;
  let bestGap = Number.POSITIVE_INFINITY;
  for (const candidate of accepted) {
    const other = candidate.toLowerCase();
    const [short, long] = lower.length <= other.length ? [lower, other] : [other, lower];
    if (short.length < MIN_AFFIX || !(long.startsWith(short) || long.endsWith(short))) continue;
    if (long.length - short.length < bestGap) {
      best = candidate;
      bestGap = long.length - short.length;
    }
  }
  return best;
}

/** A JSON path for error details: `["sort", 0, "field"]` → `sort[0].field`; the root is `$`. */
export function jsonPath(path: readonly PropertyKey[]): string {
  return path.reduce<string>((acc, p) => (typeof p === "number" ? `${acc}[${p}]` : acc ? `${acc}.${String(p)}` : String(p)), "") || "$";
}
