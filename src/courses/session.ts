/**
 * Where a course operation meets its school's shard (docs/reference.md § Database shards):
 * the directory names the school and its shard, and every operation runs its database work
 * in one D1 session of that shard, whose bookmark the client may send (`x-d1-bookmark`) and
 * gets back. A read sends its query together with the directory's check when the isolate
 * knows the credential's shard; the key is checked before a malformed request is reported,
 * so that 401 comes before 400.
 */
import type { IRequest } from "itty-router";
import { z } from "zod";
import { type DbSession, openSession } from "../db/client";
import { forgetPlace, type KnownPlace, knownPlace, rememberPlace, shardFor } from "../db/shards";
import { authenticate, authenticatePlace, bearerCredential, coversNeeded, needScopes, schoolOfKey } from "../http/auth";
import type { RequestContext } from "../http/context";
import { ApiError } from "../http/errors";
import { BOOKMARK_HEADER, bookmarkHeaderSchema, readBookmark } from "../http/headers";
import { rejectQuery } from "../http/request";
import { sha256Hex } from "../lib/crypto";
import type { Includes } from "./filters";
import type { ShardRead } from "./read";

/** Seconds a client waits before retrying a write refused by a move (`Retry-After`). */
const MOVING_RETRY_AFTER_S = 5;

/** 503 SCHOOL_MOVING with `Retry-After` (docs/reference.md § Error codes). */
const schoolMoving = () => new ApiError("SCHOOL_MOVING", undefined, undefined, { "retry-after": String(MOVING_RETRY_AFTER_S) });

/** Whether a failed write batch was refused by a move's fence (migrations/shard/0002_move_fence.sql). */
const isFenced = (err: unknown) => err instanceof Error && /SCHOOL_MOVING/.test(err.message);

/**
 * Runs a course operation; when it ends 401 (the directory refused the credential: revoked,
 * unknown), the isolate forgets the credential's place at once, so that its next request
 * sends no shard query beside the check (docs/architecture.md § Shards). Only the
 * request in flight when a key is revoked can still have sent one.
 */
export async function forgettingRefused(req: Request, work: () => Promise<Response>): Promise<Response> {
  try {
    return await work();
  } catch (err) {
    const credential = err instanceof ApiError && err.status === 401 ? bearerCredential(req) : undefined;
    if (credential !== undefined) forgetPlace(await sha256Hex(credential));
    throw err;
  }
}

/** Validates a request, answering 401 before 400: when parsing fails, the key is checked first unless it was already (an extra round trip on the error path only). */
export async function parseAuthenticated<T>(env: Env, rc: RequestContext, keyHash: string, parse: () => T | Promise<T>): Promise<T> {
  try {
    return await parse();
  } catch (err) {
    if (err instanceof ApiError && rc.schoolId === undefined) await schoolOfKey(env.DIRECTORY, rc, keyHash);
    throw err;
  }
}

/**
 * Adds `students:read` to the scopes a course read needs when it reads student data
 * (docs/reference.md § Scopes): their names and emails (`includeStudents`), or which courses
 * given students attend (a `studentId` filter). Call it once the request is parsed, before
 * `readOnShard`.
 *
 * @throws ApiError 403 FORBIDDEN when the credential is verified already and lacks it.
 */
export function needStudentScope(rc: RequestContext, q: { include: Includes; studentId?: string[] }): void {
  if (q.include.students || (q.studentId?.length ?? 0) > 0) needScopes(rc, "students:read");
}

/** The client's bookmark, once the credential is checked when the header is malformed (401 before 400). */
async function bookmarkOf(req: IRequest, env: Env, rc: RequestContext): Promise<string | undefined> {
  try {
    return readBookmark(req);
  } catch (err) {
    await authenticate(req, env.DIRECTORY, rc);
    throw err;
  }
}

/** Sets the session's bookmark on a response or on the ApiError it became, once the session reached the database. */
async function withBookmark(session: () => DbSession | undefined, work: () => Promise<Response>): Promise<Response> {
  try {
    const res = await work();
    const after = session()?.bookmark();
    if (after) res.headers.set(BOOKMARK_HEADER, after);
    return res;
  } catch (err) {
    const after = session()?.bookmark();
    throw err instanceof ApiError && after ? err.withHeaders({ [BOOKMARK_HEADER]: after }) : err;
  }
}

