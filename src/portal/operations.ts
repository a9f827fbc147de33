/**
 * The portal session operations (docs/reference.md § Portal sessions), each declared once: a
 * server holding the school's API key mints a short-lived `ps_` token and its portal link, or
 * revokes every token of the school (API keys only: a portal token is 403 FORBIDDEN); the
 * portal redeems its link's token for a fresh one (a link opens once); any credential reads
 * its school. Order of answers: 401 / 403, then 400, then the write.
 */

import { authenticate, authenticatePlace } from "../http/auth";
import { parseBodyWith, readOptionalJson } from "../http/body";
import { ApiError, errors } from "../http/errors";
import type { Operation } from "../http/operation";
import { rejectQuery } from "../http/request";
import { success } from "../http/respond";
import { isReadScope, PORTAL_SCOPES, SCOPES, type Scope } from "../lib/scopes";
import { formatInstant } from "../lib/time";
import { PORTAL_PATH } from "./headers";
import {
  createPortalSessionSchema,
  DEFAULT_SESSION_SECONDS,
  PORTAL_SESSION_EXAMPLE,
  portalSessionResponseSchema,
  REDEEMED_SESSION_EXAMPLE,
  redeemedSessionResponseSchema,
  revokedPortalSessionsResponseSchema,
  SCHOOL_EXAMPLE,
  schoolResponseSchema,
} from "./schemas";
import { createPortalSession, redeemPortalSession, revokePortalSessions } from "./sessions";

/**
 * A new session's scopes and read-only flag (docs/reference.md § Scopes): those asked for, or
 * by default the key's among `PORTAL_SCOPES`; with `readOnly` only the `:read` ones; and a
 * session without `webhooks:write` is read-only (the flag and the scopes never disagree).
 *
 * @param keyScopes the calling key's scopes.
 * @throws ApiError 403 FORBIDDEN naming a scope asked for that the key lacks (a session only
 *   narrows its key's); 400 VALIDATION_ERROR for a write scope with `readOnly: true`.
 */
function narrowedScopes(keyScopes: readonly Scope[], asked: Scope[] | undefined, readOnlyAsked: boolean): { scopes: Scope[]; readOnly: boolean } {
  const missing = asked?.find((s) => !keyScopes.includes(s));
  if (missing !== undefined) throw errors.missingScope(missing);
  const writes = asked?.filter((s) => !isReadScope(s)) ?? [];
  if (readOnlyAsked && writes.length > 0) {
    const message = `${writes.join(", ")} is no read scope, and the session is read-only (readOnly: true)`;
    throw new ApiError("VALIDATION_ERROR", `The body breaks the schema: scopes ${message}.`, [{ path: "scopes", message }]);
  }
  const base = asked ?? PORTAL_SCOPES.filter((s) => keyScopes.includes(s));
  const scopes = SCOPES.filter((s) => base.includes(s) && (!readOnlyAsked || isReadScope(s)));
  return { scopes, readOnly: !scopes.includes("webhooks:write") };
}

const TAG = {
  name: "Portal sessions",
  description: "Short-lived links to the webhook portal (GET /portal), for an administrator who does not hold the school's API key.",
};

const SCHOOL_TAG = { name: "School", description: "The school a credential belongs to." };

