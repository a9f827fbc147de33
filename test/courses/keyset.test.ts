/**
 * Keyset paging of the course listing (docs/reference.md § "GET /v3/courses", `cursor`;
 * docs/architecture.md § "Course reads: one round trip"): a walk by `pagination.nextCursor` gives every
 * course once in the listing's order, whatever the sort, and under concurrent PATCHes and
 * creations neither skips nor repeats a course that stayed unchanged; a cursor is refused
 * (400 INVALID_PARAMETER) with `page`, when malformed, or with other filters or another sort.
 */
import fc from "fast-check";
import { beforeAll, describe, expect, it } from "vitest";
import { fixture, KEY_A, KEY_B } from "../support/fixtures";
import { callJson, loadFixture } from "../support/helpers";

beforeAll(async () => {
  await loadFixture(fixture);
});

type Page = { ids: string[]; pagination: { page: number; limit: number; hasMore: boolean; nextCursor: string | null } };

async function getPage(query: string, key = KEY_A): Promise<Page> {
  const { status, body } = await callJson(`/v3/courses?${query}`, { key });
  expect(status, JSON.stringify(body)).toBe(200);
  return { ids: body.result.map((c: { id: string }) => c.id), pagination: body.pagination };
}

async function searchPage(json: Record<string, unknown>, key = KEY_A): Promise<Page> {
  const { status, body } = await callJson("/v3/courses:search", { method: "POST", key, json });
  expect(status, JSON.stringify(body)).toBe(200);
  return { ids: body.result.map((c: { id: string }) => c.id), pagination: body.pagination };
}

/**
 * Walks a listing by cursor from its first page; `between(n)` runs after page `n` (from 1).
 * Returns every id in the order received and the pages' `page` numbers.
 */
async function walk(read: (cursor?: string) => Promise<Page>, between: (n: number) => Promise<void> = async () => {}) {
  const ids: string[] = [];
  const pages: number[] = [];
  let cursor: string | undefined;
  for (let n = 1; n <= 200; n++) {
    const p = await read(cursor);
    ids.push(...p.ids);
    pages.push(p.pagination.page);
    expect(p.pagination.nextCursor === null, JSON.stringify(p.pagination)).toBe(!p.pagination.hasMore);
    if (p.pagination.nextCursor === null) return { ids, pages };
    cursor = p.pagination.nextCursor;
    await between(n);
  }
  throw new Error("the walk did not end in 200 pages");
}

const errorOf = async (path: string, json?: unknown) => {
  const { status, body } = await callJson(path, json === undefined ? { key: KEY_A } : { method: "POST", key: KEY_A, json });
  return { status, code: body.code, details: body.details };
};

