/**
 * The shards (docs/reference.md § Database shards): every D1 binding named `SHARD_<n>` holds
 * the course data of the schools the directory (binding DIRECTORY) places on it. This is the
 * one home of "which D1 database is a school's": `shardFor`, the list of shards, the
 * isolate's cache of a credential's place, and the statement that tells whether a shard
 * holds a school (read in the same batch as a page, so that no read answers from a shard
 * that does not hold the school).
 */
import { and, eq, inArray, sql } from "drizzle-orm";
import type { DrizzleD1Database } from "drizzle-orm/d1";
import { BoundedMap } from "../lib/bounded-map";
import type { Scope } from "../lib/scopes";
import { SHARD_BINDING_RE, shardBindings } from "./shard-names";
import { heldSchools } from "./shard-schema";

/**
 * The D1 database of the shard `binding` (the directory's `schools.shard`).
 *
 * @throws Error when `env` has no such shard (a directory naming a binding the Worker lacks:
 *   an operator's mistake, a 500, never another shard's answer).
 */
export function shardFor(env: object, binding: string): D1Database {
  const d1 = SHARD_BINDING_RE.test(binding) ? (env as Record<string, unknown>)[binding] : undefined;
  if (!d1) throw new Error(`the directory names shard "${binding}", which this Worker has no binding for`);
  return d1 as D1Database;
}

/** Every shard of `env` (`SHARD_<n>` bindings, in their numbers' order) with its binding's name. */
export function shardsOf(env: object): { binding: string; d1: D1Database }[] {
  return shardBindings(env).map((binding) => ({ binding, d1: shardFor(env, binding) }));
}

/** Where a credential's school lives, as this isolate last learned it from the directory. */
export interface KnownPlace {
  schoolId: string;
  shard: string;
  /** The credential's scopes: a read is sent with the check only when they cover the request's. */
  scopes: readonly Scope[];
}

/** Credentials whose place the isolate remembers (the oldest forgotten first). */
const KNOWN_PLACES_MAX = 10_000;
const knownPlaces = new BoundedMap<string, KnownPlace>(KNOWN_PLACES_MAX);

/**
 * The place the isolate remembers for a credential's hash: only where to send the query
 * together with the directory's check, never whether the credential is valid (the check
 * runs on every request).
 */
export function knownPlace(credentialHash: string): KnownPlace | undefined {
  return knownPlaces.get(credentialHash);
}

/** Remembers a credential's place, as the directory just named it. */
export function rememberPlace(credentialHash: string, place: KnownPlace): void {
  knownPlaces.set(credentialHash, place);
}

/**
 * Forgets a credential's place: the directory refused it (revoked, unknown), so its next
 * request sends no shard query beside the check (docs/architecture.md § Invariants).
 */
export function forgetPlace(credentialHash: string): void {
  knownPlaces.delete(credentialHash);
}

/**
 * A school's rows on a shard, as `held_schools.state` says (src/db/shard-schema.ts):
 * readable when `active` or `fenced` (a move copies it away; its rows are all here).
 */
const READABLE_STATES = ["active", "fenced"] as const;

/** One row, `held` 1 when the shard holds `schoolId` readably, 0 otherwise: for the batch of a read. */
export const heldQuery = (db: DrizzleD1Database, schoolId: string) =>
  db
    .select({ held: sql<number>`count(*)` })
    .from(heldSchools)
    .where(and(eq(heldSchools.schoolId, schoolId), inArray(heldSchools.state, [...READABLE_STATES])));
