/**
 * Hostile requests for every route (fast-check arbitraries), shared by the vitest fuzz suite
 * and `npm run fuzz` (scripts/fuzz.ts). Each is valid or definitely invalid by construction
 * and carries what the contract lets the service answer (`expect`): a valid one its success
 * or a state-dependent code (404, 409); an invalid one a 4xx in the family of its faults,
 * never a 2xx. The orderings taken from docs/choices.md (401 first; UNKNOWN_PARAMETER alone
 * vs VALIDATION_ERROR mixed; a write's schema before its date range and references) and
 * the values never generated because the contract leaves them ambiguous:
 * docs/development.md § Fuzzing.
 */
import fc from "fast-check";
import { C, type Code, LIST_PARAMS, methodsOf, ROUTES, SEARCH_FIELDS, WEBHOOK_FIELDS, WRITE_FIELDS } from "./contract";

// ---------------------------------------------------------------------------------------
// The request model.

/** What the contract lets the service answer to a request. */
interface Expectation {
  /** Success statuses (empty for an invalid request). */
  success: number[];
  /** Error codes allowed. */
  codes: Code[];
}

/** One generated request, ready to send. */
export interface FuzzRequest {
  /** The route template aimed at (`GET /v3/courses/:id`), or `misrouted` / `unknown path`. */
  route: string;
  method: string;
  /** Path and query string, encoded (`/v3/courses?name=%25`). */
  path: string;
  headers: Record<string, string>;
  body?: string | Uint8Array;
  /** Why the request breaks the contract; empty for a valid request. */
  faults: string[];
  expect: Expectation;
  /** `true` for a route that writes (a valid one is generated with the write school's key). */
  writes: boolean;
}

/**
 * What the runner knows of the data it fuzzes. `readKey`'s school must end the run
 * unchanged: only reads, invalid requests and writes that must fail use its key; valid
 * writes use `writeKey`.
 */
export interface FuzzContext {
  readKey: string;
  writeKey: string;
  /** Well-formed keys the service must refuse (unknown, revoked). */
  refusedKeys: string[];
  readCourseIds: string[];
  writeCourseIds: string[];
  /** Ids that exist in the write school, for valid write bodies. */
  writeRefs: Refs;
  /** Ids that exist in the read school (invalid writes sent there reference only these, unless meant not to). */
  readRefs: Refs;
  /** Registrations the run never deletes. */
  readWebhookIds: string[];
  writeWebhookIds: string[];
  /** Registrations of the write school a valid DELETE may remove. */
  deletableWebhookIds: string[];
  /** Targets a valid registration may take; empty: no valid registration is generated. */
  webhookUrls: string[];
  /** The server's WEBHOOK_ALLOW_INSECURE_URLS (`true` lifts the URL policy but the scheme). */
  insecureUrls: boolean;
}

/** Reference ids of a school, by kind. */
export interface Refs {
  groupIds: string[];
  studentIds: string[];
  professorIds: string[];
  trainingIds: string[];
  surveyTemplateIds: string[];
}

/** A fault put into a request, with the codes it may answer. */
interface Fault {
  what: string;
  codes: Code[];
  /** Body faults: judged at schema time (`schema`: VALIDATION_ERROR or UNKNOWN_PARAMETER) or after (`semantic`). */
  stage?: "unknown" | "schema" | "semantic";
}

const fault = (what: string, ...codes: Code[]): Fault => ({ what, codes });
const unknownField = (what: string): Fault => ({ what, codes: ["UNKNOWN_PARAMETER"], stage: "unknown" });
const schemaFault = (what: string): Fault => ({ what, codes: ["VALIDATION_ERROR"], stage: "schema" });
const semanticFault = (what: string, ...codes: Code[]): Fault => ({ what, codes, stage: "semantic" });

/**
 * The codes of a set of body faults, in the order the service judges a body: unknown
 * fields alone → UNKNOWN_PARAMETER; any other schema fault → VALIDATION_ERROR; only when the
 * schema holds, the semantic faults (date range, references, URL policy), in any order.
 */
function bodyCodes(faults: Fault[]): Code[] {
  const schema = faults.filter((f) => f.stage === "schema");
  const unknown = faults.filter((f) => f.stage === "unknown");
  if (schema.length > 0) return ["VALIDATION_ERROR"];
  if (unknown.length > 0) return ["UNKNOWN_PARAMETER"];
  return [...new Set(faults.flatMap((f) => f.codes))];
}

// ---------------------------------------------------------------------------------------
// Values.

/** `arb`'s value with probability `p`, else `null`. */
function sometimes<T>(arb: fc.Arbitrary<T>, p: number): fc.Arbitrary<T | null> {
  const n = Math.round(1 / p);
  return fc.oneof({ weight: n - 1, arbitrary: fc.constant(null) }, { weight: 1, arbitrary: arb });
}

const ID_CHARS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-";
const idChar = fc.constantFrom(...ID_CHARS.split(""));

/** A well-formed id (1–64 characters), maybe at the maximum length. */
const anyId = fc.oneof(
  { weight: 9, arbitrary: fc.string({ unit: idChar, minLength: 1, maxLength: 12 }) },
  { weight: 1, arbitrary: fc.string({ unit: idChar, minLength: 60, maxLength: 64 }) },
);

/** A well-formed id that exists nowhere (prefix `zz`, which no fixture or demo id uses). */
const unknownId = fc.oneof(
  fc.string({ unit: idChar, minLength: 1, maxLength: 10 }).map((s) => `zz${s}`),
  fc.string({ unit: idChar, minLength: 62, maxLength: 62 }).map((s) => `zz${s}`),
);

/** Characters that have broken text handling somewhere (SQL wildcards, escapes, NUL, accents, ligatures, astral, RTL, BOM, …). */
const NASTY_CHARS = [
  "%",
  "_",
  "\\",
  "'",
  '"',
  "`",
  ";",
  "--",
  "\u0000",
  "\n",
  "\r",
  "\t",
  "é",
  "É",
  "e\u0301",
  "\u0301",
  "ß",
  "œ",
  "Æ",
  "İ",
  "ı",
  "ﬁ",
  "ǅ",
  "😀",
  "𝔘",
  "👩‍👩‍👧",
  "ا",
  "ש",
  "\u200d",
  "\u202e",
  "\ufeff",
  "\ufffd",
  "中",
  "ー",
  "<",
  ">",
  "&",
  "+",
  "#",
  "?",
  "/",
  "=",
  ",",
  " ",
  "*",
  "[",
  "]",
  "{",
  "}",
];

/** Text of any characters (BMP and astral, no unpaired surrogate). */
const anyText = (maxLength: number) =>
  fc.string({
    unit: fc.oneof(
      { weight: 3, arbitrary: fc.constantFrom(...NASTY_CHARS) },
      { weight: 3, arbitrary: fc.string({ unit: "grapheme-ascii", minLength: 1, maxLength: 1 }) },
      { weight: 1, arbitrary: fc.string({ unit: "binary", minLength: 1, maxLength: 1 }) },
    ),
    maxLength,
  });

const codePoints = (s: string) => [...s].length;
/** An unpaired surrogate (with `u`, a well-formed pair is one code point). */
const LONE_SURROGATE = /[\uD800-\uDFFF]/u;
/** The first `n` code points of `s` (never half a pair). */
const firstCodePoints = (s: string, n: number) => [...s].slice(0, n).join("");

/**
 * `name` / `classroom` text the contract accepts: 1–200 characters, counted either way
 * (UTF-16 units and code points agree on the bound), no blank at either end (the writes
 * trim; a blank-edged value is left out rather than guessed).
 */
const validText = (max: number) =>
  fc
    .oneof(
      { weight: 6, arbitrary: anyText(40) },
      { weight: 1, arbitrary: fc.tuple(anyText(max), fc.constantFrom(...NASTY_CHARS)).map(([a, b]) => (a + b.repeat(max)).slice(0, max)) },
      {
        weight: 1,
        arbitrary: fc.constantFrom(
          "%".repeat(max),
          "_".repeat(max),
          "\\".repeat(max),
          "%_".repeat(max / 2),
          "é".repeat(max),
          "😀".repeat(max / 2),
          "a".repeat(49),
          "%".repeat(49),
          "_".repeat(50),
          "x".repeat(51),
        ),
      },
    )
    .filter((s) => s.length >= 1 && s.length <= max && s === s.trim() && !LONE_SURROGATE.test(s));

/** Text over the limit by any count: more than `max` code points (so more than `max` UTF-16 units too). */
const tooLongText = (max: number) =>
  fc
    .oneof(
      fc.tuple(fc.constantFrom("a", "é", "😀", "%", "_", " x"), fc.integer({ min: 1, max: 3 * max })).map(([c, extra]) => c.repeat(max + extra)),
      fc.constant("y".repeat(100_000)),
    )
    .filter((s) => codePoints(s) > max);

/** An instant the contract accepts (zone `Z` or `±hh:mm`, with or without seconds and milliseconds). */
const validInstant = fc
  .tuple(
    fc.date({ min: new Date("2000-01-01T00:00:00Z"), max: new Date("2099-12-31T00:00:00Z"), noInvalidDate: true }),
    fc.constantFrom("Z", "+02:00", "-05:00", "+00:00", "+14:00", "-12:00"),
    fc.constantFrom("ms", "s", "min"),
  )
  .map(([d, zone, precision]) => {
    const offsetMin = zone === "Z" ? 0 : (zone[0] === "-" ? -1 : 1) * (Number(zone.slice(1, 3)) * 60 + Number(zone.slice(4, 6)));
    const local = new Date(d.getTime() + offsetMin * 60_000).toISOString().slice(0, precision === "ms" ? 23 : precision === "s" ? 19 : 16);
    return { text: local + zone, ms: Date.parse(local + zone) };
  });

/** A string that is not an instant with a zone: nothing at its end reads as `Z` or `±hh:mm`. */
const notAnInstant = fc.oneof(
  fc.constantFrom(
    "2026-09-07T08:00:00",
    "2026-09-07",
    "yesterday",
    "2026-09-07T08:00:00+2",
    "",
    "0",
    "2026-13-01T00:00:00",
    "9999999999999",
    "2026-09-07T08:00:00Zx",
  ),
  anyText(40).filter((s) => !/(Z|[+-]\d\d:\d\d|\s\d\d:\d\d)$/.test(s)),
);

/** A JSON value that is not a string. */
const notString = fc.oneof(
  fc.constant(null),
  fc.boolean(),
  fc.integer(),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc.constant([]),
  fc.constant({}),
  fc.array(fc.string(), { maxLength: 3 }),
);
/** A JSON value that is not a boolean. */
const notBoolean = fc.oneof(
  fc.constant(null),
  fc.constantFrom("true", "false", "1", "0", "yes", ""),
  fc.integer({ min: -1, max: 2 }),
  fc.constant([]),
  fc.constant({}),
);

/** Malformed ids: a character outside `[A-Za-z0-9_-]`, or 65+ characters. */
const malformedId = fc.oneof(
  anyText(20).filter((s) => s.length > 0 && !C.idRe.test(s)),
  fc.string({ unit: idChar, minLength: 65, maxLength: 200 }),
  fc.constantFrom("crs 01", "a/b", "a.b", "💥", "a%b", "crs_01'", "x;DROP TABLE courses", "\u0000"),
);

/** A path segment for an id: encoded, or raw %-garbage; never a dot segment. */
const pathSegment = (id: string) => encodeURIComponent(id);
const rawGarbageSegment = fc.constantFrom("%", "%zz", "%E0%A4%A", "%ED%A0%80", "%00", "%FF", "%C3", "a%2Fb", "%25", "%20");
const isDotSegment = (s: string) => /^(\.|%2e)+$/i.test(s);

// ---------------------------------------------------------------------------------------
// Authorization.

interface AuthChoice {
  header?: string;
  ok: boolean;
  label: string;
}

