/**
 * How the Worker reaches a school's event hub (DESIGN.md: one SchoolHub per school).
 */
import type { Env } from "../env";
import type { SchoolHub } from "./hub";

/**
 * The RPC stub of `schoolId`'s SchoolHub (`idFromName(schoolId)`): the same object for every
 * caller, everywhere. Course writes publish with `await hubFor(env, schoolId).publish(events)`
 * (idempotent by event id; resolves once the events are durably queued).
 */
export function hubFor(env: Env, schoolId: string): DurableObjectStub<SchoolHub> {
  return env.SCHOOL_HUB.get(env.SCHOOL_HUB.idFromName(schoolId));
}
