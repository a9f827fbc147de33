/**
 * The listing's order (docs/reference.md § "POST /v3/courses:search", `sort`) and keyset
 * paging over it (§ "GET /v3/courses", `cursor`): the ORDER BY of a sort, the sort-key values
 * of a row, and "comes after this row" as SQL, for every sort the listing accepts: each key
 * asc or desc, NULL first in asc and last in desc (SQLite's order), then `id` ascending.
 */
import { and, asc, desc, eq, gt, gte, isNotNull, isNull, lt, lte, or, type SQL, sql } from "drizzle-orm";
import { courses } from "../db/shard-schema";
import type { SortKey } from "./filter-schemas";

const SORT_COLUMNS = {
  startDateTime: courses.startMs,
  endDateTime: courses.endMs,
  name: courses.nameFolded,
  classroom: courses.classroomFolded,
  createdAt: courses.createdAt,
  updatedAt: courses.updatedAt,
} as const;

/** A sort-key value as a row holds it: ms (instants), folded text (name, classroom) or `null`. */
export type SortValue = number | string | null;

/** Where a keyset page starts: after the row with these sort-key values (`sortKeys` order) and this id. */
export interface PageKey {
  values: SortValue[];
  id: string;
}

/**
 * The keys a sort orders by: the default (`startDateTime` asc) when empty, a field repeated
 * dropped after its first use (it can no longer change the order), `id` left implicit.
 */
export function sortKeys(sort: SortKey[]): SortKey[] {
  const keys = sort.length > 0 ? sort : [{ field: "startDateTime", order: "asc" } as const];
  return keys.filter((k, i) => keys.findIndex((o) => o.field === k.field) === i);
}

/**
 * ORDER BY of a sort: the keys in order, then `id` ascending. Default `startDateTime` asc.
 * SQLite orders NULL first in ASC and last in DESC, as the contract asks.
 */
export function courseOrder(sort: SortKey[]): SQL[] {
  const keys = sort.length > 0 ? sort : [{ field: "startDateTime", order: "asc" } as const];
  return [...keys.map((k) => (k.order === "asc" ? asc : desc)(SORT_COLUMNS[k.field])), asc(courses.id)];
}

/** The row's sort-key values as a JSON array text, in `sortKeys` order (one json_array of at most 6 arguments). */
export const sortValuesJson = (sort: SortKey[]): SQL<string> =>
  sql<string>`json_array(${sql.join(
    sortKeys(sort).map((k) => SORT_COLUMNS[k.field]),
    sql`, `,
  )})`;

/**
 * Whether `values` can be the sort-key values of a row for `sort`: one per key, an integer
 * for instants, a string for folded text, `null` only where the column allows it.
 */
export function sortValuesFit(sort: SortKey[], values: unknown[]): values is SortValue[] {
  const keys = sortKeys(sort);
  return (
    values.length === keys.length &&
    keys.every((k, i) => {
      const col = SORT_COLUMNS[k.field];
      const v = values[i];
      if (v === null) return !col.notNull;
      return col.dataType === "number" ? Number.isSafeInteger(v) : typeof v === "string";
    })
  );
}

/**
 * "The row comes after `key` in `sort`'s order" (then `id` ascending), nested key by key for
 * mixed directions and NULLs: (k1 after v1) OR (k1 = v1 AND ((k2 after v2) OR (k2 = v2 AND …
 * (id > the key's id)))). "After v" is `> v` in asc (`IS NOT NULL` when v is NULL, NULL coming
 * first) and `< v` in desc (`< v OR IS NULL` on a nullable key, NULL coming last; nothing
 * after a NULL). The first key's bound is repeated alone (`>= v1` / `<= v1`) so that SQLite
 * ranges an index in that order instead of filtering every row. Each value is bound at most
 * twice: at most 14 bound values for 6 keys (docs/architecture.md § "Course reads: one round trip").
 */
export function afterRow(sort: SortKey[], key: PageKey): SQL {
  const keys = sortKeys(sort);
  let cond: SQL = gt(courses.id, key.id);
  for (let i = keys.length - 1; i >= 0; i--) {
    const k = keys[i]!;
    const col = SORT_COLUMNS[k.field];
    const v = key.values[i]!;
    const equal = and(v === null ? isNull(col) : eq(col, v), cond)!;
    if (k.order === "asc") cond = or(v === null ? isNotNull(col) : gt(col, v), equal)!;
    else if (v === null) cond = equal;
    else cond = or(lt(col, v), ...(col.notNull ? [] : [isNull(col)]), equal)!;
  }
  const first = keys[0]!;
  const col = SORT_COLUMNS[first.field];
  const v = key.values[0]!;
  // In desc a nullable key's NULLs come after v: no single bound then.
  const range = v === null ? undefined : first.order === "asc" ? gte(col, v) : col.notNull ? lte(col, v) : undefined;
  return and(range, cond)!;
}