/** The key's header, or (one time in five) a header the service must refuse with 401. */
function authArb(ctx: FuzzContext, key: string): fc.Arbitrary<AuthChoice> {
  const bad: AuthChoice[] = [
    { label: "no Authorization", ok: false },
    { header: "", label: "empty Authorization", ok: false },
    { header: "Bearer", label: "scheme only", ok: false },
    { header: "Bearer ", label: "scheme and a blank", ok: false },
    { header: `Basic ${btoa("user:pass")}`, label: "Basic", ok: false },
    { header: `Token ${key}`, label: "another scheme", ok: false },
    { header: key, label: "key without scheme", ok: false },
    { header: `Bearer ${key} ${key}`, label: "two keys", ok: false },
    { header: `Bearer ${key.replace(/^sk_/, "pk_")}`, label: "not an sk_ key", ok: false },
    { header: `Bearer sk_${"a".repeat(201)}`, label: "key over 200 characters", ok: false },
    { header: "Bearer sk_bad@key!", label: "key with bad characters", ok: false },
    { header: `Bearer ${key}%`, label: "key with a % sign", ok: false },
    ...ctx.refusedKeys.map((k) => ({ header: `Bearer ${k}`, label: "unknown or revoked key", ok: false })),
  ];
  return fc.oneof(
    { weight: 4, arbitrary: fc.constant({ header: `Bearer ${key}`, ok: true, label: "key" }) },
    { weight: 1, arbitrary: fc.constantFrom(...bad) },
  );
}

// ---------------------------------------------------------------------------------------
// Query strings.

/** A query parameter: its name, its encoded value, and a fault if the value is wrong. */
interface Param {
  name: string;
  raw: string;
  fault?: Fault;
}

const enc = (v: string) => encodeURIComponent(v);
const param = (name: string, value: string, f?: Fault): Param => ({ name, raw: enc(value), fault: f });

/** A name that no operation defines (random, or a near miss of a real one). */
const unknownParamName = (accepted: readonly string[]) =>
  fc
    .oneof(
      fc.string({ unit: "grapheme-ascii", minLength: 1, maxLength: 16 }),
      fc.constantFrom(
        "limt",
        "Name",
        "groupIds",
        "studentIds",
        "courseId",
        "sort",
        "key",
        "api_key",
        "__proto__",
        "constructor",
        "prototype",
        "q",
        "offset",
        "include",
        "page[]",
        "limit ",
        " name",
      ),
      anyText(8).filter((s) => s.length > 0),
    )
    .filter((n) => !accepted.includes(n));

/** Valid values of GET /v3/courses parameters (by construction). */
function validListParam(name: string): fc.Arbitrary<Param[]> {
  if ((C.instantParams as readonly string[]).includes(name)) {
    // The `+` of an offset may arrive unencoded (read as a space): the contract repairs it.
    return fc.tuple(validInstant, fc.boolean()).map(([i, rawPlus]) => [{ name, raw: rawPlus ? enc(i.text).replace(/%2B/g, "+") : enc(i.text) }]);
  }
  if ((C.flagParams as readonly string[]).includes(name) || (C.includeParams as readonly string[]).includes(name)) {
    return fc.constantFrom(...C.booleans).map((v) => [param(name, v)]);
  }
  if ((C.idListParams as readonly string[]).includes(name)) {
    // Items trimmed, empty items dropped; a repeated parameter adds to the list; ≤ 100 ids in all.
    return fc
      .tuple(
        fc.oneof(
          { weight: 5, arbitrary: fc.array(anyId, { maxLength: 10 }) },
          { weight: 1, arbitrary: fc.array(anyId, { minLength: C.getMaxIds - 5, maxLength: C.getMaxIds }) },
        ),
        fc.integer({ min: 1, max: 3 }),
        fc.boolean(),
      )
      .map(([ids, parts, padded]) => {
        const chunk = Math.ceil(ids.length / parts) || 1;
        const out: Param[] = [];
        for (let i = 0; i < Math.max(1, ids.length); i += chunk) {
          const items = ids.slice(i, i + chunk).map((id) => (padded ? ` ${id} ` : id));
          out.push(param(name, padded ? `,${items.join(",")},,` : items.join(",")));
        }
        return out;
      });
  }
  if (name === "classroom" || name === "name") {
    // Sent encoded, or as raw %-garbage that decodes (leniently) to a valid text.
    return fc.oneof(
      validText(C.maxText).map((v) => [param(name, v)]),
      fc.constantFrom("%zz", "%", "%C3", "%ED%A0%80", "100%", "a+b", "%2525").map((raw) => [{ name, raw }]),
    );
  }
  if (name === "creatorId") return anyId.map((v) => [param(name, v)]);
  if (name === "page")
    return fc.oneof(fc.integer({ min: 1, max: 50 }), fc.constant(C.maxPage), fc.integer({ min: 1, max: C.maxPage })).map((n) => [param(name, String(n))]);
  if (name === "limit") return fc.integer({ min: 1, max: C.maxLimit }).map((n) => [param(name, String(n))]);
  throw new Error(`no generator for ${name}`);
}

/** A wrong value for a GET /v3/courses parameter (by construction). */
function invalidListParam(name: string): fc.Arbitrary<Param[]> {
  const bad = (values: fc.Arbitrary<string>) => values.map((v) => [param(name, v, fault(`${name}=${JSON.stringify(v).slice(0, 40)}`, "INVALID_PARAMETER"))]);
  if ((C.instantParams as readonly string[]).includes(name)) return bad(notAnInstant);
  if ((C.flagParams as readonly string[]).includes(name) || (C.includeParams as readonly string[]).includes(name)) {
    return bad(
      fc
        .oneof(fc.constantFrom("TRUE", "False", "yes", "no", "on", "", " true", "2", "-1", "01", "null", "true,false"), anyText(6))
        .filter((v) => !(C.booleans as readonly string[]).includes(v)),
    );
  }
  if ((C.idListParams as readonly string[]).includes(name)) {
    return fc.oneof(
      // A malformed id among good ones.
      fc
        .tuple(
          fc.array(anyId, { maxLength: 5 }),
          malformedId.filter((s) => !s.includes(",") && s.trim() === s && s.length > 0),
        )
        .map(([ids, badId]) => [param(name, [...ids, badId].join(","), fault(`${name} holds a malformed id`, "INVALID_PARAMETER"))]),
      // More than 100 ids.
      fc
        .integer({ min: C.getMaxIds + 1, max: 400 })
        .map((n) => [param(name, Array.from({ length: n }, (_, i) => `id${i}`).join(","), fault(`${name} lists ${n} ids`, "TOO_MANY_IDS"))]),
    );
  }
  // Kept under a few kilobytes: a URL much longer is refused before the Worker runs (414).
  if (name === "classroom" || name === "name")
    return bad(
      fc
        .oneof(
          fc.constant(""),
          tooLongText(C.maxText).map((s) => firstCodePoints(s, s.startsWith("y") ? 4000 : 500)),
        )
        .filter((s) => s === "" || codePoints(s) > C.maxText),
    );
  if (name === "creatorId") return bad(fc.oneof(fc.constant(""), malformedId));
  if (name === "page")
    return bad(
      fc.oneof(
        fc.constantFrom("0", "-1", "1.5", "1e3", "", "abc", " 1", "0x10", String(C.maxPage + 1), "99999999999", "+1"),
        fc.integer({ min: C.maxPage + 1, max: 2 ** 53 }).map(String),
      ),
    );
  if (name === "limit")
    return bad(fc.oneof(fc.constantFrom("0", "-5", "101", "1000", "", "ten", "5.0", " 5"), fc.integer({ min: C.maxLimit + 1, max: 1e9 }).map(String)));
  throw new Error(`no generator for ${name}`);
}

/** Joins params into a query string (`?a=1&b=2`), maybe shuffled; empty for none. */
const queryString = (params: Param[]) => (params.length === 0 ? "" : `?${params.map((p) => `${enc(p.name)}=${p.raw}`).join("&")}`);

/** Parameters of GET /v3/courses: valid ones, and (for an invalid request) at least one fault. */
function listQueryArb(names: readonly string[], invalid: boolean): fc.Arbitrary<Param[]> {
  const valid = fc
    .subarray([...names], { maxLength: Math.min(6, names.length) })
    .chain((chosen) => (chosen.length === 0 ? fc.constant([] as Param[][]) : fc.tuple(...chosen.map(validListParam))).map((ps) => ps.flat()));
  if (!invalid) return valid;
  const faulty = fc.oneof(
    { weight: 4, arbitrary: fc.constantFrom(...names).chain(invalidListParam) },
    {
      weight: 2,
      arbitrary: fc
        .tuple(unknownParamName(names), anyText(10))
        .map(([n, v]) => [param(n, v, fault(`unknown parameter ${JSON.stringify(n)}`, "UNKNOWN_PARAMETER"))]),
    },
    // A parameter that is not a list, given twice.
    {
      weight: 1,
      arbitrary: fc
        .constantFrom(...names.filter((n) => !(C.idListParams as readonly string[]).includes(n)))
        .chain((n) => fc.tuple(validListParam(n), validListParam(n)))
        .map(([a, b]) => [...a, { ...b[0]!, fault: fault(`${b[0]!.name} twice`, "INVALID_PARAMETER") }]),
    },
  );
  return fc
    .tuple(
      valid,
      fc.oneof(
        { weight: 4, arbitrary: fc.array(faulty, { minLength: 1, maxLength: 1 }) },
        { weight: 1, arbitrary: fc.array(faulty, { minLength: 2, maxLength: 3 }) },
      ),
    )
    .map(([v, f]) => [...v.filter((p) => !f.flat().some((q) => q.name === p.name)), ...f.flat()]);
}

// ---------------------------------------------------------------------------------------
// Bodies.

/** A body as sent: its bytes and content type, and its transport-level faults. */
interface BodySpec {
  body?: string | Uint8Array;
  contentType?: string;
  faults: Fault[];
}

const VALID_JSON_TYPES = ["application/json", "application/json; charset=utf-8", "application/json;charset=UTF-8", "Application/JSON"];
const utf8 = new TextEncoder();
/** Bytes of `s` in UTF-8 (the length first: most bodies are far from the limit). */
const utf8Length = (s: string) => (s.length * 3 <= C.maxBodyBytes ? s.length : utf8.encode(s).byteLength);

const WRONG_TYPES = [
  "text/plain",
  "application/x-www-form-urlencoded",
  "multipart/form-data; boundary=x",
  "application/jsonx",
  "application/json-patch+json",
  "text/json",
  "application/xml",
  "",
];

/** Sets an own, enumerable key (`obj.__proto__ = v` would set the prototype instead). */
function put(obj: Record<string, unknown>, key: string, value: unknown): Record<string, unknown> {
  Object.defineProperty(obj, key, { value, enumerable: true, writable: true, configurable: true });
  return obj;
}

/** A JSON value with deep nesting, as text (JSON.stringify would overflow the stack). */
const deepJson = fc
  .tuple(fc.integer({ min: 2, max: 200_000 }), fc.constantFrom("array", "object"))
  .map(([depth, kind]) => (kind === "array" ? `${"[".repeat(depth)}1${"]".repeat(depth)}` : `${'{"a":'.repeat(depth)}1${"}".repeat(depth)}`));

/** Text that JSON.parse refuses. */
const notJson = fc
  .oneof(
    fc.constantFrom("{", "[1,]", "NaN", "{'a':1}", '{"a":1,}', "undefined", "tru", '{"a" 1}', '"unterminated', "{}{}", "[]]", "--", '{"a":01}'),
    anyText(30),
  )
  .filter((t) => {
    if (t.length === 0) return false;
    try {
      JSON.parse(t);
      return false;
    } catch {
      return true;
    }
  });

/** Bytes that are not UTF-8. */
const notUtf8 = fc
  .constantFrom([0xff], [0x7b, 0x22, 0xc3, 0x28, 0x22, 0x3a, 0x31, 0x7d], [0xed, 0xa0, 0x80], [0xc0, 0xaf], [0x80, 0x80], [0xfe, 0xff, 0x00, 0x7b, 0x00, 0x7d])
  .map((b) => new Uint8Array(b));

