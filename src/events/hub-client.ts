/**
 * How the Worker reaches a school's event hub (docs/architecture.md: one SchoolHub per school): the
 * outbox publishes to it, the webhook operations call it over RPC.
 */

/**
 * The RPC stub of `schoolId`'s SchoolHub (`idFromName(schoolId)`): the same object for every
 * caller, everywhere. Course writes publish with `await hubFor(env, schoolId).publish(events)`
 * (idempotent by event id; resolves once the events are durably queued). Its type comes from
 * the binding's (`Env`), so this layer needs no import of the hub's module.
 */
export function hubFor(env: Env, schoolId: string) {
  return env.SCHOOL_HUB.get(env.SCHOOL_HUB.idFromName(schoolId));
}
