/**
 * Course writes (docs/reference.md § "POST /v3/courses — create a course · PATCH /v3/courses/{id} — change one"): a validated body
 * (src/courses/write-schemas.ts) becomes a change and its events (src/courses/change.ts),
 * written with the outbox rows and the count of their bytes against the school's daily
 * quota in one D1 batch (src/courses/storage.ts, src/db/event-quota.ts).
 *
 * A PATCH that lost the compare-and-set race on `revision` wrote nothing; it is recomputed on
 * fresh state, so no field of a concurrent PATCH is lost and each event describes exactly its
 * own change.
 */
import type { SQL } from "drizzle-orm";
import { getDb } from "../db/client";
import { isQuotaRefusal, secondsToNextUtcDay } from "../db/event-quota";
import { type D1Timer, untimed } from "../http/context";
import { ApiError } from "../http/errors";
import { type IfMatch, ifMatchAdmits } from "../http/headers";
import { encodeChangeCursor } from "../lib/change-cursor";
import { mintId } from "../lib/ids";
import { applyPatch, type CourseState, deriveEvents, stateToRecord } from "./change";
import { type CourseEvent, type CourseRecord, courseNotFound } from "./schemas";
import { checkReferences, loadCourseState, type QuotaCharge, runBatch, writeStatements } from "./storage";
import type { CourseInput, CoursePatch } from "./write-schemas";

/** The outcome of a committed write: the course after it and the events queued in the outbox. */
export interface WriteResult {
  course: CourseRecord;
  events: CourseEvent[];
}

/** Retries of a PATCH that lost a compare-and-set race before giving up. */
const MAX_ATTEMPTS = 8;

/** A new compare-and-set token. */
const newRevision = (now: number) => mintId("evt", now).replace(/^evt_/, "rev_");

/**
 * 429 EVENT_QUOTA_EXCEEDED with `Retry-After`: the seconds from the write's instant `at` (ms
 * since the epoch) to the next UTC day, when the school's count starts again
 * (docs/reference.md § "Event quota").
 */
function quotaExceeded(bytesPerDay: number, at: number): ApiError {
  const seconds = secondsToNextUtcDay(at);
  return new ApiError(
    "EVENT_QUOTA_EXCEEDED",
    `This write would take the school past its quota of ${bytesPerDay.toLocaleString("en-US")} bytes of events and stored data per UTC day; nothing was written. Course writes resume at 00:00 UTC, in ${seconds} s (Retry-After); reads keep working.`,
    undefined,
    { "retry-after": String(seconds) },
  );
}

/**
 * Runs a write's batch (`runBatch`) counted against the school's daily quota of write bytes
 * at the Worker's clock now (`writeStatements`' `QuotaCharge`).
 *
 * @returns the course's change number when the write won its compare-and-set, `undefined`
 *   when it lost (`runBatch`).
 * @throws ApiError 429 EVENT_QUOTA_EXCEEDED when the quota refused the batch (nothing written).
 */
async function runCounted(
  d1: D1Database,
  timed: D1Timer,
  bytesPerDay: number,
  statements: (quota: QuotaCharge) => SQL[],
  revision?: string,
): Promise<number | undefined> {
  const quota = { bytesPerDay, at: Date.now() };
  try {
    return await timed(() => runBatch(d1, statements(quota), revision));
  } catch (err) {
    throw isQuotaRefusal(err) ? quotaExceeded(bytesPerDay, quota.at) : err;
  }
}

/**
 * The events of a committed write with the `changeCursor` its batch set in their outbox rows
 * (change number `seq`), in the same place: the write's own publish delivers the bytes the
 * sweep would.
 */
const stamped = (events: CourseEvent[], seq: number): CourseEvent[] => events.map((e) => ({ ...e, changeCursor: encodeChangeCursor(seq) }));

const invalidRange = () =>
  new ApiError("INVALID_DATE_RANGE", "endDateTime must be after startDateTime.", [{ path: "endDateTime", message: "must be after startDateTime" }]);