/**
 * The transport of a JSON object body: valid (a JSON content type, the object as JSON) or,
 * for an invalid request, sometimes broken on the way (wrong content type, over 1 MiB, not
 * JSON, not UTF-8, not an object).
 */
function transport(json: fc.Arbitrary<{ text: string; faults: Fault[] }>, allowBroken: boolean, hasRequiredFields = false): fc.Arbitrary<BodySpec> {
  // Long lists add up: a body over 1 MiB is a 413 whatever else it holds.
  const sized = (j: { text: string; faults: Fault[] }) =>
    utf8Length(j.text) > C.maxBodyBytes ? { ...j, faults: [...j.faults, fault("body over 1 MiB", "PAYLOAD_TOO_LARGE")] } : j;
  const ok = fc.tuple(json.map(sized), fc.constantFrom(...VALID_JSON_TYPES)).map(([j, contentType]) => ({ body: j.text, contentType, faults: j.faults }));
  if (!allowBroken) return ok;
  const overLimit = (b: BodySpec): BodySpec =>
    typeof b.body === "string" && utf8Length(b.body) > C.maxBodyBytes && !b.faults.some((f) => f.codes.includes("PAYLOAD_TOO_LARGE"))
      ? { ...b, faults: [...b.faults, fault("body over 1 MiB", "PAYLOAD_TOO_LARGE")] }
      : b;
  return fc
    .oneof(
      { weight: 12, arbitrary: ok },
      {
        weight: 1,
        arbitrary: fc.tuple(json.map(sized), fc.constantFrom(...WRONG_TYPES)).map(([j, t]) => ({
          body: j.text,
          contentType: t || undefined,
          faults: [...j.faults, fault(`content-type ${JSON.stringify(t)}`, "UNSUPPORTED_MEDIA_TYPE")],
        })),
      },
      {
        weight: 1,
        arbitrary: fc
          .constantFrom(...VALID_JSON_TYPES)
          .map((contentType) => ({ body: `{"name":"${"x".repeat(C.maxBodyBytes)}"}`, contentType, faults: [fault("body over 1 MiB", "PAYLOAD_TOO_LARGE")] })),
      },
      { weight: 1, arbitrary: notJson.map((body) => ({ body, contentType: "application/json", faults: [fault("body not JSON", "INVALID_JSON")] })) },
      { weight: 1, arbitrary: notUtf8.map((body) => ({ body, contentType: "application/json", faults: [fault("body not UTF-8", "INVALID_JSON")] })) },
      {
        weight: 1,
        arbitrary: fc
          .oneof(fc.constantFrom("[]", "null", "1", '"text"', "true", "[{}]", '[{"__proto__":1}]'), deepJson)
          // An object nested deep is an object with an unknown field `a` (and without the
          // required ones); anything else is not an object.
          .map((body) => ({
            body,
            contentType: "application/json",
            faults: [
              body.startsWith("{") && !hasRequiredFields
                ? unknownField("deep object with unknown field a")
                : schemaFault(body.startsWith("{") ? "deep object without the required fields" : "body not an object"),
            ],
          })),
      },
    )
    .map(overLimit);
}

/**
 * An object body from per-field generators: a subset of valid fields and, for an invalid
 * request, at least one fault among: a wrong value, an unknown field, a prototype key, a
 * string with an unpaired surrogate, a value nested half a million levels deep.
 */
interface FieldGens {
  /** Valid values by field (fields absent from this map are never generated valid). */
  valid: Record<string, fc.Arbitrary<{ value: unknown; faults?: Fault[] }>>;
  /** Wrong values by field (schema faults unless their own faults say otherwise). */
  invalid: Record<string, fc.Arbitrary<{ value: unknown; faults: Fault[] }>>;
  /** Fields a valid body must carry. */
  required: string[];
  /** Every accepted field (for unknown-field names). */
  accepted: readonly string[];
  /** Paths inside the body where an object is strictly checked, besides the root (to plant keys there). */
  nested?: (obj: Record<string, unknown>) => Record<string, unknown>[];
  /** More names that are unknown fields here (e.g. PATCH-only fields on POST). */
  extraUnknown?: string[];
}

const withFaults = (value: unknown, ...faults: Fault[]) => ({ value, faults });

function objectBody(g: FieldGens, invalid: boolean): fc.Arbitrary<{ text: string; faults: Fault[] }> {
  const optional = Object.keys(g.valid).filter((k) => !g.required.includes(k));
  const base = fc.subarray(optional, { maxLength: Math.min(6, optional.length) }).chain((opt) => {
    const names = [...g.required, ...opt];
    if (names.length === 0) return fc.constant({ obj: {} as Record<string, unknown>, faults: [] as Fault[] });
    return fc.tuple(...names.map((n) => g.valid[n]!)).map((vals) => {
      const obj: Record<string, unknown> = {};
      const faults: Fault[] = [];
      names.forEach((n, i) => {
        put(obj, n, vals[i]!.value);
        faults.push(...(vals[i]!.faults ?? []));
      });
      return { obj, faults };
    });
  });
  if (!invalid) return base.map(({ obj, faults }) => ({ text: JSON.stringify(obj), faults }));

  type State = { obj: Record<string, unknown>; faults: Fault[] };
  type Mutation = (b: State) => State & { text?: (s: string) => string };
  /** The faults of `b` without those of field `n` (its value is being replaced). */
  // (`url: …`, `url missing`, `url https://…`: every fault of the field names it first.)
  const others = (b: State, n: string) => b.faults.filter((f) => !f.what.startsWith(`${n}:`) && !f.what.startsWith(`${n} `));
  const invalidNames = Object.keys(g.invalid);
  const validNames = Object.keys(g.valid);
  const targets = (b: State) => [b.obj, ...(g.nested?.(b.obj) ?? [])];
  const unknownName = fc
    .oneof(unknownParamName(g.accepted), ...(g.extraUnknown?.length ? [fc.constantFrom(...g.extraUnknown)] : []))
    .filter((n) => !["__proto__", "constructor", "prototype"].includes(n) && !g.accepted.includes(n));
  const mutations: { weight: number; arbitrary: fc.Arbitrary<Mutation> }[] = [
    // An unknown field, at the root or in a nested strict object.
    {
      weight: 2,
      arbitrary: fc.tuple(unknownName, fc.jsonValue({ maxDepth: 2 }), fc.nat()).map(
        ([n, v, pick]): Mutation =>
          (b) => {
            const t = targets(b);
            put(t[pick % t.length]!, n, v);
            return { obj: b.obj, faults: [...b.faults, unknownField(`unknown field ${JSON.stringify(n)}`)] };
          },
      ),
    },
    // A prototype key, at the root or in a nested strict object.
    {
      weight: 3,
      arbitrary: fc
        .tuple(fc.constantFrom("__proto__", "constructor", "prototype"), fc.oneof(fc.jsonValue({ maxDepth: 2 }), fc.constant({ polluted: true })), fc.nat())
        .map(
          ([n, v, pick]): Mutation =>
            (b) => {
              const t = targets(b);
              put(t[pick % t.length]!, n, v);
              return { obj: b.obj, faults: [...b.faults, unknownField(`prototype key ${n}`)] };
            },
        ),
    },
  ];
  if (invalidNames.length > 0) {
    mutations.push(
      // A wrong value for a field.
      {
        weight: 6,
        arbitrary: fc.constantFrom(...invalidNames).chain((n) =>
          g.invalid[n]!.map(
            (v): Mutation =>
              (b) => ({ obj: put(b.obj, n, v.value), faults: [...others(b, n), ...v.faults] }),
          ),
        ),
      },
      // A prototype key deep inside a field's value (the value is of the wrong type too).
      {
        weight: 1,
        arbitrary: fc.tuple(fc.constantFrom(...invalidNames), fc.constantFrom("__proto__", "constructor", "prototype"), fc.integer({ min: 1, max: 5 })).map(
          ([n, key, depth]): Mutation =>
            (b) => {
              let v: unknown = put({}, key, { admin: true });
              for (let i = 0; i < depth; i++) v = i % 2 === 0 ? [v] : put({}, "x", v);
              return {
                obj: put(b.obj, n, v),
                faults: [...others(b, n), schemaFault(`${n}: holds a nested prototype key`), unknownField(`${n}: nested ${key}`)],
              };
            },
        ),
      },
      // A field holding a list far longer than any body may hold.
      {
        weight: 1,
        arbitrary: fc.tuple(fc.constantFrom(...invalidNames), fc.integer({ min: 10_001, max: 300_000 })).map(
          ([n, length]): Mutation =>
            (b) => {
              const marker = "\u0001LONG\u0001";
              return {
                obj: put(b.obj, n, marker),
                faults: [...others(b, n), schemaFault(`${n}: lists ${length} items`)],
                text: (s) => s.replace(JSON.stringify(marker), `[${"0,".repeat(length - 1)}0]`),
              };
            },
        ),
      },
      // A field's value nested very deep.
      {
        weight: 1,
        arbitrary: fc.tuple(fc.constantFrom(...invalidNames), fc.integer({ min: 1000, max: 100_000 })).map(
          ([n, depth]): Mutation =>
            (b) => {
              const marker = "\u0001DEEP\u0001";
              return {
                obj: put(b.obj, n, marker),
                faults: [...others(b, n), schemaFault(`${n}: nested ${depth} deep`)],
                text: (s) => s.replace(JSON.stringify(marker), `${"[".repeat(depth)}0${"]".repeat(depth)}`),
              };
            },
        ),
      },
      // The same key twice, each occurrence breaking the schema (whichever a parser keeps).
      {
        weight: 1,
        arbitrary: fc.constantFrom(...invalidNames).chain((n) => {
          const schemaOnly = g.invalid[n]!.filter((v) => v.faults.every((f) => f.stage === "schema"));
          return fc.tuple(schemaOnly, schemaOnly).map(
            ([a, c]): Mutation =>
              (b) => {
                const marker = "\u0001DUP\u0001";
                return {
                  obj: put(b.obj, n, marker),
                  faults: [...others(b, n), ...a.faults, ...c.faults],
                  text: (s) =>
                    s.replace(
                      `${JSON.stringify(n)}:${JSON.stringify(marker)}`,
                      `${JSON.stringify(n)}:${JSON.stringify(a.value)},${JSON.stringify(n)}:${JSON.stringify(c.value)}`,
                    ),
                };
              },
          );
        }),
      },
    );
  }
  if (g.required.length > 0) {
    // A required field left out.
    mutations.push({
      weight: 1,
      arbitrary: fc.constantFrom(...g.required).map(
        (n): Mutation =>
          (b) => {
            const obj = { ...b.obj };
            delete obj[n];
            return { obj, faults: [...others(b, n), schemaFault(`${n}: missing`)] };
          },
      ),
    });
  }
  if (validNames.length > 0) {
    // An unpaired surrogate in a string (it has no UTF-8 form).
    mutations.push({
      weight: 1,
      arbitrary: fc.tuple(fc.constantFrom(...validNames), fc.constantFrom("\ud800", "\udfff", "a\ud83d", "\ude00b")).map(
        ([n, lone]): Mutation =>
          (b) => ({ obj: put(b.obj, n, `x${lone}`), faults: [...others(b, n), schemaFault(`${n}: has an unpaired surrogate`)] }),
      ),
    });
  }
  const oneOrMore = fc.oneof(
    { weight: 6, arbitrary: fc.array(fc.oneof(...mutations), { minLength: 1, maxLength: 1 }) },
    { weight: 2, arbitrary: fc.array(fc.oneof(...mutations), { minLength: 2, maxLength: 3 }) },
  );
  return fc.tuple(base, oneOrMore).map(([b, muts]) => {
    let state: State = { obj: b.obj, faults: b.faults };
    const texts: ((s: string) => string)[] = [];
    for (const m of muts) {
      const r = m(state);
      state = { obj: r.obj, faults: r.faults };
      if (r.text) texts.push(r.text);
    }
    return { text: texts.reduce((s, t) => t(s), JSON.stringify(state.obj)), faults: state.faults };
  });
}

