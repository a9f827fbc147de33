/**
 * `npm run keys -- create --school ID [--label TEXT] [--scope S,…] [--expires-in DURATION] |
 * list --school ID | revoke KEY_ID [--base URL] [--disable-webhooks]`
 * `[--local | --remote] [--persist-to DIR] [--json]`
 * The operators' API keys, in the D1 database of wrangler.toml's directory, through
 * `wrangler d1 execute` (scripts/lib/wrangler.ts; a local `list` reads the database file itself,
 * scripts/lib/d1-file.ts); the statements are src/db/api-keys.ts's.
 * `revoke` also ends the key's portal sessions, then reviews its webhook registrations through
 * the Worker's API (scripts/lib/key-webhooks.ts) with a temporary key of two scopes, revoked on
 * every exit path (Ctrl-C included). What each command prints and stores, and
 * the exit statuses (also in USAGE): docs/operations.md § API keys. Errors on stderr.
 */
import {
  type ApiKeyListing,
  insertKey,
  type KeyListRow,
  keyListing,
  labelProblem,
  listKeys,
  newApiKey,
  parseExpiresIn,
  revokeKey,
  revokeSessionsOfKey,
} from "../src/db/api-keys";
import { renderLiteral } from "../src/db/import-sql";
import { ID_RE } from "../src/lib/ids";
import { parseScopes, SCOPES, type Scope } from "../src/lib/scopes";
import { formatInstant } from "../src/lib/time";
import { type D1Target, parseD1Cli, usageError } from "./lib/args";
import { runIfMain } from "./lib/cli";
import { queryLocalD1 } from "./lib/d1-file";
import { type ReviewedWebhook, reachable, reviewWebhooks, type WebhookReview } from "./lib/key-webhooks";
import { DEFAULT_LOCAL_BASE, localApiBase } from "./lib/local-api";
import { printable, printableJson } from "./lib/printable";
import { table } from "./lib/progress";
import { d1Query, d1Statements, userPath } from "./lib/wrangler";

const USAGE = `usage: npm run keys -- <command> [--local | --remote] [--persist-to DIR] [--json]

commands:
  create --school ID [--label TEXT] [--scope SCOPE,…] [--expires-in DURATION]
                                     mint a new sk_live_ key for the school: printed once, with its key id
  list --school ID                   the school's keys: id, label, last 4 characters, scopes, createdAt, expiresAt,
                                     revokedAt (never the key)
  revoke KEY_ID [--disable-webhooks] revoke the key and its portal sessions: from then on all are refused (401);
                                     then list the webhook registrations it created or last changed (through the
                                     API, with a temporary key of the school, webhooks:read and webhooks:write only,
                                     expiring within 10 minutes, revoked before the end, Ctrl-C included)

options:
  --local             the local D1 database of wrangler dev (default)
  --remote            the remote D1 database of wrangler.toml
  --persist-to DIR    local persistence directory (wrangler --persist-to; default .wrangler/state)
  --scope SCOPE,…     create: what the key may do, repeatable or a comma list (default: every scope);
                      the scopes: ${SCOPES.join(", ")}
  --expires-in DURATION  create: the key is refused from then on: a whole number and d, h or m (90d, 12h, 30m)
  --base URL          revoke: the Worker serving that database (default API_BASE; with --local, else the URL this checkout's npm start serves, else ${DEFAULT_LOCAL_BASE})
  --disable-webhooks  revoke: disable the registrations it lists (PATCH enabled: false)
  --json              print JSON instead of text

exit status: 0 done, 1 wrangler failed, 2 bad usage or unknown id, 3 key revoked but its registrations not listed or not all disabled,
130 (143) revoke interrupted by Ctrl-C (SIGTERM) after the revocation: its temporary key revoked before the exit`;

/** The scopes of the temporary key `revoke` mints: what listing and disabling registrations need. */
const TEMP_KEY_SCOPES: readonly Scope[] = ["webhooks:read", "webhooks:write"];

/** How long the temporary key of `revoke` lives at most, in ms, should every revocation of it fail. */
const TEMP_KEY_LIFETIME_MS = 10 * 60_000;

/** Runs one statement of src/db/api-keys.ts through wrangler and returns its rows. */
async function run<T>(step: Parameters<typeof renderLiteral>[0][number], where: D1Target): Promise<T[]> {
  const [sql] = renderLiteral([step], Number.POSITIVE_INFINITY);
  return d1Query<T>(sql!, where.target, where.persistTo);
}