/**
 * Creates a course in one D1 batch (row, relations, outbox, the count of its event and stored bytes).
 *
 * @param input a parsed POST body.
 * @param eventBytesPerDay the school's daily quota of write bytes (`EVENT_BYTES_PER_DAY`).
 * @param now ms since the epoch: the course's `createdAt`/`updatedAt`.
 * @param alongside statements to commit in the same batch, first, given the new course (the
 *   idempotency key row of src/db/idempotency.ts); if one fails, nothing is written.
 * @throws ApiError 400 INVALID_DATE_RANGE, *_NOT_FOUND; 429 EVENT_QUOTA_EXCEEDED; the
 *   batch's error when a statement fails.
 */
export async function createCourse(
  d1: D1Database,
  schoolId: string,
  input: CourseInput,
  eventBytesPerDay: number,
  timed: D1Timer = untimed,
  now = Date.now(),
  alongside: (course: CourseRecord) => SQL[] = () => [],
): Promise<WriteResult> {
  if (!(input.endDateTime > input.startDateTime)) throw invalidRange();
  await checkReferences(d1, schoolId, input, timed);
  const after: CourseState = {
    id: mintId("crs", now),
    name: input.name,
    startDateTime: input.startDateTime,
    endDateTime: input.endDateTime,
    classroom: input.classroom ?? null,
    creatorId: input.creatorId ?? null,
    trainingId: input.trainingId ?? null,
    groupIds: input.groupIds ?? [],
    studentIds: input.studentIds ?? [],
    professors: input.professors ?? [],
    surveyTemplateIds: input.surveyTemplateIds ?? [],
    archived: false,
    absencesSent: false,
    createdAt: now,
    updatedAt: now,
    revision: newRevision(now),
    version: 1,
  };
  const events = deriveEvents(schoolId, undefined, after, now);
  const course = stateToRecord(after);
  const seq = await runCounted(d1, timed, eventBytesPerDay, (quota) => [...alongside(course), ...writeStatements(schoolId, undefined, after, events, quota)]);
  return { course, events: stamped(events, seq!) };
}

/**
 * Applies a PATCH: only the fields sent change; a list sent replaces the whole list; a
 * PATCH that changes nothing writes nothing and returns no event (updatedAt unchanged).
 *
 * @param ifMatch the request's `If-Match` (docs/reference.md § "POST /v3/courses — create a course · PATCH /v3/courses/{id} — change one"): checked
 *   against the version of the state each attempt reads, so a write that lost a race to
 *   another version answers 412 rather than overwrite it.
 * @param eventBytesPerDay the school's daily quota of write bytes (`EVENT_BYTES_PER_DAY`).
 * @throws ApiError 404 COURSE_NOT_FOUND, 412 PRECONDITION_FAILED, 400 INVALID_DATE_RANGE
 *   (also when only one end moves), *_NOT_FOUND; 429 EVENT_QUOTA_EXCEEDED; 500
 *   INTERNAL_ERROR after MAX_ATTEMPTS lost races.
 */
export async function patchCourse(
  d1: D1Database,
  schoolId: string,
  courseId: string,
  patch: CoursePatch,
  eventBytesPerDay: number,
  timed: D1Timer = untimed,
  ifMatch?: IfMatch,
): Promise<WriteResult> {
  const db = getDb(d1);
  let referencesChecked = false;
  for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
    const before = await timed(() => loadCourseState(db, schoolId, courseId));
    if (!before) throw courseNotFound(courseId);
    if (!ifMatchAdmits(ifMatch, String(before.version))) {
      throw new ApiError(
        "PRECONDITION_FAILED",
        `If-Match does not name the course's current version "${before.version}"; read it again (GET /v3/courses/${courseId}) and reapply your change.`,
      );
    }
    const now = Math.max(Date.now(), before.updatedAt + 1);
    const { after, changed } = applyPatch(before, patch);
    if (!(after.endDateTime > after.startDateTime)) throw invalidRange();
    if (!changed) return { course: stateToRecord(before), events: [] };
    if (!referencesChecked) {
      await checkReferences(d1, schoolId, patch, timed);
      referencesChecked = true;
    }
    after.updatedAt = now;
    after.revision = newRevision(now);
    after.version = before.version + 1;
    const events = deriveEvents(schoolId, before, after, now);
    const seq = await runCounted(d1, timed, eventBytesPerDay, (quota) => writeStatements(schoolId, before, after, events, quota), after.revision!);
    if (seq !== undefined) return { course: stateToRecord(after), events: stamped(events, seq) };
  }
  throw new ApiError("INTERNAL_ERROR", "The course kept changing under this write; retry it.");
}