// ---------------------------------------------------------------------------------------
// Field generators.

/** A list of ids for a search body: an array (up to 10,000, some at 64 characters) or a comma-separated string. */
const searchIdList = fc.oneof(
  { weight: 8, arbitrary: fc.array(anyId, { maxLength: 20 }) },
  { weight: 2, arbitrary: fc.array(anyId, { maxLength: 20 }).map((ids) => ` ${ids.join(" , ")} ,`) },
  {
    weight: 1,
    arbitrary: fc.constantFrom(500, 3000, C.searchMaxIds).map((n) => Array.from({ length: n }, (_, i) => `${"x".repeat(58)}${String(i).padStart(6, "0")}`)),
  },
);

function searchFields(): FieldGens {
  const valid: FieldGens["valid"] = {};
  const invalid: FieldGens["invalid"] = {};
  const v = <T>(a: fc.Arbitrary<T>) => a.map((value) => ({ value }));
  const bad = (name: string, a: fc.Arbitrary<unknown>) => a.map((value) => withFaults(value, schemaFault(`${name}: ${JSON.stringify(value)?.slice(0, 40)}`)));
  for (const n of C.instantParams) {
    valid[n] = validInstant.map((i) => ({ value: i.text }));
    invalid[n] = bad(
      n,
      fc.oneof(
        notAnInstant,
        notString.filter((x) => typeof x !== "string"),
      ),
    );
  }
  for (const n of [...C.flagParams, ...C.includeParams]) {
    valid[n] = v(fc.boolean());
    invalid[n] = bad(n, notBoolean);
  }
  for (const n of [...C.idListParams, "courseId"]) {
    valid[n] = v(searchIdList);
    invalid[n] = bad(
      n,
      fc.oneof(
        fc.tuple(fc.array(anyId, { maxLength: 3 }), fc.oneof(malformedId, notString)).map(([ids, x]) => [...ids, x]),
        fc.constant(Array.from({ length: C.searchMaxIds + 1 }, (_, i) => `i${i}`)),
        fc.constantFrom(1, true, null, {}, { ids: ["a"] }),
        malformedId.filter((s) => !s.includes(",") && s.trim().length > 0).map((s) => `ok_1,${s}`),
        // More than 10,000 items once split, valid or not.
        fc.tuple(fc.constantFrom("a b,", "x,", "💥,"), fc.integer({ min: C.searchMaxIds + 1, max: 200_000 })).map(([item, n]) => item.repeat(n)),
      ),
    );
  }
  for (const n of ["name", "classroom"]) {
    valid[n] = v(validText(C.maxText));
    invalid[n] = bad(n, fc.oneof(fc.constant(""), tooLongText(C.maxText), notString));
  }
  valid.creatorId = v(anyId);
  invalid.creatorId = bad("creatorId", fc.oneof(fc.constant(""), malformedId, notString));
  valid.page = v(fc.oneof(fc.integer({ min: 1, max: 20 }), fc.constant(C.maxPage)));
  invalid.page = bad("page", fc.oneof(fc.constantFrom(0, -1, 1.5, C.maxPage + 1, 1e300, "1", null, [1]), fc.integer({ min: C.maxPage + 1 })));
  valid.limit = v(fc.integer({ min: 1, max: C.maxLimit }));
  invalid.limit = bad("limit", fc.constantFrom(0, -1, 2.5, 101, 1e9, "10", null, true));
  const sortKey = fc.record({ field: fc.constantFrom(...C.sortFields), order: fc.constantFrom("asc", "desc") }, { requiredKeys: ["field"] });
  valid.sort = v(fc.array(sortKey, { maxLength: C.sortFields.length }));
  invalid.sort = bad(
    "sort",
    fc.oneof(
      fc.constantFrom(
        "name",
        { field: "name" },
        null,
        [1],
        [null],
        [{ field: "teacher" }],
        [{ field: "name", order: "up" }],
        [{ order: "asc" }],
        [{ field: "NAME" }],
      ),
      fc.integer({ min: C.sortFields.length + 1, max: 50 }).map((n) => Array.from({ length: n }, (_, i) => ({ field: C.sortFields[i % C.sortFields.length] }))),
    ),
  );
  return {
    valid,
    invalid,
    required: [],
    accepted: SEARCH_FIELDS,
    nested: (obj) =>
      Array.isArray(obj.sort) ? (obj.sort as unknown[]).filter((s): s is Record<string, unknown> => !!s && typeof s === "object" && !Array.isArray(s)) : [],
  };
}

function writeFields(refs: Refs, patch: boolean): FieldGens {
  const valid: FieldGens["valid"] = {};
  const invalid: FieldGens["invalid"] = {};
  const v = <T>(a: fc.Arbitrary<T>) => a.map((value) => ({ value }));
  const bad = (name: string, a: fc.Arbitrary<unknown>) => a.map((value) => withFaults(value, schemaFault(`${name}: ${JSON.stringify(value)?.slice(0, 40)}`)));
  const pick = (pool: string[]) => (pool.length === 0 ? fc.constant([] as string[]) : fc.array(fc.constantFrom(...pool), { maxLength: 6 }));
  /** A list with ids that do not exist in the school: a semantic fault with `code`. */
  const missing = (name: string, code: Code, pool: string[]) =>
    fc
      .tuple(pick(pool), fc.array(unknownId, { minLength: 1, maxLength: 3 }))
      .map(([ok, ghosts]) => withFaults([...ok, ...ghosts], semanticFault(`${name}: unknown ids`, code)));

  valid.name = v(validText(C.maxText));
  invalid.name = bad("name", fc.oneof(fc.constant(""), tooLongText(C.maxText), notString));
  valid.classroom = v(fc.oneof(validText(C.maxText), fc.constant(null)));
  invalid.classroom = bad(
    "classroom",
    fc.oneof(
      fc.constant(""),
      tooLongText(C.maxText),
      notString.filter((x) => x !== null),
    ),
  );
  valid.creatorId = v(fc.oneof(anyId, fc.constant(null)));
  invalid.creatorId = bad("creatorId", fc.oneof(fc.constant(""), malformedId, fc.constantFrom(1, true, [], {})));
  valid.trainingId = v(fc.oneof(refs.trainingIds.length > 0 ? fc.constantFrom(...refs.trainingIds) : fc.constant(null), fc.constant(null)));
  invalid.trainingId = fc.oneof(
    bad("trainingId", fc.oneof(fc.constant(""), malformedId, fc.constantFrom(1, true, []))),
    unknownId.map((id) => withFaults(id, semanticFault("trainingId: unknown", "TRAINING_NOT_FOUND"))),
  );
  const lists = [
    ["groupIds", refs.groupIds, "GROUPS_NOT_FOUND"],
    ["studentIds", refs.studentIds, "STUDENTS_NOT_FOUND"],
    ["surveyTemplateIds", refs.surveyTemplateIds, "SURVEY_TEMPLATES_NOT_FOUND"],
  ] as const;
  for (const [name, pool, code] of lists) {
    valid[name] = v(pick([...pool]));
    invalid[name] = fc.oneof(
      bad(
        name,
        fc.oneof(
          fc.constantFrom("grp_1", 1, null, {}, [1], [null], [""]),
          fc.tuple(pick([...pool]), malformedId).map(([ok, x]) => [...ok, x]),
          fc.constant(Array.from({ length: C.maxWriteList + 1 }, (_, i) => `i${i}`)),
        ),
      ),
      missing(name, code, [...pool]),
    );
  }
  const profPool = refs.professorIds;
  const professor = (id: fc.Arbitrary<string>) =>
    fc.record({ professorId: id, coTeacher: fc.boolean(), signed: fc.boolean() }, { requiredKeys: ["professorId"] });
  valid.professors = v(
    profPool.length === 0
      ? fc.constant([] as { professorId: string }[])
      : fc.uniqueArray(professor(fc.constantFrom(...profPool)), { maxLength: 4, selector: (p) => p.professorId }),
  );
  invalid.professors = fc.oneof(
    bad("professors", fc.constantFrom("prf_1", null, [null], [{}], [{ signed: true }], [{ professorId: 1 }], [{ professorId: "ok", signed: "yes" }])),
    ...(profPool.length > 0
      ? [
          bad(
            "professors",
            fc.constantFrom(...profPool).map((id) => [{ professorId: id }, { professorId: id, signed: true }]),
          ),
        ]
      : []),
    bad("professors", fc.constant(Array.from({ length: C.maxProfessors + 1 }, (_, i) => ({ professorId: `p${i}` })))),
    fc.array(unknownId, { minLength: 1, maxLength: 3 }).map((ids) =>
      withFaults(
        [...new Set(ids)].map((professorId) => ({ professorId })),
        semanticFault("professors: unknown ids", "PROFESSORS_NOT_FOUND"),
      ),
    ),
  );
  if (patch) {
    for (const n of ["archived", "absencesSent"]) {
      valid[n] = v(fc.boolean());
      invalid[n] = bad(n, notBoolean);
    }
  }
  const badInstant = (name: string) =>
    bad(
      name,
      fc.oneof(
        notAnInstant,
        notString.filter((x) => typeof x !== "string"),
      ),
    );
  return {
    // Start and end are drawn as a pair by `writeBody`: here they are markers it replaces.
    valid: { ...valid, startDateTime: fc.constant({ value: START }), endDateTime: fc.constant({ value: END }) },
    invalid: { ...invalid, startDateTime: badInstant("startDateTime"), endDateTime: badInstant("endDateTime") },
    required: patch ? [] : ["name", "startDateTime", "endDateTime"],
    accepted: patch ? [...WRITE_FIELDS, "archived", "absencesSent"] : WRITE_FIELDS,
    // PATCH-only fields are unknown on POST.
    extraUnknown: patch ? [] : ["archived", "absencesSent", "id", "version", "createdAt"],
    nested: (obj) =>
      Array.isArray(obj.professors)
        ? (obj.professors as unknown[]).filter((p): p is Record<string, unknown> => !!p && typeof p === "object" && !Array.isArray(p))
        : [],
  };
}

const START = "\u0001START\u0001";
const END = "\u0001END\u0001";

/**
 * A course write body: `objectBody` with start and end drawn as a pair (end after start;
 * sometimes not, an INVALID_DATE_RANGE), both or neither on PATCH.
 */
function writeBody(refs: Refs, patch: boolean, invalid: boolean): fc.Arbitrary<{ text: string; faults: Fault[] }> {
  const gens = writeFields(refs, patch);
  const withDates = fc.tuple(
    validInstant,
    fc.oneof(
      { weight: 8, arbitrary: fc.integer({ min: 1, max: 10 * 86_400_000 }) },
      { weight: invalid ? 2 : 0, arbitrary: fc.integer({ min: -86_400_000, max: 0 }) },
    ),
    fc.boolean(),
  );
  const marker = (m: string) => JSON.stringify(m);
  return fc.tuple(objectBody(gens, invalid), withDates).map(([b, [start, delta, keep]]) => {
    const end = new Date(start.ms + delta).toISOString();
    let text = b.text;
    const faults = [...b.faults];
    const hasStart = text.includes(marker(START));
    const hasEnd = text.includes(marker(END));
    if (patch && (hasStart !== hasEnd || !keep)) {
      // Both or neither on PATCH: drop them.
      text = text.replace(`"startDateTime":${marker(START)},`, "").replace(`"startDateTime":${marker(START)}`, "");
      text = text
        .replace(`"endDateTime":${marker(END)},`, "")
        .replace(`"endDateTime":${marker(END)}`, "")
        .replace(/,}$/, "}");
    } else {
      text = text.replace(marker(START), JSON.stringify(start.text)).replace(marker(END), JSON.stringify(end));
      if (hasStart && hasEnd && delta <= 0) faults.push(semanticFault("endDateTime not after startDateTime", "INVALID_DATE_RANGE"));
    }
    return { text, faults };
  });
}