const instant = (ms: number | null) => (ms === null ? null : formatInstant(ms));

/** A listing as `--json` prints it (instants in ISO 8601 UTC). */
const listingJson = (k: ApiKeyListing) => ({
  id: k.id,
  label: k.label,
  last4: k.last4,
  scopes: k.scopes,
  createdAt: instant(k.createdAt),
  expiresAt: instant(k.expiresAt),
  revokedAt: instant(k.revokedAt),
});

/** A key's scopes in a table cell: "every scope", or the names joined by commas. */
const scopesCell = (scopes: readonly string[]) => (scopes.join(" ") === SCOPES.join(" ") ? "every scope" : scopes.join(","));

/** What `create` stores besides the school and label: the scopes (absent: every scope) and the lifetime in ms (absent: none). */
interface CreateOptions {
  scopes: Scope[] | undefined;
  expiresInMs: number | undefined;
}

/**
 * `create`: stores a new key of `schoolId` with `opts`' scopes and expiry.
 *
 * @returns the exit status (2 when the school is unknown: nothing written).
 */
async function create(schoolId: string, label: string | null, opts: CreateOptions, json: boolean, where: D1Target): Promise<number> {
  const now = Date.now();
  const expiresAt = opts.expiresInMs === undefined ? null : now + opts.expiresInMs;
  const key = await newApiKey(schoolId, label, now, { scopes: opts.scopes, expiresAt });
  const rows = await run<{ id: string }>(insertKey(key), where);
  if (rows.length === 0) {
    console.error(`no school "${schoolId}" in the ${where.target} database: nothing created (import the school first: npm run import)`);
    return 2;
  }
  const expires = instant(expiresAt);
  if (json) {
    console.log(
      JSON.stringify(
        { id: key.id, schoolId, label, last4: key.last4, scopes: key.scopes, createdAt: formatInstant(key.createdAt), expiresAt: expires, key: key.key },
        null,
        2,
      ),
    );
  } else {
    const scopes = opts.scopes === undefined ? `every scope (${SCOPES.join(", ")}): give --scope to mint a key that may do less` : key.scopes.join(", ");
    console.log(
      `${table(
        ["id", "school", "label", "createdAt", "expiresAt"],
        [[key.id, schoolId, label ?? "—", formatInstant(key.createdAt), expires ?? "never"]],
      )}\n\nscopes: ${scopes}\nkey: ${key.key}\n\nThis is the only time the key is shown: only its SHA-256 hash is stored. Revoke it with: npm run keys -- revoke ${key.id}`,
    );
  }
  return 0;
}

/**
 * `list`: the keys of `schoolId`; locally read from the directory's file itself
 * (scripts/lib/d1-file.ts), in well under a second where a wrangler call takes several.
 * @returns the exit status (2 when the school is unknown).
 */
async function list(schoolId: string, json: boolean, where: D1Target): Promise<number> {
  const [sql] = renderLiteral([listKeys(schoolId)], Number.POSITIVE_INFINITY);
  const rows = where.target === "local" ? await queryLocalD1<KeyListRow>(sql!, where.persistTo) : await run<KeyListRow>(listKeys(schoolId), where);
  const keys = keyListing(rows);
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
      printable(scopesCell(k.scopes)),
      formatInstant(k.createdAt),
      k.expiresAt === null ? "never" : formatInstant(k.expiresAt),
      k.revokedAt === null ? "—" : formatInstant(k.revokedAt),
    ]);
    console.log(table(["id", "label", "last4", "scopes", "createdAt", "expiresAt", "revokedAt"], rows));
  }
  return 0;
}

/** How `revoke` reviews the key's registrations: the API's URL (undefined: none given for `--remote`) and whether to disable them. */
interface ReviewOptions {
  base: string | undefined;
  disable: boolean;
}

/**
 * What `revoke` learned of the key's registrations: the review, or why there is none; the
 * temporary key it used, and why that key could not be revoked (absent: it was, or none was minted).
 */
type ReviewOutcome = ({ review: WebhookReview; tempKeyId: string } | { problem: string; tempKeyId: string | null }) & { tempKeyLive?: string };

