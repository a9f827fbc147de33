/**
 * A control character: C0 (U+0000–U+001F), DEL (U+007F) or C1 (U+0080–U+009F). Text that an
 * operator's terminal may print (key labels, imported names: docs/operations.md) refuses them:
 * an escape sequence such as OSC 52 (`ESC ] 52 ; c ; … BEL`) can write the clipboard.
 */
// biome-ignore lint/suspicious/noControlCharactersInRegex: the characters refused.
export const CONTROL_CHAR_RE = /[\u0000-\u001f\u007f-\u009f]/;

/** The message of a text refused for `CONTROL_CHAR_RE`. */
export const CONTROL_CHAR_MESSAGE = "must not contain control characters";

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
