/**
 * Portal sessions as zod schemas (docs/reference.md § "Portal sessions"): the body of POST
 * /v3/portal-sessions and the answers of both operations. The document is generated from
 * them; objects forbid undocumented fields.
 */
import { z } from "zod";
import { successEnvelope } from "../http/envelopes";
import { instantOutSchema } from "../lib/fields";
import { PORTAL_SCOPES, SCOPES } from "../lib/scopes";

/** Shortest portal session, in seconds. */
const MIN_SESSION_SECONDS = 60;
/** Longest portal session, in seconds (7 days). */
const MAX_SESSION_SECONDS = 604_800;
/** A portal session's length when the body does not say, in seconds (1 h). */
export const DEFAULT_SESSION_SECONDS = 3600;

const TOKEN_EXAMPLE = "ps_Hq3k2vTz8Jw5Yc1LmN0pQrStUvWxYzAbCdEfGhIjKlM";

/** The body of POST /v3/portal-sessions (every field optional; the body may be absent). */
export const createPortalSessionSchema = z
  .strictObject({
    expiresInSeconds: z
      .int({ error: `must be an integer from ${MIN_SESSION_SECONDS} to ${MAX_SESSION_SECONDS}` })
      .min(MIN_SESSION_SECONDS, `must be an integer from ${MIN_SESSION_SECONDS} to ${MAX_SESSION_SECONDS}`)
      .max(MAX_SESSION_SECONDS, `must be an integer from ${MIN_SESSION_SECONDS} to ${MAX_SESSION_SECONDS}`)
      .optional()
      .meta({
        description: `How long the token works, in seconds: ${MIN_SESSION_SECONDS} to ${MAX_SESSION_SECONDS} (7 days), default ${DEFAULT_SESSION_SECONDS}.`,
        example: 3600,
      }),
    readOnly: z.boolean({ error: "must be true or false" }).optional().meta({
      description:
        "`true`: the token may only read (the GET operations of its scope): its scopes are the `:read` ones only. Default `false`, or `true` when the session's scopes hold no `webhooks:write`.",
      example: false,
    }),
    scopes: z
      .array(z.enum(PORTAL_SCOPES as [string, ...string[]], { error: `must each be one of ${PORTAL_SCOPES.join(", ")}` }))
      .max(PORTAL_SCOPES.length * 2)
      .optional()
      .meta({
        description: `The session's scopes (docs/reference.md § Scopes), among ${PORTAL_SCOPES.map((s) => `\`${s}\``).join(", ")}: at most the calling key's (a scope the key lacks is 403 FORBIDDEN naming it); with \`readOnly: true\` only \`:read\` ones. Default: the key's scopes among these (with \`readOnly: true\`, its \`:read\` ones).`,
        example: ["webhooks:read", "events:read"],
      }),
  })
  .meta({
    id: "PortalSessionCreate",
    description: "A new portal session. Unknown fields are a 400 UNKNOWN_PARAMETER.",
    example: { expiresInSeconds: 3600, readOnly: false },
  });

/** A credential's scopes, as answers show them (docs/reference.md § Scopes). */
const scopesOutSchema = z.array(z.enum(SCOPES)).meta({ description: "The credential's scopes (docs/reference.md § Scopes), in their canonical order." });

/** A new portal session: the token (shown only here), the link to the portal, when it ends. */
const portalSessionSchema = z
  .strictObject({
    token: z
      .string()
      .regex(/^ps_[A-Za-z0-9_-]{43}$/)
      .meta({ description: "The token (`ps_` + 43 characters), shown only in this response; the service keeps only its SHA-256 hash." }),
    url: z.string().meta({
      format: "uri",
      description: "The portal link: `<origin>/portal#token=<token>`. The fragment never reaches a server; the page removes it from the address bar.",
    }),
    expiresAt: instantOutSchema.meta({ description: "When the token stops working (401 from then on)." }),
    readOnly: z.boolean().meta({ description: "Whether the token may only read." }),
    scopes: scopesOutSchema,
  })
  .meta({
    id: "PortalSession",
    description: "A portal session token and its link.",
    example: {
      token: TOKEN_EXAMPLE,
      url: `https://api.example.com/portal#token=${TOKEN_EXAMPLE}`,
      expiresAt: "2026-09-07T09:00:00.000Z",
      readOnly: false,
      scopes: ["webhooks:read", "webhooks:write", "events:read"],
    },
  });