/** The signals `revoke` answers by revoking its temporary key before it exits (Ctrl-C, `kill`, a closed terminal). */
const INTERRUPTS = ["SIGINT", "SIGTERM", "SIGHUP"] as const;

/** The exit status after `signal`: 128 + its number, as a shell reports a process it ended. */
const interruptedStatus = (signal: (typeof INTERRUPTS)[number]) => ({ SIGHUP: 129, SIGINT: 130, SIGTERM: 143 })[signal];

/**
 * Runs `cleanup` before the process ends on an interrupt (`INTERRUPTS`) while `body` runs:
 * the first signal awaits `cleanup`, then exits with `interruptedStatus`; a second one exits at
 * once, saying `unsafe`. The handlers are removed when `body` settles.
 */
async function withInterruptCleanup<T>(body: () => Promise<T>, cleanup: () => Promise<void>, unsafe: string): Promise<T> {
  let interrupted = false;
  const onSignal = (signal: (typeof INTERRUPTS)[number]) => {
    if (interrupted) {
      console.error(`${signal} again: exiting before the cleanup ends. ${unsafe}`);
      process.exit(interruptedStatus(signal));
    }
    interrupted = true;
    console.error(`${signal}: revoking the temporary key before exiting (${signal} again to exit at once)`);
    void cleanup().finally(() => process.exit(interruptedStatus(signal)));
  };
  for (const signal of INTERRUPTS) process.on(signal, onSignal);
  try {
    return await body();
  } finally {
    for (const signal of INTERRUPTS) process.off(signal, onSignal);
  }
}

/**
 * Reviews the registrations of school `schoolId` that key `id` created or last changed
 * (scripts/lib/key-webhooks.ts) through the API at `opts.base`, with a temporary key of the
 * school minted for the run (label `keys revoke KEY_ID`, scopes `TEMP_KEY_SCOPES`, expiring
 * `TEMP_KEY_LIFETIME_MS` after its mint). The key is revoked by its id on every exit path: when
 * the review ends or fails, when its insert fails (wrangler may report a failure after the
 * commit), and on an interrupt (`INTERRUPTS`: the revocation waits for the insert to settle,
 * then the process exits). `tempKeyLive` says why it could not be revoked. No key is minted
 * when nothing answers at the URL.
 */
async function reviewKeyWebhooks(id: string, schoolId: string, opts: ReviewOptions, where: D1Target): Promise<ReviewOutcome> {
  if (opts.base === undefined) return { problem: "no API URL: with --remote, give the deployed Worker's URL (--base URL, or API_BASE)", tempKeyId: null };
  if (!(await reachable(opts.base))) return { problem: `nothing answers at ${opts.base}`, tempKeyId: null };
  const now = Date.now();
  const temp = await newApiKey(schoolId, `keys revoke ${id}`, now, { scopes: TEMP_KEY_SCOPES, expiresAt: now + TEMP_KEY_LIFETIME_MS });
  const expires = formatInstant(temp.expiresAt!);
  let inserting: Promise<unknown> = Promise.resolve();
  // One revocation at a time, shared by the interrupt and the normal end (a failed one may be
  // tried again); its rows say whether the key was stored.
  let revocation: Promise<{ id: string }[]> | undefined;
  const revokeTemp = () => {
    const revoke = () => run<{ id: string }>(revokeKey(temp.id), where);
    revocation ??= inserting.then(revoke, revoke).catch((err: unknown) => {
      revocation = undefined;
      throw err;
    });
    return revocation;
  };
  const unrevoked = `The temporary key ${temp.id} (label "keys revoke ${id}") may still work until ${expires}: revoke it (npm run keys -- revoke ${temp.id}).`;
  // Ctrl-C in a terminal also ends a wrangler under way (a revocation included): one more try.
  const interruptCleanup = () =>
    revokeTemp()
      .catch(() => revokeTemp())
      .then(
        (rows) => console.error(rows.length > 0 ? `the temporary key ${temp.id} is revoked` : `no temporary key ${temp.id} was stored`),
        (err: Error) => console.error(`${err.message}\n${unrevoked}`),
      );
  return withInterruptCleanup(
    async () => {
      let outcome: ReviewOutcome;
      let insertFailed = false;
      try {
        inserting = run<{ id: string }>(insertKey(temp), where);
        if (((await inserting) as unknown[]).length === 0) outcome = { problem: `no school "${schoolId}" to mint a temporary key for`, tempKeyId: null };
        else {
          try {
            outcome = { review: await reviewWebhooks({ base: opts.base!, key: temp.key, keyId: id, disable: opts.disable }), tempKeyId: temp.id };
          } catch (err) {
            outcome = { problem: (err as Error).message, tempKeyId: temp.id };
          }
        }
      } catch (err) {
        insertFailed = true;
        outcome = { problem: `the temporary key could not be stored: ${(err as Error).message}`, tempKeyId: temp.id };
      }
      try {
        const stored = (await revokeTemp()).length > 0;
        if (!stored && "problem" in outcome) outcome.tempKeyId = null;
        else if (insertFailed && "problem" in outcome) outcome.problem += `\n(it was stored all the same: ${temp.id}, now revoked)`;
      } catch (err) {
        outcome.tempKeyLive = (err as Error).message;
      }
      return outcome;
    },
    interruptCleanup,
    unrevoked,
  );
}

