/**
 * Checks HTTP responses against the OpenAPI document (src/openapi/document.ts), inside
 * workerd, with @cfworker/json-schema (no `eval`/`new Function`, which workerd forbids).
 * `checkResponse` is called by `call()` in test/support/helpers.ts, so every HTTP test checks
 * each response: its operation exists and documents its status and content type, the body
 * matches that status's schema (no undocumented field), the documented required headers are
 * present and match; a request that matches no operation is checked against
 * `x-fallback-responses`. A mismatch throws an Error naming the request, the status, the
 * schema's location and the JSON path of each problem (docs/development.md § Tests).
 */
import { dereference, type OutputUnit, type Schema, validate } from "@cfworker/json-schema";
import { openApiDocument } from "../../src/api";
import { FALLBACK_RESPONSES_KEY } from "../../src/openapi/document";

type Json = Record<string, any>;

interface Operation {
  method: string;
  template: string;
  re: RegExp;
  op: Json;
}

interface Checker {
  doc: Json;
  lookup: Record<string, Schema | boolean>;
  operations: Operation[];
}

let checker: Checker | undefined;

/** A deep copy of `value` without `example` / `examples` (an example's `id` would read as a schema id). */
function withoutExamples(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(withoutExamples);
  if (value && typeof value === "object") {
    const out: Json = {};
    for (const [k, v] of Object.entries(value)) if (k !== "example" && k !== "examples") out[k] = withoutExamples(v);
    return out;
  }
  return value;
}

const escapeRe = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

function getChecker(): Checker {
  if (checker) return checker;
  const doc = withoutExamples(JSON.parse(JSON.stringify(openApiDocument()))) as Json;
  // Every sub-object of the document becomes addressable by its JSON pointer, so `$ref`s
  // such as `#/components/schemas/Course` resolve against the whole document.
  const lookup = dereference(doc as Schema);
  const operations: Operation[] = [];
  for (const [template, item] of Object.entries(doc.paths as Json)) {
    const re = new RegExp(
      `^${template
        .split(/\{[^}]+\}/)
        .map(escapeRe)
        .join("[^/]+")}/*$`,
    );
    for (const [method, op] of Object.entries(item as Json)) {
      if (["get", "post", "put", "patch", "delete"].includes(method)) operations.push({ method: method.toUpperCase(), template, re, op: op as Json });
    }
  }
  // Literal paths win over templated ones (OpenAPI path matching).
  operations.sort((a, b) => Number(a.template.includes("{")) - Number(b.template.includes("{")));
  checker = { doc, lookup, operations };
  return checker;
}

const pointer = (...parts: string[]) => `#/${parts.map((p) => p.replace(/~/g, "~0").replace(/\//g, "~1")).join("/")}`;

function resolve(doc: Json, value: Json): Json {
  let v = value;
  while (v && typeof v.$ref === "string") {
    v = v.$ref
      .slice(2)
      .split("/")
      .map((p: string) => p.replace(/~1/g, "/").replace(/~0/g, "~"))
      .reduce((node: Json, key: string) => node?.[key], doc);
  }
  return v;
}

/** Keywords whose errors only say "something below failed". */
const WRAPPERS = new Set(["$ref", "properties", "items", "prefixItems", "additionalProperties", "allOf"]);

/**
 * The problems of a validation, most specific first (deepest instance location, wrapper
 * keywords dropped when something more precise exists), at most `max`, one per line:
 * `at <JSON pointer in the body>: <problem> (<keyword> at <schema location>)`.
 */
function describeErrors(errors: OutputUnit[], max = 8): string {
  const precise = errors.filter((e) => !WRAPPERS.has(e.keyword));
  const chosen = precise.length > 0 ? precise : errors;
  const lines = [
    ...new Set(
      [...chosen]
        .sort((a, b) => b.instanceLocation.length - a.instanceLocation.length)
        .map((e) => {
          const what = e.keyword === "false" ? "undocumented field (the schema forbids additional properties)" : e.error;
          return `  at ${e.instanceLocation || "#"}: ${what} (${e.keyword} at ${e.keywordLocation})`;
        }),
    ),
  ];
  return lines.slice(0, max).join("\n") + (lines.length > max ? `\n  … and ${lines.length - max} more` : "");
}

/**
 * Validates one response against the document.
 *
 * @param method the request method (`GET`, `POST`, …).
 * @param url the request URL (only its path is used).
 * @param res the response; its body is read from a clone, so the caller can still read it.
 * @throws Error when the operation, status, content type, a required header or the body is
 *   not as documented (the message names each problem with its JSON path).
 */
