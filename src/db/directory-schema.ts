/**
 * The directory's D1 schema (binding DIRECTORY; drizzle-orm, SQLite dialect): the schools with
 * the shard that holds each one's course data and its state, the API keys and the portal
 * sessions (docs/reference.md § Database shards). Instants are INTEGER ms since the epoch;
 * booleans INTEGER 0/1. Migrations: `npm run db:generate` (drizzle.directory.config.ts) into
 * migrations/directory/.
 */
import { index, integer, sqliteTable, text, uniqueIndex } from "drizzle-orm/sqlite-core";

/** Every scope of migration 0002, the default of keys stored without a scope list (a literal: migrations never change). */
const ALL_SCOPES_AT_0002 = "courses:read courses:write students:read webhooks:read webhooks:write events:read portal";

/**
 * A school: the tenant, and where its course data lives. `shard` is the D1 binding of its
 * shard (`SHARD_0`, …); `state` is `moving` while `npm run shards -- move` runs (its course
 * writes answer 503 SCHOOL_MOVING), with the move's target and last completed step
 * (src/db/move.ts), so that a rerun resumes it.
 */
export const schools = sqliteTable("schools", {
  id: text("id").primaryKey(),
  name: text("name").notNull(),
  shard: text("shard").notNull(),
  state: text("state", { enum: ["active", "moving"] })
    .notNull()
    .default("active"),
  /** The shard a move comes from (its rows are deleted there last); null when none runs. */
  moveFrom: text("move_from"),
  /** The shard a move goes to; null when none runs. */
  moveTo: text("move_to"),
  /** The move's last completed step (src/db/move.ts `MoveStep`); null when none runs. */
  moveStep: text("move_step"),
});

/**
 * API keys, stored only as lowercase hex SHA-256 of the key. A key belongs to one school.
 * Operators manage them with `npm run keys` (scripts/keys.ts, rows of src/db/api-keys.ts) or
 * the import (src/db/import-rows.ts).
 */
export const apiKeys = sqliteTable(
  "api_keys",
  {
    keyHash: text("key_hash").primaryKey(),
    schoolId: text("school_id").notNull(),
    createdAt: integer("created_at").notNull(),
    /** ms since epoch; non-null means the key no longer authenticates. */
    revokedAt: integer("revoked_at"),
    /** The key's id (`key_…`), what operators name it by. */
    id: text("id").notNull(),
    /** The operator's note (`--label`); null when none was given or for imported keys. */
    label: text("label"),
    /** The key's last 4 characters, so that a listing can tell keys apart; null for keys stored before it was kept. */
    last4: text("last4"),
    /**
     * The key's scopes (src/lib/scopes.ts `formatScopes`: names joined by one space). Keys
     * stored before scopes existed hold every scope of that time.
     */
    scopes: text("scopes").notNull().default(ALL_SCOPES_AT_0002),
    /** ms since epoch; from this instant on the key is refused (401). Null: it does not expire. */
    expiresAt: integer("expires_at"),
  },
  (t) => [index("api_keys_school_idx").on(t.schoolId), uniqueIndex("api_keys_id_idx").on(t.id)],
);

/**
 * Portal session tokens (docs/reference.md § "Portal sessions"), stored only as lowercase hex SHA-256
 * of the token: short-lived credentials of one school limited to the webhook operations.
 */
export const portalSessions = sqliteTable(
  "portal_sessions",
  {
    tokenHash: text("token_hash").primaryKey(),
    schoolId: text("school_id").notNull(),
    /** ms since epoch. */
    createdAt: integer("created_at").notNull(),
    /** ms since epoch; from this instant on the token is refused (401). */
    expiresAt: integer("expires_at").notNull(),
    /** Only the GET operations of its scope. */
    readOnly: integer("read_only", { mode: "boolean" }).notNull().default(false),
    /** ms since epoch; non-null means revoked (DELETE /v3/portal-sessions, a redeem, the key's revocation). */
    revokedAt: integer("revoked_at"),
    /**
     * The id of the API key that minted the session (`api_keys.id`); a redeemed session
     * inherits it. Revoking the key revokes its sessions.
     */
    keyId: text("key_id"),
    /**
     * A link's token (minted by POST /v3/portal-sessions): it can only be redeemed, once; the
     * redeem's session is not a link (0). Default 1, so that a row written without it is the
     * narrower credential.
     */
    link: integer("link", { mode: "boolean" }).notNull().default(true),
    /**
     * The session's scopes (src/lib/scopes.ts `formatScopes`), at most its key's. Sessions
     * stored before scopes existed keep what they could do: the webhook operations.
     */
    scopes: text("scopes").notNull().default("webhooks:read webhooks:write events:read"),
  },
  (t) => [
    // DELETE /v3/portal-sessions and the live-session cap: the school's tokens still alive.
    index("portal_sessions_school_idx").on(t.schoolId, t.expiresAt),
    // The cron's pruning of ended sessions.
    index("portal_sessions_expires_idx").on(t.expiresAt),
    // The cron's pruning of revoked sessions, a day after their revocation.
    index("portal_sessions_revoked_idx").on(t.revokedAt),
    // `npm run keys -- revoke`: the sessions of a key.
    index("portal_sessions_key_idx").on(t.keyId),
  ],
);