const SCHOOL = { id: "sch_1", name: "Lycée Pasteur" };

/** A school as GET /v3/school and the redeem show it. */
const schoolSchema = z
  .strictObject({
    id: z.string().meta({ description: "The school's id." }),
    name: z.string().meta({ description: "The school's name, as the portal's header shows it." }),
  })
  .meta({ id: "School", description: "The school a credential belongs to.", example: SCHOOL });

/** A redeemed portal session: a new token with the presented one's scope and expiry, and its school. */
const redeemedSessionSchema = z
  .strictObject({
    token: portalSessionSchema.shape.token,
    expiresAt: instantOutSchema.meta({ description: "When the new token stops working: the presented token's end." }),
    readOnly: z.boolean().meta({ description: "Whether the new token may only read: as the presented one." }),
    scopes: scopesOutSchema.meta({ description: "The new token's scopes: the presented one's." }),
    school: schoolSchema,
  })
  .meta({
    id: "RedeemedPortalSession",
    description: "The portal session that replaces the presented token.",
    example: {
      token: TOKEN_EXAMPLE,
      expiresAt: "2026-09-07T09:00:00.000Z",
      readOnly: false,
      scopes: ["webhooks:read", "webhooks:write", "events:read"],
      school: schoolSchema.meta()!.example,
    },
  });

/** GET /v3/school: the school, and what the calling credential may do there. */
const credentialSchoolSchema = schoolSchema
  .extend({
    scopes: scopesOutSchema.meta({ description: "The calling credential's scopes (a read-only portal session's: its `:read` ones)." }),
    expiresAt: instantOutSchema
      .nullable()
      .meta({ description: "When the calling credential stops working: an API key's expiry (`null`: it does not expire), a portal session's end." }),
  })
  .meta({
    id: "CredentialSchool",
    description: "The school a credential belongs to, and the credential's scopes and end.",
    example: { ...SCHOOL, scopes: ["courses:read", "students:read"], expiresAt: null },
  });

/** The 201 of POST /v3/portal-sessions/redeem. */
export const redeemedSessionResponseSchema = successEnvelope("RedeemedPortalSessionResponse", redeemedSessionSchema, "The new portal session.");

/** The 200 of GET /v3/school. */
export const schoolResponseSchema = successEnvelope("SchoolResponse", credentialSchoolSchema, "The credential's school, scopes and end.");

/** The example of GET /v3/school's answer. */
export const SCHOOL_EXAMPLE = credentialSchoolSchema.meta()!.example;

/** The example of the redeem's answer. */
export const REDEEMED_SESSION_EXAMPLE = redeemedSessionSchema.meta()!.example;

/** The 201 of POST /v3/portal-sessions. */
export const portalSessionResponseSchema = successEnvelope("PortalSessionResponse", portalSessionSchema, "The new portal session.");

/** The 200 of DELETE /v3/portal-sessions. */
export const revokedPortalSessionsResponseSchema = successEnvelope(
  "PortalSessionsRevokedResponse",
  z
    .strictObject({
      revoked: z.int().min(0).meta({ description: "How many of the school's tokens were still valid (neither expired nor revoked) and are now revoked." }),
    })
    .meta({ id: "PortalSessionsRevoked", example: { revoked: 2 } }),
  "Every token of the school is revoked.",
);

/** The example of POST /v3/portal-sessions's answer. */
export const PORTAL_SESSION_EXAMPLE = portalSessionSchema.meta()!.example;