function webhookFields(ctx: FuzzContext): FieldGens {
  const bad = (name: string, a: fc.Arbitrary<unknown>) => a.map((value) => withFaults(value, schemaFault(`${name}: ${JSON.stringify(value)?.slice(0, 40)}`)));
  const policy = (url: string) => withFaults(url, semanticFault(`url: ${url.slice(0, 60)}`, "INVALID_WEBHOOK_URL"));
  // Refused in every mode: not http(s), not a URL, too long.
  const alwaysBad = fc
    .oneof(
      fc.constantFrom(
        "ftp://example.com/x",
        "javascript:alert(1)",
        "file:///etc/passwd",
        "mailto:a@example.com",
        "example.com/hook",
        "https://",
        "//example.com/x",
        "http//x",
        "https://exa mple.com/",
        "data:text/plain,x",
        "ws://example.com/",
      ),
      fc.constant(`https://example.com/${"a".repeat(C.maxUrl)}`),
    )
    .map(policy);
  // Refused by the policy unless WEBHOOK_ALLOW_INSECURE_URLS is true.
  const policyBad = fc
    .constantFrom(
      "http://example.com/hook",
      "https://hooks.example.com:6379/",
      "https://hooks.example.com:80/in",
      "https://hooks.example.com:8080/in",
      "https://localhost/",
      "https://LOCALHOST./x",
      "https://api.localhost/",
      "https://127.0.0.1/",
      "https://0x7f000001/",
      "https://2130706433/",
      "https://127.1/",
      "https://[::1]/",
      "https://[::ffff:127.0.0.1]/",
      "https://10.1.2.3/",
      "https://192.168.0.1/",
      "https://172.16.5.5/",
      "https://169.254.169.254/latest",
      "https://100.64.0.1/",
      "https://[fd00::1]/",
      "https://[fe80::1]/",
      "https://0.0.0.0/",
      "https://metadata.google.internal/computeMetadata/v1/",
      "https://foo.internal/",
      "https://foo.internal./",
      "https://FOO.INTERNAL/",
      "https://internal/",
      "https://internal./",
      "https://metadata/",
      "https://user:pass@example.com/",
      "https://user@example.com/",
      "https://printer.local/",
      "https://router.home.arpa/",
      "https://nas.lan/",
      "https://wiki.intranet/",
      "https://erp.corp/",
      "https://x.onion/",
      "https://api.test/",
      "https://x.invalid/",
      "https://hooks.example/",
      "https://a..example.com/",
      "https://local%68ost/",
    )
    .map(policy);
  const events = fc.oneof(
    fc.constant(["*"]),
    fc.uniqueArray(fc.constantFrom(...C.eventTypes), { minLength: 1 }),
    fc.array(fc.constantFrom(...C.eventTypes), { minLength: 2, maxLength: 6 }),
  );
  const valid: FieldGens["valid"] = {
    events: events.map((value) => ({ value })),
    description: fc
      .oneof(
        anyText(60),
        fc.constant(null),
        anyText(C.maxDescription).filter((s) => s.length <= C.maxDescription),
      )
      .map((value) => ({ value })),
    ordering: fc.constantFrom("course", "none").map((value) => ({ value })),
  };
  // Without a target the runner can receive on, every body carries a URL refused in any mode.
  valid.url = ctx.webhookUrls.length > 0 ? fc.constantFrom(...ctx.webhookUrls).map((value) => ({ value })) : alwaysBad;
  return {
    valid,
    invalid: {
      url: fc.oneof(alwaysBad, ...(ctx.insecureUrls ? [] : [policyBad]), bad("url", fc.oneof(fc.constant(""), notString))),
      events: bad(
        "events",
        fc.constantFrom([], ["*", "course.created"], ["course.deleted"], ["*", "*"], "course.created", null, [1], ["COURSE.CREATED"], ["webhook.test"]),
      ),
      description: bad("description", fc.oneof(tooLongText(C.maxDescription), fc.constantFrom(1, true, [], {}))),
      ordering: bad("ordering", fc.constantFrom("fifo", "Course", "", null, 1, [])),
    },
    required: ["url"],
    accepted: WEBHOOK_FIELDS,
  };
}

// ---------------------------------------------------------------------------------------
// Requests per route.

/** Assembles a request; `auth` faults win over every other on a route that needs a key. */
function build(r: {
  route: string;
  method: string;
  path: string;
  auth?: AuthChoice;
  body?: BodySpec;
  faults: Fault[];
  success: number[];
  /** Codes that depend on state: the id of the path may not exist, the school may be full. */
  stateCodes?: Code[];
  writes?: boolean;
  extraHeaders?: Record<string, string>;
}): FuzzRequest {
  const headers: Record<string, string> = { ...r.extraHeaders };
  if (r.auth?.header !== undefined) headers.authorization = r.auth.header;
  if (r.body?.contentType !== undefined) headers["content-type"] = r.body.contentType;
  const faults = [...r.faults, ...(r.body?.faults ?? [])];
  const body = r.body?.body;
  let expect: Expectation;
  if (r.auth && !r.auth.ok) expect = { success: [], codes: ["UNAUTHORIZED"] };
  else if (faults.length === 0) expect = { success: r.success, codes: r.stateCodes ?? [] };
  else {
    const transportFaults = faults.filter((f) => f.stage === undefined);
    const codes = new Set<Code>([...transportFaults.flatMap((f) => f.codes), ...bodyCodes(faults.filter((f) => f.stage !== undefined))]);
    // A missing resource may be found before or after the body is judged.
    for (const c of r.stateCodes ?? []) if (c.endsWith("_NOT_FOUND")) codes.add(c);
    expect = { success: [], codes: [...codes] };
  }
  return {
    route: r.route,
    method: r.method,
    path: r.path,
    headers,
    body,
    faults: [...(r.auth && !r.auth.ok ? [`auth: ${r.auth.label}`] : []), ...faults.map((f) => f.what)],
    expect,
    writes: r.writes ?? false,
  };
}

/** Sometimes an `x-request-id` of the client's (well-formed or not). */
const requestIdHeader: fc.Arbitrary<Record<string, string>> = sometimes(
  fc.oneof(fc.stringMatching(/^[A-Za-z0-9_.:-]{1,128}$/), fc.string({ unit: "grapheme-ascii", maxLength: 200 })),
  1 / 8,
).map((v): Record<string, string> => (v === null ? {} : { "x-request-id": v }));

/** Query params for a route that defines none (valid: none; invalid: one or more). */
const noQueryArb = (invalid: boolean) =>
  invalid
    ? fc
        .array(fc.tuple(unknownParamName([]), anyText(8)), { minLength: 1, maxLength: 3 })
        .map((ps) => ps.map(([n, v]) => param(n, v, fault(`query parameter ${JSON.stringify(n)}`, "UNKNOWN_PARAMETER"))))
    : fc.constant([] as Param[]);

/** Both classes of one route, one time in three invalid. */
function both(gen: (invalid: boolean) => fc.Arbitrary<FuzzRequest>): fc.Arbitrary<FuzzRequest> {
  return fc.oneof({ weight: 2, arbitrary: gen(false) }, { weight: 1, arbitrary: gen(true) });
}

const pathIdArb = (pool: string[], notFound: Code) =>
  fc
    .oneof(
      ...(pool.length > 0 ? [{ weight: 4, arbitrary: fc.constantFrom(...pool).map((id) => ({ segment: pathSegment(id), state: [] as Code[] })) }] : []),
      { weight: 1, arbitrary: unknownId.map((id) => ({ segment: pathSegment(id), state: [notFound] })) },
      { weight: 1, arbitrary: malformedId.map((id) => ({ segment: pathSegment(id), state: [notFound] })) },
      { weight: 1, arbitrary: rawGarbageSegment.map((segment) => ({ segment, state: [notFound] })) },
    )
    .filter((p) => !isDotSegment(p.segment));

function listCourses(ctx: FuzzContext) {
  return both((invalid) =>
    fc.tuple(authArb(ctx, ctx.readKey), listQueryArb(LIST_PARAMS, invalid), requestIdHeader).map(([auth, params, rid]) =>
      build({
        route: "GET /v3/courses",
        method: "GET",
        path: `/v3/courses${queryString(params)}`,
        auth,
        faults: params.flatMap((p) => (p.fault ? [p.fault] : [])),
        success: [200],
        extraHeaders: rid,
      }),
    ),
  );
}

function searchCourses(ctx: FuzzContext) {
  const fields = searchFields();
  return both((invalid) =>
    fc
      .tuple(authArb(ctx, ctx.readKey), transport(objectBody(fields, invalid), invalid), maybeQueryFaults(invalid), requestIdHeader)
      .map(([auth, body, query, rid]) =>
        build({
          route: "POST /v3/courses:search",
          method: "POST",
          path: `/v3/courses:search${queryString(query)}`,
          auth,
          body,
          faults: faultsOf(query),
          success: [200],
          extraHeaders: rid,
        }),
      ),
  );
}

function getCourse(ctx: FuzzContext) {
  return both((invalid) =>
    fc.tuple(authArb(ctx, ctx.readKey), pathIdArb(ctx.readCourseIds, "COURSE_NOT_FOUND"), listQueryArb(C.includeParams, invalid)).map(([auth, id, params]) =>
      build({
        route: "GET /v3/courses/:id",
        method: "GET",
        path: `/v3/courses/${id.segment}${queryString(params)}`,
        auth,
        faults: params.flatMap((p) => (p.fault ? [p.fault] : [])),
        success: [200],
        stateCodes: id.state,
      }),
    ),
  );
}

/** The key (and ids) of a request: valid writes go to the write school, invalid ones to either (they must write nothing). */
const schoolFor = (ctx: FuzzContext, invalid: boolean) =>
  invalid
    ? fc.constantFrom(
        { key: ctx.readKey, courses: ctx.readCourseIds, hooks: ctx.readWebhookIds },
        { key: ctx.writeKey, courses: ctx.writeCourseIds, hooks: ctx.writeWebhookIds },
      )
    : fc.constant({ key: ctx.writeKey, courses: ctx.writeCourseIds, hooks: ctx.writeWebhookIds });

/** Query faults for a route that takes none, on one request in six of the invalid ones. */
const maybeQueryFaults = (invalid: boolean) => (invalid ? sometimes(noQueryArb(true), 1 / 6).map((q) => q ?? []) : fc.constant([] as Param[]));
const faultsOf = (params: Param[]) => params.flatMap((p) => (p.fault ? [p.fault] : []));

function postCourse(ctx: FuzzContext) {
  return both((invalid) => {
    const body = {
      read: transport(writeBody(ctx.readRefs, false, invalid), invalid, true),
      write: transport(writeBody(ctx.writeRefs, false, invalid), invalid, true),
    };
    return fc.tuple(schoolFor(ctx, invalid), maybeQueryFaults(invalid), body.read, body.write).chain(([school, query, r, w]) =>
      authArb(ctx, school.key).map((auth) =>
        build({
          route: "POST /v3/courses",
          method: "POST",
          path: `/v3/courses${queryString(query)}`,
          auth,
          body: school.key === ctx.readKey ? r : w,
          faults: faultsOf(query),
          success: [201],
          writes: true,
        }),
      ),
    );
  });
}

function patchCourse(ctx: FuzzContext) {
  return both((invalid) => {
    const body = { read: transport(writeBody(ctx.readRefs, true, invalid), invalid), write: transport(writeBody(ctx.writeRefs, true, invalid), invalid) };
    const ids = { read: pathIdArb(ctx.readCourseIds, "COURSE_NOT_FOUND"), write: pathIdArb(ctx.writeCourseIds, "COURSE_NOT_FOUND") };
    return fc.tuple(schoolFor(ctx, invalid), ids.read, ids.write, maybeQueryFaults(invalid), body.read, body.write).chain(([school, ri, wi, query, rb, wb]) =>
      authArb(ctx, school.key).map((auth) => {
        const [id, b] = school.key === ctx.readKey ? [ri, rb] : [wi, wb];
        return build({
          route: "PATCH /v3/courses/:id",
          method: "PATCH",
          path: `/v3/courses/${id.segment}${queryString(query)}`,
          auth,
          body: b,
          faults: faultsOf(query),
          success: [200],
          stateCodes: id.state,
          writes: true,
        });
      }),
    );
  });
}