/** Tries of a read on the shard the directory names before giving up (a move switching meanwhile). */
const READ_TRIES = 3;

/**
 * Reads the key's school on its shard (a page of its courses, of its changes) (docs/reference.md § Database shards). When the
 * isolate knows the key's shard, the directory's check and the shard's query go out
 * together (one round trip of latency); the shard's answer is used only when the check
 * passes, names that school and shard, and the shard holds the school. Otherwise the read
 * is repeated on the shard the directory names — on a replica, then on its primary, then
 * after reading the directory again — so no read answers from a shard that does not hold
 * the school. The answering session's bookmark is set on the response (errors included).
 *
 * @param read the read of a school in a session (`readCoursePage`, `readCourseChanges`: one
 *   batch, `held` read in it).
 * @param answer the response of the value read; its ApiError carries the bookmark too.
 * @throws ApiError 401 UNAUTHORIZED, 400 for a malformed `x-d1-bookmark`; Error when no
 *   shard holds the school after three tries.
 */
export async function readOnShard<T>(
  req: IRequest,
  env: Env,
  rc: RequestContext,
  keyHash: string,
  read: (session: DbSession, schoolId: string) => Promise<ShardRead<T>>,
  answer: (value: T) => Response | Promise<Response>,
): Promise<Response> {
  const bookmark = await bookmarkOf(req, env, rc);
  let session: DbSession | undefined;
  const attempt = async (place: { schoolId: string; shard: string }, primary: boolean) => {
    const s = openSession(shardFor(env, place.shard), primary ? "write" : "read", bookmark);
    return { s, ...(await rc.db(() => read(s, place.schoolId))) };
  };
  return withBookmark(
    () => session,
    async () => {
      // A remembered place whose scopes lack one the request needs sends nothing early: the
      // check answers 403 before any shard is touched.
      const cached = rc.schoolId === undefined ? knownPlace(keyHash) : undefined;
      const known = cached && coversNeeded(rc, cached.scopes) ? cached : undefined;
      const early = known && attempt(known, false);
      early?.catch(() => {}); // awaited below only when the directory's check passes
      let place: KnownPlace =
        rc.schoolId !== undefined && rc.shard !== undefined
          ? { schoolId: rc.schoolId, shard: rc.shard, scopes: rc.scopes ?? [] }
          : await schoolOfKey(env.DIRECTORY, rc, keyHash);
      rememberPlace(keyHash, place);
      let found = early && known.shard === place.shard && known.schoolId === place.schoolId ? await early : undefined;
      for (let i = 0; !found?.held && i < READ_TRIES; i++) {
        if (i === 2) place = await schoolOfKey(env.DIRECTORY, rc, keyHash);
        found = await attempt(place, i > 0 || found !== undefined);
      }
      session = found!.s;
      if (!found!.held) throw new Error(`shard ${place.shard} does not hold school ${place.schoolId}`);
      return answer(found!.value);
    },
  );
}

/**
 * A course write: the directory's check (school, shard, state), then a write session on the
 * school's shard; no query string. While the school moves, 503 SCHOOL_MOVING with
 * `Retry-After` — also when the move's fence refuses the write's batch on the shard.
 *
 * @param work gets the session, the school and its shard's binding (primary reads).
 */
export async function inWriteSession(
  req: IRequest,
  env: Env,
  rc: RequestContext,
  work: (s: DbSession, schoolId: string, shard: D1Database) => Promise<Response>,
): Promise<Response> {
  const bookmark = await bookmarkOf(req, env, rc);
  const place = await authenticatePlace(req, env.DIRECTORY, rc);
  rejectQuery(req);
  if (place.moving) throw schoolMoving();
  const shard = shardFor(env, place.shard);
  const session = openSession(shard, "write", bookmark);
  return withBookmark(
    () => session,
    async () => {
      try {
        return await work(session, place.schoolId, shard);
      } catch (err) {
        throw isFenced(err) ? schoolMoving() : err;
      }
    },
  );
}

/** The request header every course operation reads. */
export const sessionHeaders = z.object({ [BOOKMARK_HEADER]: bookmarkHeaderSchema });
