/**
 * POST /v3/courses:search (docs/reference.md): the same filters as GET (one filter model), long id
 * lists, courseId, multi-key sort.
 */
import { env } from "cloudflare:test";
import fc from "fast-check";
import { beforeAll, describe, expect, it } from "vitest";
import { coursesA, fixture, KEY_A, KEY_B } from "../support/fixtures";
import { call, callJson, loadFixture } from "../support/helpers";

beforeAll(async () => {
  await loadFixture(fixture);
});

const search = (json: unknown, key = KEY_A) => callJson("/v3/courses:search", { method: "POST", key, json });
const searchIds = async (json: unknown, key = KEY_A) => {
  const { status, body } = await search(json, key);
  expect(status, JSON.stringify(body)).toBe(200);
  return (body.result as { id: string }[]).map((c) => c.id);
};
const getIds = async (qs: string) => {
  const { status, body } = await callJson(`/v3/courses?${qs}`, { key: KEY_A });
  expect(status, JSON.stringify(body)).toBe(200);
  return (body.result as { id: string }[]).map((c) => c.id);
};

/** Each GET filter with its JSON twin. */
const twins: [string, Record<string, unknown>][] = [
  ["courseStartDateTime=2026-09-10T10:00:00%2B02:00", { courseStartDateTime: "2026-09-10T10:00:00+02:00" }],
  ["courseEndDateTime=2026-09-08T09:30:00Z", { courseEndDateTime: "2026-09-08T09:30:00Z" }],
  ["absencesSent=true", { absencesSent: true }],
  ["absencesNotSent=true", { absencesNotSent: true }],
  ["absencesSent=true&absencesNotSent=true", { absencesSent: true, absencesNotSent: true }],
  ["groupId=grp_3,grp_2", { groupId: ["grp_3", "grp_2"] }],
  ["groupId=grp_3,grp_2", { groupId: "grp_3, grp_2," }],
  ["studentId=stu_1", { studentId: ["stu_1"] }],
  ["professorId=prf_3", { professorId: ["prf_3"] }],
  ["trainingId=trn_2", { trainingId: ["trn_2"] }],
  ["archived=true", { archived: true }],
  ["archived=false", { archived: false }],
  ["classroom=B204", { classroom: "B204" }],
  ["creatorId=usr_1", { creatorId: "usr_1" }],
  ["name=economie", { name: "economie" }],
  ["name=100%25", { name: "100%" }],
  ["name=_", { name: "_" }],
  ["createdAt=2030-01-01T00:00:00Z", { createdAt: "2030-01-01T00:00:00Z" }],
  ["updatedAt=2030-01-01T00:00:00Z", { updatedAt: "2030-01-01T00:00:00Z" }],
  ["professorSignatureMissing=true", { professorSignatureMissing: true }],
  ["professorSignatureMissing=false", { professorSignatureMissing: false }],
  ["page=2&limit=3", { page: 2, limit: 3 }],
  ["groupId=", { groupId: [] }],
];