function createWebhook(ctx: FuzzContext) {
  const fields = webhookFields(ctx);
  const gen = (invalid: boolean) => {
    const body = transport(objectBody(fields, invalid), invalid, true);
    return fc.tuple(schoolFor(ctx, invalid), maybeQueryFaults(invalid), body).chain(([school, query, b]) =>
      authArb(ctx, school.key).map((auth) =>
        build({
          route: "POST /v3/webhooks",
          method: "POST",
          path: `/v3/webhooks${queryString(query)}`,
          auth,
          body: b,
          faults: faultsOf(query),
          success: [201],
          stateCodes: ["WEBHOOK_LIMIT_REACHED"],
          writes: true,
        }),
      ),
    );
  };
  // Without a target the runner can receive on, only invalid registrations are sent.
  return ctx.webhookUrls.length > 0 ? both(gen) : gen(true);
}

function listWebhooks(ctx: FuzzContext) {
  return both((invalid) =>
    fc
      .tuple(
        fc.constantFrom(ctx.readKey, ctx.writeKey).chain((k) => authArb(ctx, k)),
        noQueryArb(invalid),
      )
      .map(([auth, params]) =>
        build({
          route: "GET /v3/webhooks",
          method: "GET",
          path: `/v3/webhooks${queryString(params)}`,
          auth,
          faults: params.flatMap((p) => (p.fault ? [p.fault] : [])),
          success: [200],
        }),
      ),
  );
}

function deleteWebhook(ctx: FuzzContext) {
  return both((invalid) => {
    // A valid DELETE removes only a registration set aside for it; the others are never deleted.
    const ids = invalid
      ? { read: pathIdArb(ctx.readWebhookIds, "WEBHOOK_NOT_FOUND"), write: pathIdArb(ctx.writeWebhookIds, "WEBHOOK_NOT_FOUND") }
      : {
          read: fc.constant(null),
          write: pathIdArb(ctx.deletableWebhookIds, "WEBHOOK_NOT_FOUND").map((p) => ({ ...p, state: ["WEBHOOK_NOT_FOUND"] as Code[] })),
        };
    return fc.tuple(schoolFor(ctx, invalid), ids.read, ids.write, noQueryArb(invalid)).chain(([school, r, w, params]) =>
      authArb(ctx, school.key).map((auth) => {
        const id = school.key === ctx.readKey && r ? r : w;
        return build({
          route: "DELETE /v3/webhooks/:id",
          method: "DELETE",
          path: `/v3/webhooks/${id.segment}${queryString(params)}`,
          auth,
          faults: faultsOf(params),
          success: [200],
          stateCodes: id.state,
          writes: true,
        });
      }),
    );
  });
}

/**
 * A read of one registration, `GET /v3/webhooks/:id/<sub>` with `query(invalid)`'s
 * parameters, as the read or the write school (reads change nothing: either may ask).
 */
function webhookRead(ctx: FuzzContext, sub: "" | "deliveries" | "stats", query: (invalid: boolean) => fc.Arbitrary<Param[]>) {
  const read = pathIdArb(ctx.readWebhookIds, "WEBHOOK_NOT_FOUND");
  const write = pathIdArb(ctx.writeWebhookIds, "WEBHOOK_NOT_FOUND");
  return both((invalid) =>
    fc.tuple(fc.boolean(), read, write, query(invalid)).chain(([readSchool, r, w, params]) =>
      authArb(ctx, readSchool ? ctx.readKey : ctx.writeKey).map((auth) => {
        const id = readSchool ? r : w;
        const tail = sub === "" ? "" : `/${sub}`;
        return build({
          route: `GET /v3/webhooks/:id${tail}`,
          method: "GET",
          path: `/v3/webhooks/${id.segment}${tail}${queryString(params)}`,
          auth,
          faults: faultsOf(params),
          success: [200],
          stateCodes: id.state,
        });
      }),
    ),
  );
}

/** GET /v3/webhooks/{id}: no query parameter. */
const getWebhook = (ctx: FuzzContext) => webhookRead(ctx, "", noQueryArb);

/**
 * GET /v3/events: a valid read (a cursor of now, or `since`, `eventType`, `limit`, `wait=0`:
 * a fuzz run never waits) or one that breaks a rule: a malformed or expired cursor, both
 * `after` and `since`, an unknown event type, a `limit` or `wait` out of range, an unknown
 * parameter.
 */
function listEvents(ctx: FuzzContext) {
  const cursor = (atMs: number) => `c1.0.${Math.max(0, atMs).toString(36)}`;
  const types = [
    "course.created",
    "course.updated",
    "course.archived",
    "course.unarchived",
    "course.absences_sent",
    "course.professor_signed",
    "webhook.disabled",
    "webhook.failing",
    "webhook.recovered",
  ];
  const valid = fc
    .record({
      from: fc.oneof(
        fc.constant([] as Param[]),
        fc.constant(0).map(() => [param("after", cursor(Date.now()))]),
        validInstant.map((i) => [param("since", i.text)]),
      ),
      type: fc.oneof(
        fc.constant([] as Param[]),
        fc.subarray(types, { minLength: 1, maxLength: 3 }).map((t) => [param("eventType", t.join(","))]),
      ),
      limit: fc.oneof(
        fc.constant([] as Param[]),
        fc.integer({ min: 1, max: 100 }).map((n) => [param("limit", String(n))]),
      ),
      wait: fc.oneof(fc.constant([] as Param[]), fc.constant([param("wait", "0")])),
    })
    .map((r) => [...r.from, ...r.type, ...r.limit, ...r.wait]);
  const bad = (name: string, value: string, what: string, code: Code = "INVALID_PARAMETER") => [param(name, value, fault(what, code))];
  const invalidArb = fc.oneof(
    fc
      .oneof(fc.constantFrom("nope", "c1", "c1.x", "c2.1.1", ""), anyText(12))
      .filter((v) => !/^c1\.[0-9a-z]{1,12}\.[0-9a-z]{1,12}$/.test(v))
      .map((v) => bad("after", v, `after=${JSON.stringify(v)}`)),
    fc.constant(0).map(() => bad("after", cursor(Date.now() - 8 * 86_400_000), "a cursor older than 7 days", "CURSOR_EXPIRED")),
    validInstant.map((i) => [param("after", cursor(Date.now())), ...bad("since", i.text, "after and since")]),
    fc.constantFrom("course.nope", "webhook.test", "*", "COURSE.CREATED").map((t) => bad("eventType", t, `eventType=${t}`)),
    fc.constantFrom("0", "101", "-1", "1.5", "x").map((v) => bad("limit", v, `limit=${v}`)),
    fc.constantFrom("26", "-1", "x", "2.5").map((v) => bad("wait", v, `wait=${v}`)),
    fc
      .tuple(unknownParamName(["after", "since", "eventType", "limit", "wait"]), anyText(8))
      .map(([n, v]) => bad(n, v, `unknown parameter ${JSON.stringify(n)}`, "UNKNOWN_PARAMETER")),
  );
  return both((invalid) =>
    fc
      .tuple(fc.constantFrom(ctx.readKey, ctx.writeKey), invalid ? invalidArb : valid)
      .chain(([key, params]) =>
        authArb(ctx, key).map((auth) =>
          build({ route: "GET /v3/events", method: "GET", path: `/v3/events${queryString(params)}`, auth, faults: faultsOf(params), success: [200] }),
        ),
      ),
  );
}

/** GET /v3/webhooks/{id}/deliveries: the page parameters. */
const listDeliveries = (ctx: FuzzContext) => webhookRead(ctx, "deliveries", (invalid) => listQueryArb(["page", "limit"], invalid));

/**
 * GET /v3/webhooks/{id}/stats: a window (none, `since` alone, `until` alone, or both, at
 * most 7 days long) and a bucket; invalid ones break one rule (not an instant, `since` not
 * before `until`, longer than 7 days, an unknown bucket, an unknown or repeated parameter).
 * Instants are relative to the clock when generated, with minutes of margin.
 */
function webhookStats(ctx: FuzzContext) {
  const DAY = 86_400_000;
  const HOUR = 3_600_000;
  const at = (ms: number) => new Date(ms).toISOString();
  const windowArb = fc.oneof(
    fc.constant([] as Param[]),
    fc.integer({ min: 60_000, max: 30 * DAY }).map((ago) => [param("since", at(Date.now() - Math.min(ago, 7 * DAY - HOUR)))]),
    // A window must end within the 7-day retention (an hour's margin for when the request runs).
    fc.integer({ min: -7 * DAY + HOUR, max: 30 * DAY }).map((from) => [param("until", at(Date.now() + from))]),
    fc
      .tuple(fc.integer({ min: -DAY, max: 7 * DAY - HOUR }), fc.integer({ min: 1, max: 7 * DAY }))
      .map(([ago, length]) => [param("since", at(Date.now() - ago - length)), param("until", at(Date.now() - ago))]),
  );
  const bucketArb = fc.oneof(
    fc.constant([] as Param[]),
    fc.constantFrom("hour", "day").map((b) => [param("bucket", b)]),
  );
  const valid = fc.tuple(windowArb, bucketArb).map(([w, b]) => [...w, ...b]);
  const bad = (name: string, value: string, what: string) => [param(name, value, fault(what, "INVALID_PARAMETER"))];
  const invalidArb = fc.oneof(
    fc.tuple(fc.constantFrom("since", "until"), notAnInstant).map(([n, v]) => bad(n, v, `${n}=${JSON.stringify(v).slice(0, 40)}`)),
    fc.integer({ min: 0, max: DAY }).map((d) => {
      const until = Date.now() - DAY;
      return [param("since", at(until + d)), ...bad("until", at(until), "since not before until")];
    }),
    fc
      .integer({ min: 60_000, max: 30 * DAY })
      .map((extra) => [param("since", at(Date.now() - 7 * DAY - extra)), ...bad("until", at(Date.now()), "longer than 7 days")]),
    fc.integer({ min: 60_000, max: DAY }).map((ahead) => bad("since", at(Date.now() + ahead), "since in the future, until now")),
    fc
      .integer({ min: HOUR, max: 30 * DAY })
      .map((extra) => [param("since", at(Date.now() - 8 * DAY - extra)), ...bad("until", at(Date.now() - 7 * DAY - extra), "a window before the retention")]),
    fc
      .oneof(fc.constantFrom("week", "HOUR", "", "hours", "1h", "minute"), anyText(6))
      .filter((v) => v !== "hour" && v !== "day")
      .map((v) => bad("bucket", v, `bucket=${JSON.stringify(v)}`)),
    fc
      .tuple(unknownParamName(["since", "until", "bucket"]), anyText(10))
      .map(([n, v]) => [param(n, v, fault(`unknown parameter ${JSON.stringify(n)}`, "UNKNOWN_PARAMETER"))]),
    fc.constantFrom("hour", "day").map((b) => [param("bucket", b), param("bucket", b, fault("bucket twice", "INVALID_PARAMETER"))]),
  );
  return webhookRead(ctx, "stats", (invalid) => (invalid ? invalidArb : valid));
}

function testWebhook(ctx: FuzzContext) {
  const emptyBody: fc.Arbitrary<BodySpec> = fc.oneof(
    fc.constant<BodySpec>({ faults: [] }),
    fc.constantFrom(...VALID_JSON_TYPES).map((contentType): BodySpec => ({ body: "{}", contentType, faults: [] })),
    fc.constantFrom(...VALID_JSON_TYPES).map((contentType): BodySpec => ({ body: " { } ", contentType, faults: [] })),
  );
  const badBody = transport(objectBody({ valid: {}, invalid: {}, required: [], accepted: [] }, true), true);
  const read = pathIdArb(ctx.readWebhookIds, "WEBHOOK_NOT_FOUND");
  const write = pathIdArb(ctx.writeWebhookIds, "WEBHOOK_NOT_FOUND");
  return both((invalid) =>
    // A valid test sends an event: only to the write school's registrations.
    fc.tuple(schoolFor(ctx, invalid), read, write, invalid ? badBody : emptyBody, maybeQueryFaults(invalid)).chain(([school, r, w, body, query]) =>
      authArb(ctx, school.key).map((auth) => {
        const id = school.key === ctx.readKey ? r : w;
        return build({
          route: "POST /v3/webhooks/:id/test",
          method: "POST",
          path: `/v3/webhooks/${id.segment}/test${queryString(query)}`,
          auth,
          body,
          faults: faultsOf(query),
          success: [202],
          stateCodes: id.state,
          writes: true,
        });
      }),
    ),
  );
}

