/**
 * `npm run keys -- create --school ID [--label TEXT] | list --school ID | revoke KEY_ID`
 * `[--local | --remote] [--persist-to DIR] [--json]`
 *
 * The operators' API keys (docs/operations.md § Keys, logs), in the D1 database of
 * wrangler.toml's directory (binding DIRECTORY), through `wrangler d1 execute` like the import
 * (scripts/lib/wrangler.ts); the statements are src/db/api-keys.ts's. What each command
 * prints and stores (`revoke` also ends the key's portal sessions): docs/operations.md § API keys.
 *
 * Text on stdout (aligned), or JSON with `--json`. Errors on stderr. Exit status: 0 done,
 * 1 wrangler failed, 2 bad usage or an unknown school or key id.
 */
import {
  type ApiKeyListing,
  insertKey,
  type KeyListRow,
  keyListing,
  labelProblem,
  listKeys,
  newApiKey,
  revokeKey,
  revokeSessionsOfKey,
} from "../src/db/api-keys";
import { renderLiteral } from "../src/db/import-sql";
import { ID_RE } from "../src/lib/ids";
import { formatInstant } from "../src/lib/time";
import { type D1Target, parseD1Cli, usageError } from "./lib/args";
import { runIfMain } from "./lib/cli";
import { printable, printableJson } from "./lib/printable";
import { table } from "./lib/progress";
import { d1Query, d1Statements, userPath } from "./lib/wrangler";

const USAGE = `usage: npm run keys -- <command> [--local | --remote] [--persist-to DIR] [--json]

commands:
  create --school ID [--label TEXT]  mint a new sk_live_ key for the school: printed once, with its key id
  list --school ID                   the school's keys: id, label, last 4 characters, createdAt, revokedAt (never the key)
  revoke KEY_ID                      revoke the key and its portal sessions: from then on all are refused (401)

options:
  --local           the local D1 database of wrangler dev (default)
  --remote          the remote D1 database of wrangler.toml
  --persist-to DIR  local persistence directory (wrangler --persist-to; default .wrangler/state)
  --json            print JSON instead of text`;

/** Runs one statement of src/db/api-keys.ts through wrangler and returns its rows. */
async function run<T>(step: Parameters<typeof renderLiteral>[0][number], where: D1Target): Promise<T[]> {
  const [sql] = renderLiteral([step], Number.POSITIVE_INFINITY);
  return d1Query<T>(sql!, where.target, where.persistTo);
}

const instant = (ms: number | null) => (ms === null ? null : formatInstant(ms));

/** A listing as `--json` prints it (instants in ISO 8601 UTC). */
const listingJson = (k: ApiKeyListing) => ({ id: k.id, label: k.label, last4: k.last4, createdAt: instant(k.createdAt), revokedAt: instant(k.revokedAt) });

/**
 * `create`: stores a new key of `schoolId`.
 *
 * @returns the exit status (2 when the school is unknown: nothing written).
 */
async function create(schoolId: string, label: string | null, json: boolean, where: D1Target): Promise<number> {
  const key = await newApiKey(schoolId, label);
  const rows = await run<{ id: string }>(insertKey(key), where);
  if (rows.length === 0) {
    console.error(`no school "${schoolId}" in the ${where.target} database: nothing created (import the school first: npm run import)`);
    return 2;
  }
  if (json) {
    console.log(JSON.stringify({ id: key.id, schoolId, label, last4: key.last4, createdAt: formatInstant(key.createdAt), key: key.key }, null, 2));
  } else {
    console.log(
      `${table(
        ["id", "school", "label", "createdAt"],
        [[key.id, schoolId, label ?? "—", formatInstant(key.createdAt)]],
      )}\n\nkey: ${key.key}\n\nThis is the only time the key is shown: only its SHA-256 hash is stored. Revoke it with: npm run keys -- revoke ${key.id}`,
    );
  }
  return 0;
}