export async function checkResponse(method: string, url: string, res: Response): Promise<void> {
  const { doc, lookup, operations } = getChecker();
  const path = new URL(url).pathname;
  const upper = method.toUpperCase();
  // A literal path is its own resource for every method (docs/reference.md § Error codes, 405):
  // no templated operation describes it.
  const literal = operations.some((o) => !o.template.includes("{") && o.re.test(path));
  const op = operations.find((o) => o.method === upper && o.re.test(path) && !(literal && o.template.includes("{")));
  const where = `${upper} ${path} → ${res.status}`;
  let response: Json | undefined;
  let location: string;
  if (op) {
    const responses = op.op.responses as Json;
    const key = [String(res.status), `${Math.floor(res.status / 100)}XX`, "default"].find((k) => k in responses);
    if (!key) {
      throw new Error(`${where}: status ${res.status} is not documented for ${upper} ${op.template} (documented: ${Object.keys(responses).join(", ")}).`);
    }
    location = pointer("paths", op.template, op.method.toLowerCase(), "responses", key);
    response = resolve(doc, responses[key]);
  } else {
    const fallback = doc[FALLBACK_RESPONSES_KEY] as Json;
    if (!(String(res.status) in fallback)) {
      throw new Error(
        `${where}: no operation matches ${upper} ${path}, and ${res.status} is not one of the fallback statuses (${Object.keys(fallback).join(", ")}).`,
      );
    }
    location = pointer(FALLBACK_RESPONSES_KEY, String(res.status));
    response = fallback[String(res.status)] as Json;
  }

  const problems: string[] = [];
  for (const [name, raw] of Object.entries((response!.headers ?? {}) as Json)) {
    const header = resolve(doc, raw as Json);
    const value = res.headers.get(name);
    if (value === null) {
      if (header.required) problems.push(`  header ${name} is documented as required and missing`);
      continue;
    }
    if (header.schema) {
      const result = validate(value, header.schema as Schema, "2020-12", lookup, false);
      if (!result.valid) problems.push(`  header ${name}: ${JSON.stringify(value)} does not match its schema\n${describeErrors(result.errors)}`);
    }
  }

  const content = response!.content as Json | undefined;
  const contentType = res.headers.get("content-type");
  const bodyText = await res.clone().text();
  if (!content) {
    if (bodyText.length > 0) problems.push(`  a body was sent but ${location} documents none`);
  } else {
    const mediaType = (contentType ?? "").split(";")[0]!.trim().toLowerCase();
    const media = content[mediaType] as Json | undefined;
    if (!media) {
      problems.push(`  content type ${JSON.stringify(contentType)} is not documented (documented: ${Object.keys(content).join(", ")})`);
    } else if (media.schema) {
      let body: unknown = bodyText;
      let parsed = true;
      if (mediaType === "application/json") {
        try {
          body = JSON.parse(bodyText);
        } catch {
          parsed = false;
          problems.push(`  the body is not JSON: ${bodyText.slice(0, 200)}`);
        }
      }
      if (parsed) {
        const result = validate(body, media.schema as Schema, "2020-12", lookup, false);
        if (!result.valid)
          problems.push(`  the body does not match ${location}/content/${mediaType.replace("/", "~1")}/schema\n${describeErrors(result.errors)}`);
      }
    }
  }
  if (problems.length > 0) {
    throw new Error(
      `Response not as documented in the OpenAPI document: ${where}${op ? ` (${op.op.operationId})` : ""}\n${problems.join("\n")}\nbody: ${bodyText.slice(0, 500)}`,
    );
  }
}

/**
 * Validates a webhook event body (as POSTed to a receiver) against the document's
 * `webhooks` entry of its `type`.
 *
 * @throws Error when the type has no entry or the body does not match its schema.
 */
export function checkEvent(event: unknown): void {
  const { doc, lookup } = getChecker();
  const type = (event as { type?: unknown })?.type;
  const hook = typeof type === "string" ? (doc.webhooks as Json)[type] : undefined;
  if (!hook) throw new Error(`Event type ${JSON.stringify(type)} is not documented under webhooks.`);
  const schema = hook.post.requestBody.content["application/json"].schema as Schema;
  const result = validate(event, schema, "2020-12", lookup, false);
  if (!result.valid)
    throw new Error(`Event not as documented (webhooks.${type}):\n${describeErrors(result.errors)}\nbody: ${JSON.stringify(event).slice(0, 500)}`);
}

/**
 * Validates `value` against the schema at `pointer` in the document (a JSON pointer such
 * as `#/components/schemas/Course`).
 *
 * @returns `null` when it matches, else the problems, one per line.
 */
export function problemsAt(pointer: string, value: unknown): string | null {
  const { doc, lookup } = getChecker();
  const schema = resolve(doc, { $ref: pointer });
  if (schema === undefined) return `nothing at ${pointer}`;
  const result = validate(value, schema as Schema, "2020-12", lookup, false);
  return result.valid ? null : describeErrors(result.errors);
}