describe("search and GET agree", () => {
  for (const [qs, json] of twins) {
    it(`${qs} ≡ ${JSON.stringify(json)}`, async () => {
      const viaGet = await getIds(qs);
      expect(await searchIds(json)).toEqual(viaGet);
    });
  }

  it("for random combinations (fast-check)", async () => {
    const arb = fc.record(
      {
        courseStartDateTime: fc.constantFrom("2026-09-07T08:00:00Z", "2026-09-10T10:00:00+02:00"),
        courseEndDateTime: fc.constantFrom("2026-09-11T20:00:00+01:00", "2026-09-15T10:00:00Z"),
        absencesSent: fc.boolean(),
        absencesNotSent: fc.boolean(),
        groupId: fc.uniqueArray(fc.constantFrom("grp_1", "grp_2", "grp_3"), { minLength: 1, maxLength: 2 }),
        studentId: fc.uniqueArray(fc.constantFrom("stu_1", "stu_2", "stu_4"), { minLength: 1, maxLength: 2 }),
        professorId: fc.uniqueArray(fc.constantFrom("prf_1", "prf_3", "prf_4"), { minLength: 1, maxLength: 2 }),
        trainingId: fc.uniqueArray(fc.constantFrom("trn_1", "trn_2"), { minLength: 1, maxLength: 2 }),
        archived: fc.boolean(),
        classroom: fc.constantFrom("B204", "A101"),
        creatorId: fc.constantFrom("usr_1", "usr_2"),
        name: fc.constantFrom("e", "É", "%"),
        professorSignatureMissing: fc.boolean(),
        page: fc.integer({ min: 1, max: 3 }),
        limit: fc.integer({ min: 1, max: 4 }),
      },
      { requiredKeys: [] },
    );
    await fc.assert(
      fc.asyncProperty(arb, async (q) => {
        const p = new URLSearchParams();
        for (const [k, v] of Object.entries(q)) p.set(k, Array.isArray(v) ? v.join(",") : String(v));
        const viaGet = await call(`/v3/courses?${p}`, { key: KEY_A }).then((r) => r.json() as any);
        const viaSearch = await call("/v3/courses:search", { method: "POST", key: KEY_A, json: q }).then((r) => r.json() as any);
        expect(viaSearch).toMatchObject({ status: "success", result: viaGet.result, pagination: viaGet.pagination });
      }),
      { numRuns: 80 },
    );
  });
});

describe("long id lists", () => {
  const list = (n: number, real: string[]) => [...real, ...Array.from({ length: n - real.length }, (_, i) => `stu_x${i}`)];
  for (const n of [1, 100, 101, 5000, 10000]) {
    it(`studentId with ${n} ids`, async () => {
      expect(await searchIds({ studentId: list(n, ["stu_4"]) })).toEqual(["crs_04", "crs_06"]);
    });
  }
  it("courseId with 10,000 ids, and together with other lists", async () => {
    const courseId = [...Array.from({ length: 9998 }, (_, i) => `crs_y${i}`), "crs_03", "crs_06"];
    expect(await searchIds({ courseId })).toEqual(["crs_03", "crs_06"]);
    expect(await searchIds({ courseId, groupId: list(10000, ["grp_3"]), studentId: list(10000, ["stu_2"]) })).toEqual(["crs_06"]);
  });
  it("10,001 ids is a VALIDATION_ERROR with the JSON path", async () => {
    const { status, body } = await search({ groupId: list(10001, []) });
    expect(status).toBe(400);
    expect(body.code).toBe("VALIDATION_ERROR");
    expect(body.details).toEqual([{ path: "groupId", message: expect.stringContaining("10000") }]);
  });
  it("courseId of another school finds nothing", async () => {
    expect(await searchIds({ courseId: ["crs_b1"] })).toEqual([]);
    expect(await searchIds({ courseId: ["crs_b1"] }, KEY_B)).toEqual(["crs_b1"]);
  });
});

