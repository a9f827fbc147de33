/**
 * The portal session operations (docs/reference.md § "Portal sessions"), each declared once: a server
 * holding the school's API key mints a short-lived `ps_` token and its portal link, or
 * revokes every token of the school. API keys only (no `portalTokens`: a portal token is
 * 403 FORBIDDEN). Order of answers: 401 / 403, then 400, then the write.
 */

import { authenticate } from "../http/auth";
import { parseBodyWith, readOptionalJson } from "../http/body";
import type { HeaderDoc, Operation } from "../http/operation";
import { rejectQuery } from "../http/request";
import { success } from "../http/respond";
import { formatInstant } from "../lib/time";
import { PORTAL_PATH } from "./headers";
import {
  createPortalSessionSchema,
  DEFAULT_SESSION_SECONDS,
  PORTAL_SESSION_EXAMPLE,
  portalSessionResponseSchema,
  revokedPortalSessionsResponseSchema,
} from "./schemas";
import { createPortalSession, revokePortalSessions } from "./sessions";

const TAG = {
  name: "Portal sessions",
  description: "Short-lived links to the webhook portal (GET /portal), for an administrator who does not hold the school's API key.",
};

/** The token is in the body: no cache may keep the answer. */
const noStore: Record<string, HeaderDoc> = {
  "Cache-Control": {
    description: "`no-store`: the answer carries a credential.",
    required: true,
    schema: { type: "string", enum: ["no-store"] },
    example: "no-store",
  },
};

/** The portal session operations. */
export const portalSessionOperations: Operation<Env>[] = [
  {
    method: "POST",
    path: "/v3/portal-sessions",
    operationId: "createPortalSession",
    tag: TAG,
    summary: "Mint a portal link",
    description: `A portal session token (\`ps_…\`) of the school and its link, \`<origin>/portal#token=ps_…\` (as Svix's app-portal links). The token works until \`expiresAt\` (default ${DEFAULT_SESSION_SECONDS} s) and only on the webhook operations (those that list the \`portalToken\` security scheme; a read-only token only their GETs): anything else answers 403 FORBIDDEN, an expired or revoked token 401. It is shown only in this answer; the service keeps its SHA-256 hash. API keys only: a portal token answers 403.`,
    request: {
      body: { schema: createPortalSessionSchema, description: "The session's length and mode; the body may be absent (the defaults apply).", required: false },
    },
    responses: {
      201: {
        description: "The new session.",
        schema: portalSessionResponseSchema,
        example: { status: "success", result: PORTAL_SESSION_EXAMPLE },
        headers: noStore,
      },
      400: ["VALIDATION_ERROR", "UNKNOWN_PARAMETER", "INVALID_JSON"],
    },
    /** The link's origin is the one the request reached (the Worker serves /portal itself). */
    async handler(req, env, _exec, rc) {
      const schoolId = await authenticate(req, env.DB, rc);
      rejectQuery(req);
      const body = parseBodyWith(
        createPortalSessionSchema,
        await readOptionalJson(req),
        "The body, if any, must be a JSON object: { expiresInSeconds?, readOnly? }.",
      );
      const session = await createPortalSession(env.DB, rc.db.bind(rc), schoolId, {
        expiresInSeconds: body.expiresInSeconds ?? DEFAULT_SESSION_SECONDS,
        readOnly: body.readOnly ?? false,
      });
      const url = `${new URL(req.url).origin}${PORTAL_PATH}#token=${session.token}`;
      return success(
        { token: session.token, url, expiresAt: formatInstant(session.expiresAt), readOnly: session.readOnly },
        { status: 201, headers: { "cache-control": "no-store" } },
      );
    },
  },
  {
    method: "DELETE",
    path: "/v3/portal-sessions",
    operationId: "revokePortalSessions",
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
      const schoolId = await authenticate(req, env.DB, rc);
      rejectQuery(req);
      return success({ revoked: await revokePortalSessions(env.DB, rc.db.bind(rc), schoolId) });
    },
  },
];