describe("GET /v3/courses by cursor", () => {
  it("walks every course once, in the listing's order, numbering the pages; the last page's nextCursor is null", async () => {
    const all = await getPage("limit=100");
    expect(all.ids.length).toBeGreaterThan(5);
    expect(all.pagination).toEqual({ page: 1, limit: 100, hasMore: false, nextCursor: null, changesCursor: expect.stringMatching(/^chg_[0-9]+$/) });
    const { ids, pages } = await walk((cursor) => getPage(`limit=2${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`));
    expect(ids).toEqual(all.ids);
    expect(pages).toEqual(Array.from({ length: Math.ceil(all.ids.length / 2) }, (_, i) => i + 1));
  });

  it("a page asked by number answers the cursor of the page after it, filters kept", async () => {
    const all = await getPage("archived=false&limit=100");
    const third = await getPage("archived=false&limit=1&page=3");
    expect(third.ids).toEqual([all.ids[2]]);
    const next = await getPage(`archived=false&limit=1&cursor=${encodeURIComponent(third.pagination.nextCursor!)}`);
    expect(next.ids).toEqual([all.ids[3]]);
    expect(next.pagination.page).toBe(4);
  });

  it("cursor with page is a 400 INVALID_PARAMETER, on GET and :search", async () => {
    const { pagination } = await getPage("limit=1");
    const cursor = pagination.nextCursor!;
    expect(await errorOf(`/v3/courses?limit=1&page=2&cursor=${encodeURIComponent(cursor)}`)).toEqual({
      status: 400,
      code: "INVALID_PARAMETER",
      details: [{ parameter: "page", message: "not with cursor" }],
    });
    expect(await errorOf("/v3/courses:search", { limit: 1, page: 1, cursor })).toEqual({
      status: 400,
      code: "INVALID_PARAMETER",
      details: [{ path: "page", message: "not with cursor" }],
    });
  });

  it("a malformed cursor is a 400 INVALID_PARAMETER naming it", async () => {
    const { pagination } = await getPage("limit=1");
    const good = pagination.nextCursor!;
    const b64 = (text: string) => btoa(text).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
    for (const bad of [
      "abc",
      "p1.",
      "p1.!!!",
      `${good}x`,
      good.slice(0, -3),
      `p1.${b64("[1,2,3]")}`,
      `p1.${b64('["x",2,"crs_1",[1]')}`,
      `p1.${b64(JSON.stringify(["0", 0, "crs_1", [1]]))}`,
      "chg_12",
      "c1.2s.mh3k2x1c",
    ]) {
      expect(await errorOf(`/v3/courses?cursor=${encodeURIComponent(bad)}`), bad).toEqual({
        status: 400,
        code: "INVALID_PARAMETER",
        details: [{ parameter: "cursor", message: expect.any(String) }],
      });
      expect((await errorOf("/v3/courses:search", { cursor: bad })).code, bad).toBe("INVALID_PARAMETER");
    }
    expect((await errorOf(`/v3/courses?cursor=${"a".repeat(70_000)}`)).code).toBe("INVALID_PARAMETER");
  });

  it("a cursor replayed with other filters or another sort is a 400 INVALID_PARAMETER; limit and includes may change", async () => {
    const { pagination } = await getPage("archived=false&limit=1");
    const cursor = encodeURIComponent(pagination.nextCursor!);
    for (const other of ["", "archived=true&", "archived=false&classroom=B204&", "archived=false&studentId=stu_1&", "archived=false&name=alg&"]) {
      expect(await errorOf(`/v3/courses?${other}cursor=${cursor}`), other).toEqual({
        status: 400,
        code: "INVALID_PARAMETER",
        details: [{ parameter: "cursor", message: "must be sent with the filters and sort it was answered for" }],
      });
    }
    const sorted = await errorOf("/v3/courses:search", { archived: false, cursor: pagination.nextCursor, sort: [{ field: "startDateTime", order: "desc" }] });
    expect(sorted).toEqual({
      status: 400,
      code: "INVALID_PARAMETER",
      details: [{ path: "cursor", message: "must be sent with the filters and sort it was answered for" }],
    });
    // The same filters on :search (the default sort written out), another limit, includes: accepted.
    const same = await searchPage({ archived: false, cursor: pagination.nextCursor, limit: 3, includeTeachers: true, sort: [{ field: "startDateTime" }] });
    const all = await getPage("archived=false&limit=100");
    expect(same.ids).toEqual(all.ids.slice(1, 4));
    expect((await getPage(`archived=false&limit=2&includeStudents=true&cursor=${cursor}`)).ids).toEqual(all.ids.slice(1, 3));
  });
});