/** A registration as `revoke --json` prints it. */
const webhookJson = ({ record: r, disabledNow }: ReviewedWebhook) => ({
  id: r.id,
  url: r.url,
  enabled: r.enabled,
  disabledReason: r.disabledReason,
  createdBy: r.createdBy,
  updatedBy: r.updatedBy,
  disabledNow,
});

/** The `enabled` cell of `revoke`'s table. */
const enabledCell = ({ record: r, disabledNow }: ReviewedWebhook) => (r.enabled ? "yes" : disabledNow ? "disabled now" : `no (${r.disabledReason})`);

/** `revoke`'s text about the key's registrations (after the revocation's lines). */
function reviewText(id: string, disable: boolean, outcome: { review: WebhookReview; tempKeyId: string }): string {
  const { webhooks, total } = outcome.review;
  if (webhooks.length === 0) return `webhook registrations: none of the school's ${total} was created or last changed by ${id}`;
  const rows = webhooks.map((w) => [w.record.id, w.record.url, enabledCell(w), w.record.createdBy ?? "—", w.record.updatedBy ?? "—"].map(printable));
  const lines = [
    `webhook registrations ${id} created or last changed (createdBy or updatedBy is its id): ${webhooks.length} of the school's ${total}`,
    table(["id", "url", "enabled", "createdBy", "updatedBy"], rows),
  ];
  const disabled = webhooks.filter((w) => w.disabledNow).length;
  if (disable && disabled > 0)
    lines.push(
      `disabled now: ${disabled} (disabledReason "manual"; their updatedBy is this run's temporary key ${outcome.tempKeyId}, revoked): re-enable one you trust with PATCH /v3/webhooks/{id} {"enabled": true}`,
    );
  if (!disable && webhooks.some((w) => w.record.enabled))
    lines.push(`disable them: npm run keys -- revoke ${id} --disable-webhooks (or delete those you do not trust: DELETE /v3/webhooks/{id})`);
  return lines.join("\n");
}

/**
 * `revoke`: revokes key `id` and its live portal sessions in one batch (one commit), then
 * lists the registrations it created or last changed and, with `opts.disable`, disables
 * them (`reviewKeyWebhooks`): the revocation never waits for the API.
 *
 * @returns the exit status: 0; 1 when the temporary key could not be revoked (the key is);
 *   2 when no key has this id (nothing changed); 3 when the key is revoked but its
 *   registrations could not be listed or a disable failed.
 * @throws Error when wrangler fails on the revocation (nothing changed).
 */
