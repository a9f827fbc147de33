/**
 * The D1 session of a course operation: every operation runs its database work in one
 * session whose bookmark the client may send (`x-d1-bookmark`) and gets back, and checks the
 * API key before it reports a malformed request, so that 401 comes before 400.
 */
import type { IRequest } from "itty-router";
import { z } from "zod";
import { type DbSession, openSession, type SessionKind } from "../db/client";
import { authenticate, schoolOfKey } from "../http/auth";
import type { RequestContext } from "../http/context";
import { ApiError } from "../http/errors";
import { BOOKMARK_HEADER, bookmarkHeaderSchema, readBookmark } from "../http/headers";
import { rejectQuery } from "../http/request";

/** Validates a request, answering 401 before 400: when parsing fails, the key is checked first unless it was already (an extra round trip on the error path only). */
export async function parseAuthenticated<T>(env: Env, rc: RequestContext, keyHash: string, parse: () => T | Promise<T>): Promise<T> {
  try {
    return await parse();
  } catch (err) {
    if (err instanceof ApiError && rc.schoolId === undefined) await schoolOfKey(env.DB, rc, keyHash);
    throw err;
  }
}

/**
 * Runs a course operation's database work in one D1 session (docs/reference.md § "Read consistency at
 * the edge"): `kind` "read" may be served by a replica, "write" starts on the primary; the
 * client's `x-d1-bookmark` (validated here, 401 before 400) makes either at least that
 * fresh. The session's bookmark is set on the response, errors included, once the session
 * has reached the database.
 *
 * @throws ApiError 400 INVALID_PARAMETER naming `x-d1-bookmark`; whatever `work` throws.
 */
export async function inSession(req: IRequest, env: Env, rc: RequestContext, kind: SessionKind, work: (s: DbSession) => Promise<Response>): Promise<Response> {
  let bookmark: string | undefined;
  try {
    bookmark = readBookmark(req);
  } catch (err) {
    await authenticate(req, env.DB, rc);
    throw err;
  }
  const session = openSession(env.DB, kind, bookmark);
  try {
    const res = await work(session);
    const after = session.bookmark();
    if (after) res.headers.set(BOOKMARK_HEADER, after);
    return res;
  } catch (err) {
    const after = session.bookmark();
    throw err instanceof ApiError && after ? err.withHeaders({ [BOOKMARK_HEADER]: after }) : err;
  }
}

/** A course write: a write session, the key's school (checked in it), no query string. */
export function inWriteSession(req: IRequest, env: Env, rc: RequestContext, work: (s: DbSession, schoolId: string) => Promise<Response>): Promise<Response> {
  return inSession(req, env, rc, "write", async (s) => {
    const schoolId = await authenticate(req, s.d1, rc);
    rejectQuery(req);
    return work(s, schoolId);
  });
}

/** The request header every course operation reads. */
export const sessionHeaders = z.object({ [BOOKMARK_HEADER]: bookmarkHeaderSchema });
