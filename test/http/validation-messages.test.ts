/**
 * Validation messages in the catalogue's own words (docs/reference.md § "Error codes"): every
 * kind of problem a request schema finds reads as the contract phrases it, naming the field,
 * never zod's wording ("Invalid input: expected …"); an instant says what is wrong with it
 * and echoes it; an unknown name's "did you mean" also finds prefixes and suffixes.
 */
import { beforeAll, describe, expect, it } from "vitest";
import { fixture, KEY_A } from "../support/fixtures";
import { callJson, loadFixture } from "../support/helpers";

beforeAll(async () => {
  await loadFixture(fixture);
});

const base = { name: "Droit des contrats", startDateTime: "2026-10-01T10:00:00+02:00", endDateTime: "2026-10-01T12:00:00+02:00" };

/** The `details` of a 400 to GET /v3/courses?<query>. */
async function queryDetails(query: string) {
  const { status, body } = await callJson(`/v3/courses?${query}`, { key: KEY_A });
  expect(status, JSON.stringify(body)).toBe(400);
  expect(body.message).not.toMatch(/Invalid input|expected/i);
  return { code: body.code, message: body.message, details: body.details };
}

/** The `details` of a 400 to POST `path` with `json`. */
async function bodyDetails(json: unknown, path = "/v3/courses") {
  const { status, body } = await callJson(path, { method: "POST", key: KEY_A, json });
  expect(status, JSON.stringify(body)).toBe(400);
  expect(body.message).not.toMatch(/Invalid input|expected/i);
  return { code: body.code, message: body.message, details: body.details };
}

describe("GET /v3/courses query: the catalogue's words", () => {
  it("an integer out of range or not one", async () => {
    expect((await queryDetails("limit=abc")).details).toEqual([{ parameter: "limit", message: "must be an integer from 1 to 100" }]);
    expect((await queryDetails("limit=0")).details).toEqual([{ parameter: "limit", message: "must be an integer from 1 to 100" }]);
    expect((await queryDetails("page=1.5")).details).toEqual([{ parameter: "page", message: "must be an integer from 1 to 1000000" }]);
  });

  it("an enum, a pattern, a text too long", async () => {
    expect((await queryDetails("archived=yes")).details).toEqual([{ parameter: "archived", message: "must be one of true, false, 1, 0" }]);
    expect((await queryDetails("creatorId=a%20b")).details).toEqual([{ parameter: "creatorId", message: "must be an id of 1–64 characters [A-Za-z0-9_-]" }]);
    expect((await queryDetails(`name=${"x".repeat(201)}`)).details).toEqual([{ parameter: "name", message: "must be at most 200 characters" }]);
  });

  it("an instant says what is wrong and echoes the value", async () => {
    const tail = "must be an ISO 8601 instant with a zone, within years 0000–9999 in UTC, e.g. 2026-09-07T08:00:00Z or 2026-09-07T10:00:00+02:00";
    expect((await queryDetails("courseStartDateTime=2026-09-07T08:00:00")).details).toEqual([
      { parameter: "courseStartDateTime", message: `"2026-09-07T08:00:00" has no time zone: ${tail}` },
    ]);
    expect((await queryDetails("courseStartDateTime=2026-02-30T08:00:00Z")).details).toEqual([
      { parameter: "courseStartDateTime", message: `"2026-02-30T08:00:00Z" is not a real date or time: ${tail}` },
    ]);
    expect((await queryDetails("courseEndDateTime=tomorrow")).details).toEqual([
      { parameter: "courseEndDateTime", message: `"tomorrow" is not an ISO 8601 instant: ${tail}` },
    ]);
  });

  it("did you mean: a suffix or a prefix of an accepted name", async () => {
    const suffix = await queryDetails("startDateTime=2026-09-07T08:00:00Z");
    expect(suffix.code).toBe("UNKNOWN_PARAMETER");
    expect(suffix.details).toEqual([{ parameter: "startDateTime", message: 'unknown; did you mean "courseStartDateTime"?' }]);
    const prefix = await queryDetails("courseStartDate=2026-09-07T08:00:00Z");
    expect(prefix.details).toEqual([{ parameter: "courseStartDate", message: 'unknown; did you mean "courseStartDateTime"?' }]);
    expect((await queryDetails("limt=5")).details).toEqual([{ parameter: "limt", message: 'unknown; did you mean "limit"?' }]);
  });
});

