/**
 * Request schemas of the OpenAPI document describe what a client may send (docs/architecture.md
 * § One declaration per operation): a field with a `default` may be left out. Generators such
 * as openapi-typescript make a defaulted property required when they meet it in a component
 * (`#/components/schemas/…`), and optional only where it sits inline under a `requestBody`; so
 * no defaulted property of a request body is required, nor reached through a `$ref`.
 * `npm run test:client` compiles a program that omits them against the generated client.
 */
import { describe, expect, it } from "vitest";
import { openApiDocument } from "../../src/api";

type Json = Record<string, any>;
const doc: Json = openApiDocument();

/** Every `"<where>: <property>"` of a request-body schema with a default that is required or sits behind a `$ref`. */
function defaultedProblems(schema: Json, where: string, viaRef: boolean, seen: Set<string>): string[] {
  if (!schema || typeof schema !== "object") return [];
  if (typeof schema.$ref === "string") {
    if (seen.has(schema.$ref)) return [];
    const target = schema.$ref.replace("#/components/schemas/", "");
    return defaultedProblems(doc.components.schemas[target], `${where} → ${target}`, true, new Set([...seen, schema.$ref]));
  }
  const problems: string[] = [];
  for (const [name, property] of Object.entries<Json>(schema.properties ?? {})) {
    if (property.default !== undefined && (viaRef || schema.required?.includes(name))) problems.push(`${where}: ${name}`);
    problems.push(...defaultedProblems(property, `${where}.${name}`, viaRef, seen));
  }
  for (const key of ["items", "additionalProperties"]) problems.push(...defaultedProblems(schema[key], `${where}[]`, viaRef, seen));
  for (const key of ["anyOf", "oneOf", "allOf"]) for (const s of schema[key] ?? []) problems.push(...defaultedProblems(s, where, viaRef, seen));
  return problems;
}

describe("request schemas describe what a client may send", () => {
  it("no request-body property with a default is required or reached through a $ref (operations and webhooks)", () => {
    const problems: string[] = [];
    for (const [group, items] of [
      ["paths", doc.paths],
      ["webhooks", doc.webhooks],
    ] as const) {
      for (const [path, item] of Object.entries<Json>(items ?? {})) {
        for (const [method, op] of Object.entries<Json>(item)) {
          const schema = op.requestBody?.content?.["application/json"]?.schema;
          if (schema) problems.push(...defaultedProblems(schema, `${group} ${method.toUpperCase()} ${path}`, false, new Set()));
        }
      }
    }
    expect(problems).toEqual([]);
  });

  it("the search body lists its defaults, none of them required", () => {
    const schema = doc.paths["/v3/courses:search"].post.requestBody.content["application/json"].schema;
    expect(schema.$ref).toBeUndefined();
    for (const [name, value] of Object.entries({
      page: 1,
      includeStudents: false,
      includeTeachers: false,
      includeSurveyTemplates: false,
      includeTraining: false,
    })) {
      expect(schema.properties[name].default, name).toBe(value);
      expect(schema.required ?? [], name).not.toContain(name);
    }
  });
});