describe("sort", () => {
  const fold = (s: string) => s.normalize("NFKD").replace(/\p{M}/gu, "").toLowerCase();
  type C = (typeof coursesA)[number];
  const value = (c: C, field: string): string | number | null => {
    switch (field) {
      case "startDateTime":
        return Date.parse(c.startDateTime);
      case "endDateTime":
        return Date.parse(c.endDateTime);
      case "name":
        return fold(c.name);
      case "classroom":
        return c.classroom ? fold(c.classroom) : null;
      default:
        return Date.parse((c as any)[field]);
    }
  };
  /** Reference sort: keys in order, nulls first in asc / last in desc, then id asc. */
  const expected = (keys: { field: string; order: "asc" | "desc" }[]) =>
    [...coursesA]
      .sort((a, b) => {
        for (const k of keys) {
          const va = value(a, k.field),
            vb = value(b, k.field);
          if (va === vb) continue;
          const cmp = va === null ? -1 : vb === null ? 1 : va < vb ? -1 : 1;
          return k.order === "asc" ? cmp : -cmp;
        }
        return a.id < b.id ? -1 : 1;
      })
      .map((c) => c.id);

  for (const field of ["startDateTime", "endDateTime", "name", "classroom", "createdAt", "updatedAt"]) {
    for (const order of ["asc", "desc"] as const) {
      it(`${field} ${order}`, async () => {
        expect(await searchIds({ sort: [{ field, order }] })).toEqual(expected([{ field, order }]));
      });
    }
  }

  it("name is case- and accent-insensitive: Économie sorts between Droit and Finance", async () => {
    const names = (await search({ sort: [{ field: "name", order: "asc" }] })).body.result.map((c: any) => c.name);
    expect(names).toEqual([
      "Algèbre linéaire",
      "Anglais",
      "Droit 100% pratique",
      "Économie du développement",
      "ÉCONOMIE générale",
      "Finance_de_marché",
      "Histoire-Géographie",
      "Philosophie",
    ]);
  });

  it("classroom: nulls first in asc, last in desc, ties folded then id", async () => {
    expect(await searchIds({ sort: [{ field: "classroom", order: "asc" }] })).toEqual([
      "crs_04",
      "crs_07",
      "crs_03",
      "crs_08",
      "crs_01",
      "crs_02",
      "crs_05",
      "crs_06",
    ]);
    expect(await searchIds({ sort: [{ field: "classroom", order: "desc" }] })).toEqual([
      "crs_06",
      "crs_01",
      "crs_02",
      "crs_05",
      "crs_03",
      "crs_08",
      "crs_04",
      "crs_07",
    ]);
  });

  it("several keys apply in order", async () => {
    const keys = [
      { field: "classroom", order: "desc" as const },
      { field: "startDateTime", order: "desc" as const },
    ];
    expect(await searchIds({ sort: keys })).toEqual(expected(keys));
    const keys2 = [
      { field: "createdAt", order: "asc" as const },
      { field: "name", order: "desc" as const },
    ];
    expect(await searchIds({ sort: keys2 })).toEqual(expected(keys2));
  });

  it("order defaults to asc; pagination is stable under a sort", async () => {
    const all = await searchIds({ sort: [{ field: "classroom" }] });
    const paged: string[] = [];
    for (let page = 1; page <= 3; page++) paged.push(...(await searchIds({ sort: [{ field: "classroom" }], limit: 3, page })));
    expect(paged).toEqual(all);
  });
});

