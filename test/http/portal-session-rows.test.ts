/**
 * Portal session rows stay bounded (docs/reference.md § Portal sessions): only a link's token
 * is redeemed, once (a session token, read-only or not, is not: 403 and no row); a revoked row
 * is pruned a day after its revocation; a school stores at most 1,000 rows, a live link
 * counting twice (its row and its redeem's), beyond which minting is 409.
 */
import { env } from "cloudflare:test";
import { beforeAll, describe, expect, it } from "vitest";
import { prunePortalSessions } from "../../src/portal/sessions";
import { callJson } from "../support/helpers";
import { mintPortalSession, newSchool, openPortalSession } from "../support/webhooks/harness";

let school: { schoolId: string; key: string };

beforeAll(async () => {
  school = await newSchool("rows");
});

const redeem = (token: string) => callJson("/v3/portal-sessions/redeem", { method: "POST", key: token });
const rowsOf = async (schoolId: string) =>
  (await env.DIRECTORY.prepare("SELECT count(*) AS n FROM portal_sessions WHERE school_id = ?").bind(schoolId).first<{ n: number }>())!.n;

describe("only a link is redeemed, once", () => {
  it("a redeemed session's token, read-only or not, is 403 FORBIDDEN at the redeem and adds no row; it keeps working", async () => {
    for (const readOnly of [false, true]) {
      const session = await openPortalSession(school.key, { readOnly });
      const before = await rowsOf(school.schoolId);
      for (let i = 0; i < 3; i++) {
        const again = await redeem(session.token);
        expect([again.status, again.body.code]).toEqual([403, "FORBIDDEN"]);
        expect(again.body.message).toContain("only a portal link's token");
      }
      expect(await rowsOf(school.schoolId)).toBe(before);
      expect((await callJson("/v3/webhooks", { key: session.token })).status).toBe(200);
    }
  });

  it("a link's second redeem is 401 and adds no row", async () => {
    const link = await mintPortalSession(school.key);
    expect((await redeem(link.token)).status).toBe(201);
    const before = await rowsOf(school.schoolId);
    expect((await redeem(link.token)).status).toBe(401);
    expect(await rowsOf(school.schoolId)).toBe(before);
  });
});

describe("pruning revoked rows (the cron)", () => {
  it("deletes a row revoked more than a day ago though it has not expired; keeps one revoked within the day", async () => {
    const now = Date.now();
    const rows = [
      ["revoked_old", now - 25 * 3600_000],
      ["revoked_recent", now - 3600_000],
      ["live", null],
    ] as const;
    for (const [hash, revokedAt] of rows) {
      await env.DIRECTORY.prepare(
        "INSERT INTO portal_sessions (token_hash, school_id, created_at, expires_at, revoked_at) VALUES (?, 'sch_prune_revoked', ?, ?, ?)",
      )
        .bind(hash, now - 30 * 3600_000, now + 6 * 24 * 3600_000, revokedAt)
        .run();
    }
    expect(await prunePortalSessions(env.DIRECTORY, now)).toBe(1);
    const { results } = await env.DIRECTORY.prepare("SELECT token_hash FROM portal_sessions WHERE school_id = 'sch_prune_revoked' ORDER BY token_hash").all();
    expect(results).toEqual([{ token_hash: "live" }, { token_hash: "revoked_recent" }]);
  });

  it("each of its deletes reads an index, not the table", async () => {
    for (const column of ["expires_at", "revoked_at"]) {
      const { results } = await env.DIRECTORY.prepare(`EXPLAIN QUERY PLAN DELETE FROM portal_sessions WHERE ${column} <= ?`).bind(0).all<{ detail: string }>();
      expect(results.map((r) => r.detail).join("; ")).toMatch(/SEARCH portal_sessions USING (COVERING )?INDEX/);
    }
  });
});

describe("at most 1,000 stored rows per school", () => {
  it("with 998 rows stored (revoked within the day), one link mints; the next is 409 PORTAL_SESSION_LIMIT_REACHED; the link still redeems", async () => {
    const own = await newSchool("rows_cap");
    const now = Date.now();
    // 998 rows revoked an hour ago, as DELETE /v3/portal-sessions leaves them (one statement).
    await env.DIRECTORY.prepare(
      `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 998)
       INSERT INTO portal_sessions (token_hash, school_id, created_at, expires_at, revoked_at) SELECT 'cap_' || i, ?, ?, ?, ? FROM n`,
    )
      .bind(own.schoolId, now - 7200_000, now + 3600_000, now - 3600_000)
      .run();
    const link = await mintPortalSession(own.key);
    const over = await callJson("/v3/portal-sessions", { method: "POST", key: own.key, json: {} });
    expect([over.status, over.body.code]).toEqual([409, "PORTAL_SESSION_LIMIT_REACHED"]);
    expect(await rowsOf(own.schoolId)).toBe(999);
    // The link's redeem had its room kept: the school stores 1,000 rows.
    expect((await redeem(link.token)).status).toBe(201);
    expect(await rowsOf(own.schoolId)).toBe(1000);
    // Another school is not limited by this one.
    expect((await callJson("/v3/portal-sessions", { method: "POST", key: school.key, json: {} })).status).toBe(201);
    // A day after their revocation the cron removes them, and minting works again.
    await prunePortalSessions(env.DIRECTORY, now + 24 * 3600_000);
    expect((await callJson("/v3/portal-sessions", { method: "POST", key: own.key, json: {} })).status).toBe(201);
  });
});
