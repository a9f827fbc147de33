/**
 * Change cursors (docs/reference.md § "GET /v3/courses/changes"): a position in a school's
 * change sequence, as clients see it. Opaque to clients; here `chg_` + the decimal number of
 * the school's last change at that position (`school_changes.seq`, `courses.change_seq` of
 * src/db/shard-schema.ts). The number belongs to the school, not to a shard, so a cursor
 * survives a move between shards. `chg_0` is before the school's first change.
 */
import { z } from "zod";

const CURSOR_RE = /^chg_(0|[1-9][0-9]{0,14})$/;

/** The cursor of change number `seq` (a non-negative integer). */
export function encodeChangeCursor(seq: number): string {
  if (!Number.isSafeInteger(seq) || seq < 0) throw new RangeError(`not a change number: ${seq}`);
  return `chg_${seq}`;
}

/**
 * The change number a cursor names, or `undefined` when the text is not a cursor this API
 * minted (callers answer 400 INVALID_PARAMETER; docs/reference.md § "Error codes").
 */
export function decodeChangeCursor(cursor: string): number | undefined {
  const m = CURSOR_RE.exec(cursor);
  return m ? Number(m[1]) : undefined;
}

/**
 * SQL text of the cursor of an integer SQL expression `seqSql` (for JSON built in SQL, e.g.
 * an outbox row's `changeCursor` set in the batch that takes the number). Same text as
 * `encodeChangeCursor`.
 */
export const changeCursorSql = (seqSql: string) => `('chg_' || (${seqSql}))`;

/** A change cursor as the API writes it (events' `changeCursor`, the change query's and the listing's cursors). */
export const changeCursorSchema = z.string().regex(CURSOR_RE, { error: "must be a change cursor this API returned (chg_…)" }).meta({
  description: "A position in the school's change sequence (opaque): pass it as `after` to GET /v3/courses/changes to read the changes that follow it.",
  example: "chg_1042",
});