describe("a walk by cursor under concurrent writes (school B)", () => {
  const post = async (json: Record<string, unknown>) => {
    const { status, body } = await callJson("/v3/courses", { method: "POST", key: KEY_B, json });
    expect(status, JSON.stringify(body)).toBe(201);
    return body.result.id as string;
  };
  const patch = async (id: string, json: Record<string, unknown>) => {
    const { status, body } = await callJson(`/v3/courses/${id}`, { method: "PATCH", key: KEY_B, json });
    expect(status, JSON.stringify(body)).toBe(200);
  };
  const at = (day: number, hour: number) => new Date(Date.UTC(2027, 0, day, hour)).toISOString();
  const course = (day: number, hour: number, extra: Record<string, unknown> = {}) => ({
    name: `Cours ${day}`,
    startDateTime: at(day, hour),
    endDateTime: at(day, hour + 1),
    ...extra,
  });

  beforeAll(async () => {
    // 24 courses, two per start (ties broken by id), some without classroom, names repeated.
    for (let i = 0; i < 24; i++) await post(course(1 + Math.floor(i / 2), 8, { name: `Cours ${i % 5}`, classroom: i % 3 === 0 ? null : `S${i % 4}` }));
  });

  it("PATCHes moving courses across pages and creations before the cursor neither skip nor repeat an unchanged course", async () => {
    const before = (await getPage("limit=100", KEY_B)).ids;
    const changed = new Set<string>();
    const seen: string[] = [];
    const { ids } = await walk(
      async (cursor) => {
        const p = await getPage(`limit=3${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`, KEY_B);
        seen.push(...p.ids);
        return p;
      },
      async (n) => {
        const unseen = before.filter((id) => !seen.includes(id) && !changed.has(id));
        const done = seen.filter((id) => !changed.has(id));
        // A course not read yet moves to the very start (already walked past) …
        if (unseen.length > 0) {
          changed.add(unseen[unseen.length - 1]!);
          await patch(unseen[unseen.length - 1]!, { startDateTime: at(1, 0), endDateTime: at(1, 1) });
        }
        // … a course read already moves to the end (read again) …
        if (done.length > 0 && n % 2 === 0) {
          changed.add(done[0]!);
          await patch(done[0]!, { startDateTime: at(28, 8), endDateTime: at(28, 9) });
        }
        // … and new courses appear before the cursor: each would shift an offset page by one.
        await post(course(1, 1));
        await post(course(1, 2));
      },
    );
    const unchanged = before.filter((id) => !changed.has(id));
    expect(changed.size).toBeGreaterThan(5);
    expect(unchanged.length).toBeGreaterThan(10);
    for (const id of unchanged)
      expect(
        ids.filter((x) => x === id),
        id,
      ).toHaveLength(1);
    // In the order of the listing read afterwards (their keys did not change).
    const after = (await getPage("limit=100", KEY_B)).ids;
    expect(ids.filter((id) => unchanged.includes(id))).toEqual(after.filter((id) => unchanged.includes(id)));
  });

  const FIELDS = ["startDateTime", "endDateTime", "name", "classroom", "createdAt", "updatedAt"] as const;
  const sortArb = fc.uniqueArray(fc.record({ field: fc.constantFrom(...FIELDS), order: fc.constantFrom("asc", "desc") }), {
    minLength: 0,
    maxLength: 4,
    selector: (k) => k.field,
  });
  /** A write between two pages: a PATCH of the n-th course of the school (moving it in every sort) or a creation. */
  const writeArb = fc.oneof(
    fc.record({
      kind: fc.constant("patch" as const),
      nth: fc.nat(),
      day: fc.integer({ min: 1, max: 14 }),
      name: fc.constantFrom("Cours 0", "Cours 3", "Zèbre", "Ábaque"),
      classroom: fc.constantFrom(null, "S0", "S9"),
    }),
    fc.record({ kind: fc.constant("create" as const), day: fc.integer({ min: 1, max: 14 }), classroom: fc.constantFrom(null, "S1") }),
  );

  it("property: any sort, any limit, any writes between pages — every unchanged course exactly once, in order", async () => {
    let created = 0;
    await fc.assert(
      fc.asyncProperty(sortArb, fc.integer({ min: 2, max: 6 }), fc.array(writeArb, { maxLength: 6 }), async (sort, limit, writes) => {
        const full = async () => (await searchPage({ sort, limit: 100 }, KEY_B)).ids;
        const before = await full();
        const changed = new Set<string>();
        const { ids } = await walk(
          (cursor) => searchPage(cursor ? { sort, limit, cursor } : { sort, limit }, KEY_B),
          async (n) => {
            const w = writes[n - 1];
            if (!w) return;
            if (w.kind === "patch") {
              const id = before[w.nth % before.length]!;
              changed.add(id);
              await patch(id, { startDateTime: at(w.day, 7), endDateTime: at(w.day, 9), name: w.name, classroom: w.classroom });
            } else if (created < 20) {
              created++;
              await post(course(w.day, 8, { classroom: w.classroom }));
            }
          },
        );
        const unchanged = before.filter((id) => !changed.has(id));
        for (const id of unchanged)
          expect(
            ids.filter((x) => x === id),
            `${id} in ${JSON.stringify(sort)}`,
          ).toHaveLength(1);
        const after = await full();
        expect(ids.filter((id) => unchanged.includes(id))).toEqual(after.filter((id) => unchanged.includes(id)));
      }),
      { numRuns: 15 },
    );
  }, 120_000);

  it("property: without writes, a walk by cursor is the one-page listing itself, for any sort and limit", async () => {
    await fc.assert(
      fc.asyncProperty(sortArb, fc.integer({ min: 3, max: 9 }), async (sort, limit) => {
        const { ids } = await walk((cursor) => searchPage(cursor ? { sort, limit, cursor } : { sort, limit }, KEY_B));
        expect(ids).toEqual((await searchPage({ sort, limit: 100 }, KEY_B)).ids);
      }),
      { numRuns: 20 },
    );
  }, 120_000);
});