async function revoke(id: string, json: boolean, where: D1Target, opts: ReviewOptions): Promise<number> {
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
  if (!json) {
    const head = already
      ? `key ${id} (school ${row.school_id}) was already revoked at ${formatInstant(row.revoked_at)}`
      : `key ${id} (school ${row.school_id}) revoked at ${formatInstant(row.revoked_at)}: it and its portal sessions are refused (401) from now on`;
    console.log(`${head}\nportal sessions revoked with it: ${sessions}`);
  }
  const outcome = await reviewKeyWebhooks(id, row.school_id, opts, where);
  const problems = "review" in outcome ? outcome.review.problems : [outcome.problem];
  if (json) {
    console.log(
      printableJson({
        id,
        schoolId: row.school_id,
        revokedAt: formatInstant(row.revoked_at),
        alreadyRevoked: already,
        portalSessionsRevoked: sessions,
        webhooks: "review" in outcome ? outcome.review.webhooks.map(webhookJson) : null,
        webhookProblems: problems,
        temporaryKeyId: outcome.tempKeyId,
      }),
    );
  } else {
    if ("review" in outcome) console.log(reviewText(id, opts.disable, outcome));
    console.log(`its requests: the Workers Logs lines whose keyId is "${id}" (portal sessions it minted included)`);
  }
  if (outcome.tempKeyLive !== undefined) {
    console.error(
      `${outcome.tempKeyLive}\nthe temporary key ${outcome.tempKeyId} (label "keys revoke ${id}") may still work until it expires, 10 minutes after its mint: revoke it (npm run keys -- list --school ${row.school_id} shows it)`,
    );
    return 1;
  }
  if (problems.length === 0) return 0;
  const verb = "review" in outcome ? "not all disabled" : "not listed";
  console.error(
    `webhook registrations ${verb}: ${problems.map((p) => p.split("\n").map(printable).join("\n")).join("; ")}\nthe key stays revoked; once the API answers, run the same revoke again (it keeps the first revocation) with --base URL of the Worker that serves this database`,
  );
  return 3;
}

/** CLI entry point. Returns the exit status. */
export async function main(argv: string[]): Promise<number> {
  const args = parseD1Cli(
    argv,
    {
      school: { type: "string" },
      label: { type: "string" },
      scope: { type: "string", multiple: true },
      "expires-in": { type: "string" },
      json: { type: "boolean" },
      base: { type: "string" },
      "disable-webhooks": { type: "boolean" },
    },
    USAGE,
    userPath,
  );
  if (typeof args === "number") return args;
  const { values: v, positionals, where } = args;
  const usage = (problem: string) => usageError(problem, USAGE);
  const [command, ...rest] = positionals;
  const json = v.json === true;
  if (command === "create" || command === "list") {
    if (rest.length > 0) return usage(`${command} takes no argument besides its options (got ${rest.join(" ")})`);
    if (v.base !== undefined || v["disable-webhooks"] !== undefined) return usage(`${command} takes no --base, no --disable-webhooks (revoke's)`);
    if (v.school === undefined) return usage(`${command} needs --school ID`);
    if (!ID_RE.test(v.school)) return usage(`--school: "${v.school}" is not a school id (1–64 characters [A-Za-z0-9_-])`);
    if (command === "list")
      return v.label === undefined && v.scope === undefined && v["expires-in"] === undefined
        ? list(v.school, json, where)
        : usage("list takes no --label, no --scope, no --expires-in (create's)");
    const problem = v.label === undefined ? null : labelProblem(v.label);
    if (problem) return usage(`--label ${problem}`);
    const scopes = v.scope === undefined ? undefined : parseScopes(v.scope.join(","));
    if (scopes !== undefined && !Array.isArray(scopes))
      return usage(`--scope: "${printable(scopes.unknown)}" is not a scope; the scopes are ${SCOPES.join(", ")}`);
    if (scopes !== undefined && scopes.length === 0) return usage(`--scope needs at least one of ${SCOPES.join(", ")}`);
    const expiresIn = v["expires-in"] === undefined ? undefined : parseExpiresIn(v["expires-in"]);
    if (typeof expiresIn === "object") return usage(`--expires-in: ${printable(expiresIn.problem)}`);
    return create(v.school, v.label ?? null, { scopes, expiresInMs: expiresIn }, json, where);
  }
  if (command === "revoke") {
    if (rest.length !== 1) return usage("revoke needs one KEY_ID");
    if (v.school !== undefined || v.label !== undefined || v.scope !== undefined || v["expires-in"] !== undefined)
      return usage("revoke takes a KEY_ID and its options only (no --school, no --label, no --scope, no --expires-in)");
    if (!ID_RE.test(rest[0]!)) return usage(`"${rest[0]}" is not a key id (key_…)`);
    const base = v.base ?? (where.target === "local" ? localApiBase() : process.env.API_BASE);
    if (base !== undefined && !/^https?:\/\/[^/]/.test(base)) return usage(`--base (or API_BASE): "${base}" is not an http(s) URL`);
    return revoke(rest[0]!, json, where, { base, disable: v["disable-webhooks"] === true });
  }
  return usage(command === undefined ? "a command is needed" : `unknown command "${command}"`);
}

await runIfMain(import.meta.url, main);