/** `list`: the keys of `schoolId`. @returns the exit status (2 when the school is unknown). */
async function list(schoolId: string, json: boolean, where: D1Target): Promise<number> {
  const keys = keyListing(await run<KeyListRow>(listKeys(schoolId), where));
  if (keys === null) {
    console.error(`no school "${schoolId}" in the ${where.target} database`);
    return 2;
  }
  if (json) console.log(printableJson(keys.map(listingJson)));
  else if (keys.length === 0) console.log(`school "${schoolId}" has no API key (create one: npm run keys -- create --school ${schoolId})`);
  else {
    const rows = keys.map((k) => [
      k.id,
      // A label stored before labels refused every control character: escaped, never interpreted.
      k.label === null ? "—" : printable(k.label),
      k.last4 ? `…${k.last4}` : "—",
      formatInstant(k.createdAt),
      k.revokedAt === null ? "—" : formatInstant(k.revokedAt),
    ]);
    console.log(table(["id", "label", "last4", "createdAt", "revokedAt"], rows));
  }
  return 0;
}

/** How to review what a revoked key did (docs/operations.md § Keys, logs). */
const reviewHint = (id: string, schoolId: string) =>
  `review what it did:
  - its webhook registrations: GET /v3/webhooks with another credential of school ${schoolId}, the records whose createdBy or updatedBy is "${id}" (it created or last changed them: delete or disable those you do not trust)
  - its requests: the Workers Logs lines whose keyId is "${id}" (portal sessions it minted included)`;

/**
 * `revoke`: revokes key `id` and its live portal sessions in one batch (one commit).
 *
 * @returns the exit status (2 when no key has this id: nothing changed).
 */
async function revoke(id: string, json: boolean, where: D1Target): Promise<number> {
  const now = Date.now();
  const sql = renderLiteral([revokeKey(id, now), revokeSessionsOfKey(id, now)], Number.POSITIVE_INFINITY).join(";\n");
  const [keyRows = [], sessionRows = []] = await d1Statements<Record<string, unknown>>(sql, where.target, where.persistTo);
  const row = keyRows[0] as { id: string; school_id: string; revoked_at: number } | undefined;
  if (!row) {
    console.error(`no API key with id "${id}" in the ${where.target} database (list a school's keys: npm run keys -- list --school ID)`);
    return 2;
  }
  const already = row.revoked_at !== now;
  const sessions = sessionRows.length;
  if (json) {
    console.log(
      JSON.stringify(
        { id, schoolId: row.school_id, revokedAt: formatInstant(row.revoked_at), alreadyRevoked: already, portalSessionsRevoked: sessions },
        null,
        2,
      ),
    );
    return 0;
  }
  const head = already
    ? `key ${id} (school ${row.school_id}) was already revoked at ${formatInstant(row.revoked_at)}`
    : `key ${id} (school ${row.school_id}) revoked at ${formatInstant(row.revoked_at)}: it and its portal sessions are refused (401) from now on`;
  console.log(`${head}\nportal sessions revoked with it: ${sessions}\n${reviewHint(id, row.school_id)}`);
  return 0;
}

/** CLI entry point. Returns the exit status. */
export async function main(argv: string[]): Promise<number> {
  const args = parseD1Cli(argv, { school: { type: "string" }, label: { type: "string" }, json: { type: "boolean" } }, USAGE, userPath);
  if (typeof args === "number") return args;
  const { values: v, positionals, where } = args;
  const usage = (problem: string) => usageError(problem, USAGE);
  const [command, ...rest] = positionals;
  const json = v.json === true;
  if (command === "create" || command === "list") {
    if (rest.length > 0) return usage(`${command} takes no argument besides its options (got ${rest.join(" ")})`);
    if (v.school === undefined) return usage(`${command} needs --school ID`);
    if (!ID_RE.test(v.school)) return usage(`--school: "${v.school}" is not a school id (1–64 characters [A-Za-z0-9_-])`);
    if (command === "list") return v.label === undefined ? list(v.school, json, where) : usage("list takes no --label");
    const problem = v.label === undefined ? null : labelProblem(v.label);
    if (problem) return usage(`--label ${problem}`);
    return create(v.school, v.label ?? null, json, where);
  }
  if (command === "revoke") {
    if (rest.length !== 1) return usage("revoke needs one KEY_ID");
    if (v.school !== undefined || v.label !== undefined) return usage("revoke takes a KEY_ID only (no --school, no --label)");
    if (!ID_RE.test(rest[0]!)) return usage(`"${rest[0]}" is not a key id (key_…)`);
    return revoke(rest[0]!, json, where);
  }
  return usage(command === undefined ? "a command is needed" : `unknown command "${command}"`);
}

await runIfMain(import.meta.url, main);