describe("POST /v3/courses body: the catalogue's words", () => {
  it("a missing field is required", async () => {
    const { code, message, details } = await bodyDetails({ startDateTime: base.startDateTime, endDateTime: base.endDateTime });
    expect(code).toBe("VALIDATION_ERROR");
    expect(details).toEqual([{ path: "name", message: "is required" }]);
    expect(message).toBe("The body breaks the schema: name is required.");
  });

  it("a wrong type names what it must be and what came", async () => {
    expect((await bodyDetails({ ...base, name: 5 })).details).toEqual([{ path: "name", message: "must be a string, not a number" }]);
    expect((await bodyDetails({ ...base, groupIds: "grp_1" })).details).toEqual([{ path: "groupIds", message: "must be an array, not a string" }]);
    expect((await bodyDetails({ ...base, professors: [{ professorId: "prf_1", signed: "yes" }] })).details).toEqual([
      { path: "professors[0].signed", message: "must be a boolean, not a string" },
    ]);
  });

  it("too small, too big, a pattern", async () => {
    expect((await bodyDetails({ ...base, name: "  " })).details).toEqual([{ path: "name", message: "must not be empty" }]);
    const professors = Array.from({ length: 101 }, (_, i) => ({ professorId: `prf_${i}` }));
    expect((await bodyDetails({ ...base, professors })).details).toEqual([{ path: "professors", message: "must list at most 100 items" }]);
    expect((await bodyDetails({ ...base, creatorId: "a b" })).details).toEqual([
      { path: "creatorId", message: "must be an id of 1–64 characters [A-Za-z0-9_-]" },
    ]);
  });

  it("an instant says what is wrong and echoes the value", async () => {
    expect((await bodyDetails({ ...base, startDateTime: "2026-10-01T10:00:00" })).details).toEqual([
      {
        path: "startDateTime",
        message:
          '"2026-10-01T10:00:00" has no time zone: must be an ISO 8601 instant with a zone, within years 0000–9999 in UTC, e.g. 2026-09-07T08:00:00Z or 2026-09-07T10:00:00+02:00',
      },
    ]);
  });

  it("an unknown field: did you mean a prefix or a suffix", async () => {
    const { code, details } = await bodyDetails({ ...base, startDate: base.startDateTime });
    expect(code).toBe("UNKNOWN_PARAMETER");
    expect(details).toEqual([{ path: "startDate", message: 'unknown; did you mean "startDateTime"?' }]);
  });
});

describe("POST /v3/courses:search body: numbers, enums and unions", () => {
  const search = (json: unknown) => bodyDetails(json, "/v3/courses:search");

  it("an integer out of range, fractional or of the wrong type", async () => {
    for (const limit of ["10", 0, 101, 1.5]) {
      expect((await search({ limit })).details).toEqual([{ path: "limit", message: "must be an integer from 1 to 100" }]);
    }
  });

  it("an enum and a union", async () => {
    expect((await search({ sort: [{ field: "name", order: "up" }] })).details).toEqual([{ path: "sort[0].order", message: "must be one of asc, desc" }]);
    expect((await search({ courseId: 5 })).details).toEqual([{ path: "courseId", message: "must be an array of ids or a comma-separated string" }]);
    expect((await search({ sort: [{ field: "size" }] })).details).toEqual([
      { path: "sort[0].field", message: "must be one of startDateTime, endDateTime, name, classroom, createdAt, updatedAt" },
    ]);
    expect((await search({ sort: [{}] })).details).toEqual([{ path: "sort[0].field", message: "is required" }]);
    expect((await search({ archived: "true" })).details).toEqual([{ path: "archived", message: "must be a boolean, not a string" }]);
  });
});

describe("POST /v3/webhooks/{id}/recover: body paths as every body error names them", () => {
  it("a window older than the retention, or reversed, names `since` (no JSON-path prefix)", async () => {
    const hook = await callJson("/v3/webhooks", { method: "POST", key: KEY_A, json: { url: "https://recover-paths.example.com/in" } });
    expect(hook.status).toBe(201);
    const now = Date.now();
    const old = await bodyDetails({ since: new Date(now - 8 * 86_400_000).toISOString() }, `/v3/webhooks/${hook.body.result.id}/recover`);
    expect(old.details).toEqual([{ path: "since", message: "must be within the last 7 days" }]);
    const reversed = await bodyDetails(
      { since: new Date(now - 3_600_000).toISOString(), until: new Date(now - 7_200_000).toISOString() },
      `/v3/webhooks/${hook.body.result.id}/recover`,
    );
    expect(reversed.details).toEqual([{ path: "since", message: "must not be after until" }]);
  });
});
