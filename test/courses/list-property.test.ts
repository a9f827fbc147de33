/**
 * Property tests (fast-check): random valid queries never answer 5xx and match the in-test
 * reference filter; random garbage values answer 400 in the envelope.
 */
import { env } from "cloudflare:test";
import fc from "fast-check";
import { beforeAll, describe, expect, it } from "vitest";
import { coursesA, fixture, KEY_A } from "../support/fixtures";
import { call, loadFixture } from "../support/helpers";
import { type RefQuery, referenceList } from "../support/reference";

beforeAll(async () => {
  await loadFixture(fixture);
});

const instants = [
  "2026-09-01T00:00:00Z",
  "2026-09-07T08:00:00Z",
  "2026-09-07T10:00:00+02:00",
  "2026-09-08T09:30:00Z",
  "2026-09-10T08:00:00.000Z",
  "2026-09-11T19:00:00+01:00",
  "2026-09-11T20:00:00+01:00",
  "2026-09-14T03:00:00-05:00",
  "2026-12-31T23:59:59Z",
];
const ids = (pool: string[]) => fc.uniqueArray(fc.constantFrom(...pool), { minLength: 1, maxLength: 3 });

/** A random valid query: each filter present or not, values drawn near the fixture's. */
const queryArb = fc.record(
  {
    courseStartDateTime: fc.constantFrom(...instants),
    courseEndDateTime: fc.constantFrom(...instants),
    absencesSent: fc.boolean(),
    absencesNotSent: fc.boolean(),
    groupId: ids(["grp_1", "grp_2", "grp_3", "grp_9"]),
    studentId: ids(["stu_1", "stu_2", "stu_3", "stu_4", "stu_5"]),
    professorId: ids(["prf_1", "prf_2", "prf_3", "prf_4"]),
    trainingId: ids(["trn_1", "trn_2", "trn_3"]),
    archived: fc.boolean(),
    classroom: fc.constantFrom("B204", "A101", "C300", "b204"),
    creatorId: fc.constantFrom("usr_1", "usr_2", "usr_3", "usr_9"),
    name: fc.constantFrom("e", "É", "economie", "ALG", "%", "_", "o", "phi", "x"),
    professorSignatureMissing: fc.boolean(),
    page: fc.integer({ min: 1, max: 4 }),
    limit: fc.integer({ min: 1, max: 5 }),
  },
  { requiredKeys: [] },
);

function toQueryString(q: Record<string, unknown>): string {
  const p = new URLSearchParams();
  for (const [k, v] of Object.entries(q)) p.set(k, Array.isArray(v) ? v.join(",") : String(v));
  return p.toString();
}