/** An optional JSON object body: absent, or valid fields only, or (invalid) broken. */
function optionalObject(g: FieldGens, invalid: boolean): fc.Arbitrary<BodySpec> {
  if (invalid) return transport(objectBody(g, true), true);
  return fc.oneof(
    fc.constant<BodySpec>({ faults: [] }),
    fc.tuple(objectBody(g, false), fc.constantFrom(...VALID_JSON_TYPES)).map(([b, contentType]): BodySpec => ({ body: b.text, contentType, faults: b.faults })),
  );
}

/** PATCH /v3/webhooks/{id}: a valid PATCH changes only the description or the subscription (never the URL or the state the other routes rely on). */
function updateWebhook(ctx: FuzzContext) {
  const base = webhookFields(ctx);
  const fields: FieldGens = {
    valid: { description: base.valid.description!, events: base.valid.events! },
    invalid: { ...base.invalid, enabled: notBoolean.map((value) => withFaults(value, schemaFault(`enabled: ${JSON.stringify(value)}`))) },
    required: [],
    accepted: ["url", "events", "description", "enabled"],
  };
  return both((invalid) =>
    fc
      .tuple(
        schoolFor(ctx, invalid),
        pathIdArb(ctx.readWebhookIds, "WEBHOOK_NOT_FOUND"),
        pathIdArb(ctx.writeWebhookIds, "WEBHOOK_NOT_FOUND"),
        optionalObject(fields, invalid),
        maybeQueryFaults(invalid),
      )
      .chain(([school, r, w, body, query]) =>
        authArb(ctx, school.key).map((auth) => {
          const id = school.key === ctx.readKey ? r : w;
          return build({
            route: "PATCH /v3/webhooks/:id",
            method: "PATCH",
            path: `/v3/webhooks/${id.segment}${queryString(query)}`,
            auth,
            body,
            faults: faultsOf(query),
            success: [200],
            stateCodes: id.state,
            writes: true,
          });
        }),
      ),
  );
}

/** POST /v3/webhooks/{id}/secret/rotate with `{ graceSeconds? }`. */
function rotateSecret(ctx: FuzzContext) {
  const fields: FieldGens = {
    valid: { graceSeconds: fc.integer({ min: 0, max: C.maxGraceSeconds }).map((value) => ({ value })) },
    invalid: {
      graceSeconds: fc
        .oneof(fc.constantFrom(-1, C.maxGraceSeconds + 1, 1.5, "60", null, true, [], {}))
        .map((value) => withFaults(value, schemaFault(`graceSeconds: ${JSON.stringify(value)}`))),
    },
    required: [],
    accepted: ["graceSeconds"],
  };
  return both((invalid) =>
    fc
      .tuple(
        schoolFor(ctx, invalid),
        pathIdArb(ctx.readWebhookIds, "WEBHOOK_NOT_FOUND"),
        pathIdArb(ctx.writeWebhookIds, "WEBHOOK_NOT_FOUND"),
        optionalObject(fields, invalid),
        maybeQueryFaults(invalid),
      )
      .chain(([school, r, w, body, query]) =>
        authArb(ctx, school.key).map((auth) => {
          const id = school.key === ctx.readKey ? r : w;
          return build({
            route: "POST /v3/webhooks/:id/secret/rotate",
            method: "POST",
            path: `/v3/webhooks/${id.segment}/secret/rotate${queryString(query)}`,
            auth,
            body,
            faults: faultsOf(query),
            success: [200],
            stateCodes: id.state,
            writes: true,
          });
        }),
      ),
  );
}

/** POST …/deliveries/{eventId}/resend: the event may not exist (EVENT_NOT_FOUND), the registration may be disabled. */
function resendDelivery(ctx: FuzzContext) {
  const empty: FieldGens = { valid: {}, invalid: {}, required: [], accepted: [] };
  const eventSegment = fc
    .oneof(unknownId, malformedId)
    .map(pathSegment)
    .filter((s) => !isDotSegment(s));
  return both((invalid) =>
    fc
      .tuple(
        schoolFor(ctx, invalid),
        pathIdArb(ctx.readWebhookIds, "WEBHOOK_NOT_FOUND"),
        pathIdArb(ctx.writeWebhookIds, "WEBHOOK_NOT_FOUND"),
        eventSegment,
        optionalObject(empty, invalid),
        maybeQueryFaults(invalid),
      )
      .chain(([school, r, w, eventId, body, query]) =>
        authArb(ctx, school.key).map((auth) => {
          const id = school.key === ctx.readKey ? r : w;
          const path = `/v3/webhooks/${id.segment}/deliveries/${eventId}/resend${queryString(query)}`;
          return build({
            route: "POST /v3/webhooks/:id/deliveries/:eventId/resend",
            method: "POST",
            path,
            auth,
            body,
            faults: faultsOf(query),
            success: [202],
            stateCodes: [...id.state, "EVENT_NOT_FOUND", "WEBHOOK_DISABLED"],
            writes: true,
          });
        }),
      ),
  );
}

/** POST …/recover with `{ since, until? }` (since within the retention; a valid one queues only what failed). */
function recoverDeliveries(ctx: FuzzContext) {
  const recent = fc.integer({ min: 60_000, max: 6 * 86_400_000 }).map((ago) => ({ value: new Date(Date.now() - ago).toISOString() }));
  const fields: FieldGens = {
    valid: { since: recent },
    invalid: {
      since: fc.oneof(notAnInstant, notString).map((value) => withFaults(value, schemaFault(`since: ${JSON.stringify(value)?.slice(0, 40)}`))),
      until: fc.oneof(notAnInstant, notString).map((value) => withFaults(value, schemaFault(`until: ${JSON.stringify(value)?.slice(0, 40)}`))),
    },
    required: ["since"],
    accepted: ["since", "until"],
  };
  return both((invalid) =>
    fc
      .tuple(
        schoolFor(ctx, invalid),
        pathIdArb(ctx.readWebhookIds, "WEBHOOK_NOT_FOUND"),
        pathIdArb(ctx.writeWebhookIds, "WEBHOOK_NOT_FOUND"),
        transport(objectBody(fields, invalid), invalid, true),
        maybeQueryFaults(invalid),
      )
      .chain(([school, r, w, body, query]) =>
        authArb(ctx, school.key).map((auth) => {
          const id = school.key === ctx.readKey ? r : w;
          return build({
            route: "POST /v3/webhooks/:id/recover",
            method: "POST",
            path: `/v3/webhooks/${id.segment}/recover${queryString(query)}`,
            auth,
            body,
            faults: faultsOf(query),
            success: [202],
            stateCodes: [...id.state, "WEBHOOK_DISABLED"],
            writes: true,
          });
        }),
      ),
  );
}

/** POST /v3/portal-sessions: `{ expiresInSeconds?, readOnly? }` or no body; a valid one mints a token of the write school. */
function createPortalSession(ctx: FuzzContext) {
  const fields: FieldGens = {
    valid: {
      expiresInSeconds: fc.integer({ min: C.minSessionSeconds, max: C.maxSessionSeconds }).map((value) => ({ value })),
      readOnly: fc.boolean().map((value) => ({ value })),
    },
    invalid: {
      expiresInSeconds: fc
        .oneof(
          fc.constantFrom(0, C.minSessionSeconds - 1, C.maxSessionSeconds + 1, 90.5, "3600", null, true, [], {}),
          fc.integer({ min: -1_000_000, max: C.minSessionSeconds - 1 }),
        )
        .map((value) => withFaults(value, schemaFault(`expiresInSeconds: ${JSON.stringify(value)}`))),
      readOnly: notBoolean.map((value) => withFaults(value, schemaFault(`readOnly: ${JSON.stringify(value)}`))),
    },
    required: [],
    accepted: ["expiresInSeconds", "readOnly"],
  };
  return both((invalid) =>
    fc.tuple(schoolFor(ctx, invalid), optionalObject(fields, invalid), maybeQueryFaults(invalid)).chain(([school, body, query]) =>
      authArb(ctx, school.key).map((auth) =>
        build({
          route: "POST /v3/portal-sessions",
          method: "POST",
          path: `/v3/portal-sessions${queryString(query)}`,
          auth,
          body,
          faults: faultsOf(query),
          success: [201],
          // The write school may reach its 100 live sessions during a run.
          stateCodes: ["PORTAL_SESSION_LIMIT_REACHED"],
          writes: true,
        }),
      ),
    ),
  );
}

/**
 * POST /v3/portal-sessions/redeem with the run's API keys: only a portal token is redeemed,
 * so a valid key answers 403 FORBIDDEN (whatever the query), a bad one 401.
 */
function redeemPortalSession(ctx: FuzzContext) {
  return fc.tuple(schoolFor(ctx, true), maybeQueryFaults(true)).chain(([school, query]) =>
    authArb(ctx, school.key).map((auth) =>
      build({
        route: "POST /v3/portal-sessions/redeem",
        method: "POST",
        path: `/v3/portal-sessions/redeem${queryString(query)}`,
        auth,
        faults: [fault("an API key (only portal tokens are redeemed)", "FORBIDDEN")],
        success: [],
      }),
    ),
  );
}

/** GET /v3/school: no query parameter. */
function getSchool(ctx: FuzzContext) {
  return both((invalid) =>
    fc
      .tuple(
        fc.constantFrom(ctx.readKey, ctx.writeKey).chain((k) => authArb(ctx, k)),
        noQueryArb(invalid),
      )
      .map(([auth, params]) =>
        build({ route: "GET /v3/school", method: "GET", path: `/v3/school${queryString(params)}`, auth, faults: faultsOf(params), success: [200] }),
      ),
  );
}

/** DELETE /v3/portal-sessions: no query parameter; a valid one revokes the write school's tokens. */
function revokePortalSessions(ctx: FuzzContext) {
  return both((invalid) =>
    fc.tuple(schoolFor(ctx, invalid), noQueryArb(invalid)).chain(([school, params]) =>
      authArb(ctx, school.key).map((auth) =>
        build({
          route: "DELETE /v3/portal-sessions",
          method: "DELETE",
          path: `/v3/portal-sessions${queryString(params)}`,
          auth,
          faults: faultsOf(params),
          success: [200],
          writes: true,
        }),
      ),
    ),
  );
}

/** GET /v3/event-types: no key needed; no query parameter defined. */
function eventTypes(ctx: FuzzContext) {
  return both((invalid) =>
    fc.tuple(noQueryArb(invalid), sometimes(authArb(ctx, ctx.readKey), 1 / 2)).map(([params, auth]) =>
      build({
        route: "GET /v3/event-types",
        method: "GET",
        path: `/v3/event-types${queryString(params)}`,
        faults: faultsOf(params),
        success: [200],
        extraHeaders: auth?.header ? { authorization: auth.header } : {},
      }),
    ),
  );
}