/** The portal session operations. */
export const portalSessionOperations: Operation<Env>[] = [
  {
    method: "POST",
    path: "/v3/portal-sessions",
    operationId: "createPortalSession",
    scopes: ["portal"],
    tag: TAG,
    summary: "Mint a portal link",
    description: `A portal session token (\`ps_…\`) of the school and its link, \`<origin>/portal#token=ps_…\` (as Svix's app-portal links). The token is a link's: it can only be redeemed (POST /v3/portal-sessions/redeem, what the portal does when the link is opened), once, until \`expiresAt\` (default ${DEFAULT_SESSION_SECONDS} s); used on any other operation it answers 401 UNAUTHORIZED saying to open the link. The session token its redeem answers works until the same \`expiresAt\` on the operations that list the \`portalToken\` security scheme (the webhook ones and GET /v3/school; a read-only token only their GETs): anything else answers 403 FORBIDDEN, an expired or revoked token 401. It is shown only in this answer; the service keeps its SHA-256 hash, with the id of the API key used here: revoking that key (\`npm run keys -- revoke\`) revokes the session and every session redeemed from it. A school has at most 100 live (unexpired, unrevoked) sessions and stores at most 1,000 session rows (links and opened sessions, until a day after their end or revocation; a live link counts twice, for the session its redeem adds): beyond either, 409 PORTAL_SESSION_LIMIT_REACHED. API keys only: a portal token answers 403. \`scopes\` only narrows the key's (docs/reference.md § Scopes): absent, the key's among \`courses:read\`, \`webhooks:read\`, \`webhooks:write\`, \`events:read\`; a scope the key lacks is 403 FORBIDDEN naming it; a session without \`webhooks:write\` is read-only.`,
    request: {
      body: { schema: createPortalSessionSchema, description: "The session's length and mode; the body may be absent (the defaults apply).", required: false },
    },
    responses: {
      201: {
        description: "The new session.",
        schema: portalSessionResponseSchema,
        example: { status: "success", result: PORTAL_SESSION_EXAMPLE },
      },
      400: ["VALIDATION_ERROR", "UNKNOWN_PARAMETER", "INVALID_JSON"],
      409: ["PORTAL_SESSION_LIMIT_REACHED"],
    },
    /** The link's origin is the one the request reached (the Worker serves /portal itself). */
    async handler(req, env, _exec, rc) {
      const schoolId = await authenticate(req, env.DIRECTORY, rc);
      rejectQuery(req);
      const body = parseBodyWith(
        createPortalSessionSchema,
        await readOptionalJson(req),
        "The body, if any, must be a JSON object: { expiresInSeconds?, readOnly?, scopes? }.",
      );
      const { scopes, readOnly } = narrowedScopes(rc.scopes ?? [], body.scopes as Scope[] | undefined, body.readOnly ?? false);
      const session = await createPortalSession(env.DIRECTORY, rc.db.bind(rc), schoolId, rc.keyId ?? null, {
        expiresInSeconds: body.expiresInSeconds ?? DEFAULT_SESSION_SECONDS,
        readOnly,
        scopes,
      });
      const url = `${new URL(req.url).origin}${PORTAL_PATH}#token=${session.token}`;
      return success(
        { token: session.token, url, expiresAt: formatInstant(session.expiresAt), readOnly: session.readOnly, scopes: session.scopes },
        { status: 201 },
      );
    },
  },
  {
    method: "DELETE",
    path: "/v3/portal-sessions",
    operationId: "revokePortalSessions",
    scopes: ["portal"],
    tag: TAG,
    summary: "Revoke every portal link",
    description:
      "Revokes every portal session token of the school at once: from the 200 on, each answers 401 UNAUTHORIZED. `revoked` counts the tokens that were still valid. API keys only: a portal token answers 403.",
    responses: {
      200: {
        description: "The school's tokens are revoked.",
        schema: revokedPortalSessionsResponseSchema,
        example: { status: "success", result: { revoked: 2 } },
      },
      400: ["UNKNOWN_PARAMETER"],
    },
    async handler(req, env, _exec, rc) {
      const schoolId = await authenticate(req, env.DIRECTORY, rc);
      rejectQuery(req);
      return success({ revoked: await revokePortalSessions(env.DIRECTORY, rc.db.bind(rc), schoolId) });
    },
  },
  {
    method: "POST",
    path: "/v3/portal-sessions/redeem",
    operationId: "redeemPortalSession",
    scopes: [],
    tag: TAG,
    portalTokens: true,
    readOnlyTokens: true,
    portalLinks: true,
    summary: "Redeem a portal link's token",
    description:
      "A link opens once: the portal calls this with its link's token before anything else. Answers a new token with the same read-only flag and scopes, the same `expiresAt` and the same minting key, and the school's id and name; the presented token is revoked in the same step, so the link opened again (browser history, a forwarded message) answers 401. Only a link's token (the one POST /v3/portal-sessions answered; read-only ones too) is redeemed, once: the session token it answers, or an API key, answers 403 FORBIDDEN. No body.",
    responses: {
      201: {
        description: "The new session; the presented token no longer works.",
        schema: redeemedSessionResponseSchema,
        example: { status: "success", result: REDEEMED_SESSION_EXAMPLE },
      },
      400: ["UNKNOWN_PARAMETER"],
      403: { codes: ["FORBIDDEN"], lead: "An API key, or a redeemed session's token: only a portal link's token is redeemed." },
    },
    async handler(req, env, _exec, rc) {
      await authenticate(req, env.DIRECTORY, rc);
      if (rc.portalSession === null) throw new ApiError("FORBIDDEN", "Only a portal session token (ps_…) can be redeemed; an API key needs no redeem.");
      rejectQuery(req);
      const s = await redeemPortalSession(env.DIRECTORY, rc.db.bind(rc), rc.portalSession.tokenHash);
      return success({ token: s.token, expiresAt: formatInstant(s.expiresAt), readOnly: s.readOnly, scopes: s.scopes, school: s.school }, { status: 201 });
    },
  },
  {
    method: "GET",
    path: "/v3/school",
    operationId: "getSchool",
    scopes: [],
    tag: SCHOOL_TAG,
    portalTokens: true,
    summary: "The credential's school",
    description:
      "The id and name of the school the credential (API key or portal session token) belongs to, the credential's scopes (docs/reference.md § Scopes) and when it stops working (an API key's expiry, `null` for none; a portal session's end). No scope needed.",
    responses: {
      200: { description: "The school.", schema: schoolResponseSchema, example: { status: "success", result: SCHOOL_EXAMPLE } },
      400: ["UNKNOWN_PARAMETER"],
    },
    async handler(req, env, _exec, rc) {
      const place = await authenticatePlace(req, env.DIRECTORY, rc);
      rejectQuery(req);
      const expiresAt = rc.portalSession?.expiresAt ?? rc.keyExpiresAt;
      return success({ id: place.schoolId, name: place.name, scopes: place.scopes, expiresAt: expiresAt === null ? null : formatInstant(expiresAt) });
    },
  },
];