describe("bad search bodies", () => {
  it("unknown body fields are 400 UNKNOWN_PARAMETER with paths and a close match", async () => {
    const { status, body } = await search({ studentIds: ["stu_1"] });
    expect(status).toBe(400);
    expect(body.code).toBe("UNKNOWN_PARAMETER");
    expect(body.message).toContain('did you mean "studentId"');
    expect(body.details).toEqual([{ path: "studentIds", message: expect.any(String) }]);
    const nested = await search({ sort: [{ field: "name", direction: "asc" }] });
    expect(nested.body.code).toBe("UNKNOWN_PARAMETER");
    expect(nested.body.details[0].path).toBe("sort[0].direction");
  });

  const raw = (body: string) => callJson("/v3/courses:search", { method: "POST", key: KEY_A, body, headers: { "content-type": "application/json" } });

  for (const key of ["__proto__", "constructor", "prototype"]) {
    it(`a ${key} key is 400 UNKNOWN_PARAMETER, at the root and in a sort key`, async () => {
      const root = await raw(`{"limit":5,"${key}":{"limit":0,"isAdmin":true}}`);
      expect([root.status, root.body.code, root.body.details]).toEqual([400, "UNKNOWN_PARAMETER", [{ path: key, message: "unknown" }]]);
      expect(root.body.message).toContain("Accepted: courseStartDateTime");
      const nested = await raw(`{"sort":[{"field":"name","${key}":{"order":"desc"}}]}`);
      expect([nested.status, nested.body.code, nested.body.details]).toEqual([400, "UNKNOWN_PARAMETER", [{ path: `sort[0].${key}`, message: "unknown" }]]);
    });
  }

  it("a prototype key deep inside a value is listed with the value's own problem (400 VALIDATION_ERROR)", async () => {
    const { status, body } = await raw('{"groupId":[{"a":[{"__proto__":{"x":1}}]}]}');
    expect([status, body.code]).toEqual([400, "VALIDATION_ERROR"]);
    expect(body.details).toEqual(
      expect.arrayContaining([
        { path: "groupId[0].a[0].__proto__", message: "unknown field" },
        { path: "groupId[0]", message: expect.any(String) },
      ]),
    );
  });

  it("a string with an unpaired surrogate is 400 VALIDATION_ERROR (it has no UTF-8 form)", async () => {
    const { status, body } = await raw('{"name":"x\\ud800y"}');
    expect([status, body.code, body.details]).toEqual([400, "VALIDATION_ERROR", [{ path: "name", message: expect.stringContaining("unpaired surrogate") }]]);
    expect((await raw('{"name":"\\ud83d\\ude00"}')).status).toBe(200);
  });

  it("a body with thousands of unknown fields lists 20 of them, names cut to 100 characters", async () => {
    const json = Object.fromEntries(Array.from({ length: 5000 }, (_, i) => [`field${i}${"x".repeat(i === 0 ? 500 : 0)}`, i]));
    const { status, body } = await search(json);
    expect([status, body.code]).toEqual([400, "UNKNOWN_PARAMETER"]);
    expect(body.details).toHaveLength(20);
    expect(body.details[0].path).toBe(`field0${"x".repeat(94)}…`);
    expect(body.message).toContain("and 4980 more");
  });

  it("wrong types are VALIDATION_ERROR with every JSON path", async () => {
    const { status, body } = await search({
      archived: "true",
      limit: 0,
      page: 1.5,
      groupId: [1],
      courseStartDateTime: "2026-09-07T08:00:00",
      sort: [{ field: "teacher" }],
    });
    expect(status).toBe(400);
    expect(body.code).toBe("VALIDATION_ERROR");
    expect(body.details.map((d: any) => d.path).sort()).toEqual(["archived", "courseStartDateTime", "groupId[0]", "limit", "page", "sort[0].field"]);
  });

  it("a body that is not an object, not JSON, not application/json, or too large", async () => {
    expect((await search([1])).body.code).toBe("VALIDATION_ERROR");
    const notJson = await callJson("/v3/courses:search", { method: "POST", key: KEY_A, body: "{", headers: { "content-type": "application/json" } });
    expect([notJson.status, notJson.body.code]).toEqual([400, "INVALID_JSON"]);
    const form = await callJson("/v3/courses:search", {
      method: "POST",
      key: KEY_A,
      body: "a=1",
      headers: { "content-type": "application/x-www-form-urlencoded" },
    });
    expect([form.status, form.body.code]).toEqual([415, "UNSUPPORTED_MEDIA_TYPE"]);
    const big = await callJson("/v3/courses:search", { method: "POST", key: KEY_A, json: { name: "x".repeat(1024 * 1024) } });
    expect([big.status, big.body.code]).toEqual([413, "PAYLOAD_TOO_LARGE"]);
  });

  it("query parameters on the search route are rejected", async () => {
    const { status, body } = await callJson("/v3/courses:search?limit=5", { method: "POST", key: KEY_A, json: {} });
    expect([status, body.code]).toEqual([400, "UNKNOWN_PARAMETER"]);
  });

  it("GET on the search path is 405, GET /v3/courses is untouched", async () => {
    const { status, body, res } = await callJson("/v3/courses:search", { key: KEY_A });
    expect([status, body.code]).toEqual([405, "METHOD_NOT_ALLOWED"]);
    expect(res.headers.get("allow")).toBe("POST");
    expect((await callJson("/v3/courses:searchx", { method: "POST", key: KEY_A, json: {} })).status).toBe(404);
  });

  it("401 before 400", async () => {
    const { status } = await callJson("/v3/courses:search", { method: "POST", json: { bogus: 1 }, headers: { authorization: "Bearer sk_unknown" } });
    expect(status).toBe(401);
  });
});
void env;