/** GET /v3/courses/changes: a change cursor, the page size and the include flags; invalid ones break one rule. */
function courseChanges(ctx: FuzzContext) {
  const includes = ["includeStudents", "includeTeachers", "includeSurveyTemplates", "includeTraining"];
  const valid = fc
    .record({
      after: fc.oneof(
        fc.constant([] as Param[]),
        fc.nat({ max: 1_000_000 }).map((n) => [param("after", `chg_${n}`)]),
      ),
      limit: fc.oneof(
        fc.constant([] as Param[]),
        fc.integer({ min: 1, max: 100 }).map((n) => [param("limit", String(n))]),
      ),
      include: fc.subarray(includes).map((names) => names.map((n) => param(n, "true"))),
    })
    .map((r) => [...r.after, ...r.limit, ...r.include]);
  const bad = (name: string, value: string, what: string, code: Code = "INVALID_PARAMETER") => [param(name, value, fault(what, code))];
  const invalidArb = fc.oneof(
    fc
      .oneof(fc.constantFrom("chg_", "chg_01", "chg_-1", "chg_1.5", "CHG_1", "c1.0.0", "chg_1234567890123456"), anyText(12))
      .filter((v) => !/^chg_(0|[1-9][0-9]{0,14})$/.test(v))
      .map((v) => bad("after", v, `after=${JSON.stringify(v)}`)),
    fc.constantFrom("0", "101", "-1", "1.5", "x").map((v) => bad("limit", v, `limit=${v}`)),
    fc
      .tuple(unknownParamName(["after", "limit", ...includes]), anyText(8))
      .map(([n, v]) => bad(n, v, `unknown parameter ${JSON.stringify(n)}`, "UNKNOWN_PARAMETER")),
  );
  return both((invalid) =>
    fc.tuple(fc.constantFrom(ctx.readKey, ctx.writeKey), invalid ? invalidArb : valid).chain(([key, params]) =>
      authArb(ctx, key).map((auth) =>
        build({
          route: "GET /v3/courses/changes",
          method: "GET",
          path: `/v3/courses/changes${queryString(params)}`,
          auth,
          faults: faultsOf(params),
          success: [200],
        }),
      ),
    ),
  );
}

/** GET /healthz: no key needed, outside the rate limit, the query string ignored. */
function health(ctx: FuzzContext) {
  return fc
    .tuple(sometimes(fc.array(fc.tuple(anyText(6), anyText(6)), { maxLength: 3 }), 1 / 3), sometimes(authArb(ctx, ctx.readKey), 1 / 2))
    .map(([q, auth]) =>
      build({
        route: "GET /healthz",
        method: "GET",
        path: `/healthz${q ? queryString(q.map(([n, v]) => param(n, v))) : ""}`,
        faults: [],
        success: [200],
        extraHeaders: auth?.header ? { authorization: auth.header } : {},
      }),
    );
}

/** GET /openapi.json, GET /docs and GET / (a redirect to /docs): no key needed, the query string ignored. */
function reference(ctx: FuzzContext) {
  return fc
    .tuple(
      fc.constantFrom("/openapi.json", "/docs", "/"),
      sometimes(fc.array(fc.tuple(anyText(6), anyText(6)), { maxLength: 3 }), 1 / 3),
      sometimes(authArb(ctx, ctx.readKey), 1 / 2),
    )
    .map(([path, q, auth]) =>
      build({
        route: `GET ${path}`,
        method: "GET",
        path: `${path}${q ? queryString(q.map(([n, v]) => param(n, v))) : ""}`,
        faults: [],
        success: [path === "/" ? 302 : 200],
        extraHeaders: auth?.header ? { authorization: auth.header } : {},
      }),
    );
}

/** /__bench/*: off in the runs (no BENCH_FLOOR), so 404 NOT_FOUND like any unknown path. */
function bench(ctx: FuzzContext) {
  return fc
    .tuple(fc.constantFrom(["POST", "/__bench/publish"], ["GET", "/__bench/floor"], ["GET", "/__bench/page-floor"]), authArb(ctx, ctx.writeKey))
    .map(([[method, path], auth]) =>
      build({
        route: `${method} ${path}`,
        method: method!,
        path: path!,
        body: method === "POST" ? { body: '{"count":1}', contentType: "application/json", faults: [] } : undefined,
        faults: [fault("benchmark route disabled", "NOT_FOUND")],
        success: [],
        extraHeaders: auth.header ? { authorization: auth.header } : {},
      }),
    );
}

/** Methods a request may carry (every one both workerd and Node's fetch accept). */
const ODD_METHODS = [
  "GET",
  "POST",
  "PATCH",
  "DELETE",
  "PUT",
  "OPTIONS",
  "HEAD",
  "PURGE",
  "PROPFIND",
  "MKCOL",
  "COPY",
  "MOVE",
  "LOCK",
  "UNLOCK",
  "REPORT",
  "SEARCH",
];

/** A known path with a method it does not answer: 405 with `allow`. */
function misrouted(ctx: FuzzContext) {
  const templates = [...new Set(ROUTES.map((r) => r.path))];
  return fc
    .tuple(fc.constantFrom(...templates), anyId, authArb(ctx, ctx.readKey), fc.constantFrom(...ODD_METHODS), fc.boolean())
    .chain(([template, id, auth, method, withBody]) => {
      const allowed = methodsOf(template);
      if (allowed.includes(method)) return fc.constant(null);
      const path = template.replace(":id", encodeURIComponent(id));
      const canHaveBody = method !== "GET" && method !== "HEAD";
      return fc.constant(
        build({
          route: "misrouted",
          method,
          path,
          body: withBody && canHaveBody ? { body: '{"name":"x"}', contentType: "application/json", faults: [] } : undefined,
          // A bench path's other method: 405 (the route exists in the table) — or 404.
          faults: [fault(`${method} on ${template}`, "METHOD_NOT_ALLOWED", ...(template.startsWith("/__bench") ? (["NOT_FOUND"] as Code[]) : []))],
          success: [],
          extraHeaders: auth.header ? { authorization: auth.header } : {},
        }),
      );
    })
    .filter((r): r is FuzzRequest => r !== null);
}

/** A path no route matches: 404 NOT_FOUND whatever the method and key. */
function unknownPath(ctx: FuzzContext) {
  const segment = fc.oneof(
    fc.stringMatching(/^[A-Za-z0-9_~-]{1,12}$/),
    anyText(8)
      .filter((s) => s.length > 0)
      .map(encodeURIComponent),
  );
  const path = fc
    .oneof(
      segment.filter((s) => !["courses", "webhooks", "courses:search", "event-types"].includes(s)).map((s) => `/v3/${s}`),
      fc.tuple(anyId, segment).map(([id, s]) => `/v3/courses/${encodeURIComponent(id)}/${s}`),
      fc
        .tuple(
          anyId,
          segment.filter((s) => !["deliveries", "test", "recover", "secret"].includes(s)),
        )
        .map(([id, s]) => `/v3/webhooks/${encodeURIComponent(id)}/${s}`),
      fc.tuple(anyId, segment).map(([id, s]) => `/v3/webhooks/${encodeURIComponent(id)}/deliveries/${s}`),
      fc.constantFrom(
        "/v3",
        "/v4/courses",
        "/V3/COURSES",
        "/v3//courses",
        "/v3/courses%2Fx",
        "/v3/courses:searchx",
        "/v3/courses:Search",
        "/openapi.yaml",
        "/docs/x",
        "/v3/webhooks/x/secret",
        "/v3/webhooks/x/secret/rotate/now",
        "/v3/event-types/x",
        "/favicon.ico",
        "/.env",
        "/v3/courses/x/../../..%2Fetc",
      ),
      segment.map((s) => `/${s}`).filter((p) => !["/docs", "/openapi.json"].includes(p)),
    )
    .filter((p) => !p.split("/").some(isDotSegment));
  return fc.tuple(path, fc.constantFrom(...ODD_METHODS), authArb(ctx, ctx.readKey)).map(([p, method, auth]) =>
    build({
      route: "unknown path",
      method,
      path: p,
      faults: [fault(`no route for ${p}`, "NOT_FOUND")],
      success: [],
      extraHeaders: auth.header ? { authorization: auth.header } : {},
    }),
  );
}

/** The generators by route (every route of `ROUTES`, plus misrouted and unknown paths). */
export function routeArbitraries(ctx: FuzzContext): Record<string, fc.Arbitrary<FuzzRequest>> {
  return {
    "GET /v3/courses": listCourses(ctx),
    "GET /v3/courses/changes": courseChanges(ctx),
    "POST /v3/courses:search": searchCourses(ctx),
    "POST /v3/courses": postCourse(ctx),
    "GET /v3/courses/:id": getCourse(ctx),
    "PATCH /v3/courses/:id": patchCourse(ctx),
    "POST /v3/webhooks": createWebhook(ctx),
    "GET /v3/webhooks": listWebhooks(ctx),
    "GET /v3/webhooks/:id": getWebhook(ctx),
    "DELETE /v3/webhooks/:id": deleteWebhook(ctx),
    "GET /v3/webhooks/:id/deliveries": listDeliveries(ctx),
    "GET /v3/webhooks/:id/stats": webhookStats(ctx),
    "POST /v3/webhooks/:id/test": testWebhook(ctx),
    "PATCH /v3/webhooks/:id": updateWebhook(ctx),
    "POST /v3/webhooks/:id/secret/rotate": rotateSecret(ctx),
    "POST /v3/webhooks/:id/deliveries/:eventId/resend": resendDelivery(ctx),
    "POST /v3/webhooks/:id/recover": recoverDeliveries(ctx),
    "GET /v3/events": listEvents(ctx),
    "GET /v3/event-types": eventTypes(ctx),
    "POST /v3/portal-sessions": createPortalSession(ctx),
    "DELETE /v3/portal-sessions": revokePortalSessions(ctx),
    "POST /v3/portal-sessions/redeem": redeemPortalSession(ctx),
    "GET /v3/school": getSchool(ctx),
    "GET /openapi.json": reference(ctx).filter((r) => r.route === "GET /openapi.json"),
    "GET /docs": reference(ctx).filter((r) => r.route === "GET /docs"),
    "GET /": reference(ctx).filter((r) => r.route === "GET /"),
    "GET /healthz": health(ctx),
    "POST /__bench/publish": bench(ctx).filter((r) => r.route === "POST /__bench/publish"),
    "GET /__bench/floor": bench(ctx).filter((r) => r.route === "GET /__bench/floor"),
    "GET /__bench/page-floor": bench(ctx).filter((r) => r.route === "GET /__bench/page-floor"),
    misrouted: misrouted(ctx),
    "unknown path": unknownPath(ctx),
  };
}

/** Relative weights of the routes in a mixed run (the listing routes have the most inputs). */
const WEIGHTS: Record<string, number> = {
  "GET /v3/courses": 6,
  "GET /v3/courses/changes": 2,
  "POST /v3/courses:search": 6,
  "POST /v3/courses": 3,
  "GET /v3/courses/:id": 2,
  "PATCH /v3/courses/:id": 3,
  "POST /v3/webhooks": 3,
  "GET /v3/webhooks": 1,
  "GET /v3/webhooks/:id": 1,
  "DELETE /v3/webhooks/:id": 1,
  "GET /v3/webhooks/:id/deliveries": 2,
  "GET /v3/webhooks/:id/stats": 1,
  "POST /v3/webhooks/:id/test": 2,
  "PATCH /v3/webhooks/:id": 2,
  "POST /v3/webhooks/:id/secret/rotate": 1,
  "POST /v3/webhooks/:id/deliveries/:eventId/resend": 1,
  "POST /v3/webhooks/:id/recover": 1,
  "GET /v3/events": 2,
  "GET /v3/event-types": 1,
  "POST /v3/portal-sessions": 1,
  "DELETE /v3/portal-sessions": 1,
  "POST /v3/portal-sessions/redeem": 1,
  "GET /v3/school": 1,
  "GET /openapi.json": 1,
  "GET /docs": 1,
  "GET /": 1,
  "GET /healthz": 1,
  "POST /__bench/publish": 1,
  "GET /__bench/floor": 1,
  "GET /__bench/page-floor": 1,
  misrouted: 2,
  "unknown path": 2,
};

/** One request of any route, `routes` (default: all) weighted as in `WEIGHTS`. */
export function requestArb(ctx: FuzzContext, routes?: string[]): fc.Arbitrary<FuzzRequest> {
  const all = routeArbitraries(ctx);
  const chosen = routes ?? Object.keys(all);
  return fc.oneof(...chosen.map((r) => ({ weight: WEIGHTS[r] ?? 1, arbitrary: all[r]! })));
}