describe("properties of GET /v3/courses", () => {
  it("random valid queries match the reference and never answer 5xx", async () => {
    await fc.assert(
      fc.asyncProperty(queryArb, async (q) => {
        const res = await call(`/v3/courses?${toQueryString(q)}`, { key: KEY_A });
        const body = (await res.json()) as any;
        expect(res.status, JSON.stringify(body)).toBe(200);
        const ref: RefQuery = {
          ...q,
          courseStartDateTime: q.courseStartDateTime ? Date.parse(q.courseStartDateTime) : undefined,
          courseEndDateTime: q.courseEndDateTime ? Date.parse(q.courseEndDateTime) : undefined,
        };
        const expected = referenceList(ref);
        expect(body.result.map((c: any) => c.id)).toEqual(expected.ids);
        expect(body.pagination).toEqual({
          page: q.page ?? 1,
          limit: q.limit ?? 100,
          hasMore: expected.hasMore,
          nextCursor: expected.hasMore ? expect.any(String) : null,
          changesCursor: expect.stringMatching(/^chg_[0-9]+$/),
        });
      }),
      { numRuns: 150 },
    );
  });

  // At most one filter, so that most walks span several pages of the fixture's 8 courses.
  const walkQueryArb = fc.oneof(
    fc.constant({}),
    fc.record({ archived: fc.boolean() }),
    fc.record({ courseStartDateTime: fc.constantFrom(...instants) }),
    fc.record({ absencesNotSent: fc.constant(true) }),
    fc.record({ trainingId: ids(["trn_1", "trn_2", "trn_3"]) }),
    fc.record({ name: fc.constantFrom("e", "o", "phi") }),
  ) as fc.Arbitrary<{ archived?: boolean; courseStartDateTime?: string; absencesNotSent?: boolean; trainingId?: string[]; name?: string }>;

  it("random valid queries walked by cursor give the reference's whole listing, once each, in order", async () => {
    await fc.assert(
      fc.asyncProperty(walkQueryArb, fc.integer({ min: 1, max: 3 }), async (q, limit) => {
        const ids: string[] = [];
        let cursor: string | undefined;
        for (let n = 1; n <= 20; n++) {
          const res = await call(`/v3/courses?${toQueryString({ ...q, limit, ...(cursor ? { cursor } : {}) })}`, { key: KEY_A });
          const body = (await res.json()) as any;
          expect(res.status, JSON.stringify(body)).toBe(200);
          expect(body.pagination.page).toBe(n);
          ids.push(...body.result.map((c: any) => c.id));
          cursor = body.pagination.nextCursor ?? undefined;
          if (!cursor) break;
        }
        const all = referenceList({
          ...q,
          courseStartDateTime: q.courseStartDateTime ? Date.parse(q.courseStartDateTime) : undefined,
          limit: 100,
        });
        expect(ids).toEqual(all.ids);
      }),
      { numRuns: 100 },
    );
  });

  // The name filter takes the trigram index from 3 code points on and a plain instr() below
  // (src/courses/query.ts): both must give the reference's exact substring semantics, with
  // FTS5 syntax (quotes, *, ^, NEAR, -) and LIKE wildcards taken literally.
  const nameArb = fc.oneof(
    fc
      .tuple(fc.constantFrom(...coursesA.map((c) => c.name)), fc.nat(), fc.nat({ max: 12 }), fc.constantFrom("same", "upper", "lower"))
      .map(([name, from, len, kase]) => {
        const part = [...name].slice(from % name.length, (from % name.length) + len + 1).join("");
        return kase === "upper" ? part.toUpperCase() : kase === "lower" ? part.toLowerCase() : part;
      }),
    fc.string({ unit: fc.constantFrom(...'aeiouéÉçnrlst %_"*^-:()'.split(""), "NEAR", "OR", "AND"), minLength: 1, maxLength: 8 }),
  );

  it("random name substrings (1–13 code points) match the reference on both sides of the trigram threshold", async () => {
    await fc.assert(
      fc.asyncProperty(nameArb, async (name) => {
        if (name.trim() === "" || name.length > 200) return;
        const res = await call(`/v3/courses?${new URLSearchParams({ name, limit: "100" })}`, { key: KEY_A });
        const body = (await res.json()) as any;
        expect(res.status, `${JSON.stringify(name)} → ${JSON.stringify(body)}`).toBe(200);
        expect(
          body.result.map((c: any) => c.id),
          JSON.stringify(name),
        ).toEqual(referenceList({ name, limit: 100 }).ids);
      }),
      { numRuns: 200 },
    );
  });

  const booleanParams = [
    "absencesSent",
    "absencesNotSent",
    "archived",
    "professorSignatureMissing",
    "includeStudents",
    "includeTeachers",
    "includeSurveyTemplates",
    "includeTraining",
  ];
  const instantParams = ["courseStartDateTime", "courseEndDateTime", "createdAt", "updatedAt"];
  // Independent of the implementation: a zone is required, so a value without Z/±hh:mm at the end is garbage.
  const noZone = (s: string) => !/(Z|[+-]\d\d:\d\d|\s\d\d:\d\d)$/.test(s);

  const garbageArb = fc.oneof(
    fc.tuple(
      fc.constantFrom(...booleanParams),
      fc.string({ maxLength: 8 }).filter((s) => !["true", "false", "1", "0"].includes(s)),
    ),
    fc.tuple(
      fc.constantFrom("page", "limit"),
      fc.oneof(
        fc.string({ maxLength: 6 }).filter((s) => !/^\d+$/.test(s)),
        fc.constantFrom("0", "-1", "1e2", "2.0", " 1"),
      ),
    ),
    fc.tuple(fc.constantFrom("limit"), fc.integer({ min: 101, max: 1e9 }).map(String)),
    fc.tuple(fc.constantFrom(...instantParams), fc.string({ maxLength: 30 }).filter(noZone)),
    fc.tuple(
      fc.constantFrom(...instantParams),
      fc.date({ noInvalidDate: true, min: new Date("1000-01-01"), max: new Date("9999-01-01") }).map((d) => d.toISOString().slice(0, 19)),
    ),
  );

  it("random garbage values answer 400 INVALID_PARAMETER in the envelope", async () => {
    await fc.assert(
      fc.asyncProperty(garbageArb, async ([param, value]) => {
        const res = await call(`/v3/courses?${new URLSearchParams({ [param]: value })}`, { key: KEY_A });
        const body = (await res.json()) as any;
        expect(res.status, `${param}=${JSON.stringify(value)} → ${JSON.stringify(body)}`).toBe(400);
        expect(body).toMatchObject({ status: "error", code: "INVALID_PARAMETER", requestId: expect.any(String) });
        expect(body.details).toEqual([{ parameter: param, message: expect.any(String) }]);
      }),
      { numRuns: 200 },
    );
  });

  it("random parameter names outside the contract answer 400 UNKNOWN_PARAMETER", async () => {
    const accepted = new Set([
      "courseStartDateTime",
      "courseEndDateTime",
      "absencesSent",
      "absencesNotSent",
      "groupId",
      "studentId",
      "professorId",
      "trainingId",
      "archived",
      "classroom",
      "creatorId",
      "name",
      "createdAt",
      "updatedAt",
      "professorSignatureMissing",
      "page",
      "cursor",
      "limit",
      ...booleanParams,
    ]);
    await fc.assert(
      fc.asyncProperty(
        fc.string({ minLength: 1, maxLength: 12 }).filter((s) => !accepted.has(s)),
        fc.string({ maxLength: 5 }),
        async (name, value) => {
          const res = await call(`/v3/courses?${new URLSearchParams({ [name]: value })}`, { key: KEY_A });
          const body = (await res.json()) as any;
          expect(res.status).toBe(400);
          expect(body.code).toBe("UNKNOWN_PARAMETER");
        },
      ),
      { numRuns: 100 },
    );
  });
});
void env;
