/**
 * The document's prose about the API as a whole (docs/reference.md § "Conventions", § "Error codes").
 */
import { DEFAULT_EVENT_BYTES_PER_DAY } from "../lib/limits";

/**
 * The document's `info.description`: the conventions, then the table of error codes.
 *
 * @param fallbackKey the root key that describes unmatched requests.
 * @param errorTable the rows of the error table (`| status | code | when |`), from the catalogue.
 */
export function conventions(fallbackKey: string, errorTable: string): string {
  return `The school's courses and webhooks, at the edge. This document is generated from the zod schemas the service validates with (@asteasolutions/zod-to-openapi); the test suite checks every response against it.

## Conventions

- **Authentication**: \`Authorization: Bearer <credential>\`. A credential belongs to exactly one school; every read and write is scoped to it, and a resource of another school is indistinguishable from a missing one. Two kinds: API keys \`sk_…\` (issued by the service's operators), for every operation their scopes allow (security scheme \`bearerAuth\`); portal session tokens \`ps_…\` (\`POST /v3/portal-sessions\`), only for the operations that list the \`portalToken\` scheme (the webhook ones, \`GET /v3/school\` and \`POST /v3/portal-sessions/redeem\`), and with a read-only token only their GETs and the redeem. A credential works from the moment it is minted; a revocation applies to every request from the moment it commits (revoking an API key revokes the portal sessions it minted): credentials are always checked on the directory's primary database, course reads included. Missing, malformed, unknown, expired or revoked credential: \`401 UNAUTHORIZED\` (a header without the \`Bearer \` scheme, or with nothing after it, gets a message saying so; an unknown and a revoked key get the same message); a valid portal token outside its reach, or a credential without a scope the operation needs: \`403 FORBIDDEN\` (both checked before any 400). Answers to a portal token in scope carry \`x-portal-session-expires-at\` and \`x-portal-session-read-only\`.
- **Scopes**: each API key and portal session carries scopes (\`courses:read\`, \`courses:write\`, \`students:read\`, \`webhooks:read\`, \`webhooks:write\`, \`events:read\`, \`portal\`), fixed at its creation; each operation lists those it needs in its security requirements and description, and \`includeStudents=true\` or a \`studentId\` filter also needs \`students:read\`. A missing one answers \`403 FORBIDDEN\` naming it. A portal session only narrows its key's scopes; a registration records its creating key's, and without \`courses:read\` its course events are delivered thin (the feed likewise for its reader). \`GET /v3/school\` shows the calling credential's scopes and end. An API key may expire: from then on \`401\`.
- **Success envelope**: \`{ "status": "success", "result": … }\`; lists add \`"pagination": { "page", "limit", "hasMore" }\` (the course listing and search add \`nextCursor\`, the \`cursor\` of the next page: a walk by cursor neither skips nor repeats a course that stays unchanged under concurrent writes; and \`changesCursor\`, the school's change position at that read; \`GET /v3/courses/changes\` pages by cursor only: \`{ "nextCursor", "hasMore" }\`).
- **Error envelope**, with a real HTTP status: \`{ "status": "error", "code", "message", "details"?, "requestId" }\`; \`details\` lists every problem found, each \`{ "parameter" | "path", "message" }\`.
- **Headers**: every response carries \`x-request-id\` and \`Server-Timing\` (\`db;dur=<ms in D1>\`, \`total;dur=<ms>\`); every \`/v3\` answer, errors included, \`Cache-Control: no-store\` (answers may carry secrets). Send your own \`x-request-id\` (1–128 characters \`[A-Za-z0-9_.:-]\`) to have it echoed.
- **Instants** are written as ISO 8601 UTC with milliseconds (\`2026-09-07T08:00:00.000Z\`). Instants read from clients must carry a zone (\`Z\` or \`±hh:mm\`); in a query string a \`+\` that arrived as a space before \`hh:mm\` is read as \`+\`.
- **Query strings** carry strings: booleans are \`true\`, \`false\`, \`1\` or \`0\`; integers are decimal digits; id lists are comma-separated. Anything else is a 400.
- **Ids** are opaque strings of 1–64 characters \`[A-Za-z0-9_-]\`; minted ids carry a type prefix (\`crs_\`, \`wh_\`, \`evt_\`) and a time-sortable part.
- **Unknown** query parameters and body fields are rejected: \`400 UNKNOWN_PARAMETER\`, naming the accepted ones (and a close match).
- **Rate limit**: each credential (API key or portal token) may make 600 requests per 60 s; all portal tokens of one school share one counter (minting tokens does not multiply the limit); requests without a valid one are counted per client IP (an IPv6 client by its /64, and by its /48 at 16 times the limit: the stricter decides). Counters are kept per Cloudflare location. A request with an unknown credential costs at most one small database read: its body is parsed, and sent to the database, only once the credential is known. Beyond it: \`429 RATE_LIMITED\` with \`Retry-After\` (seconds). While the limiter is enabled every response carries \`RateLimit-Policy: "default";q=<limit>;w=60\`.
- **Event quota**: a school's course writes may publish and store ${DEFAULT_EVENT_BYTES_PER_DAY.toLocaleString("en-US")} bytes per UTC day (the UTF-8 bytes of the event bodies as delivered, plus the rows a write stores with their indexes: docs/reference.md § Event quota; the operator may set another quota). The write that would pass it answers \`429 EVENT_QUOTA_EXCEEDED\` with \`Retry-After\` (the seconds until the next UTC day) and writes nothing, no event either; reads, webhook operations and idempotent replays of accepted writes keep working.
- **Read consistency**: course reads may be served by a nearby read replica, a few seconds behind. Every course response that reached the database carries \`x-d1-bookmark\`; send the latest one you received back in \`x-d1-bookmark\` to read data at least that fresh (your own writes included). A malformed bookmark is a \`400 INVALID_PARAMETER\` naming the header.
- **Idempotent creation**: \`POST /v3/courses\` and \`POST /v3/webhooks\` accept \`Idempotency-Key\` (1–255 printable ASCII). For 24 h the same key, school and body answer exactly as the first request (plus \`Idempotent-Replayed: true\`) without writing again, also when two race; another body is \`422 IDEMPOTENCY_KEY_MISMATCH\`.
- **Versions**: a course's \`version\` grows by one per committed change; \`GET /v3/courses/{id}\`, \`POST /v3/courses\` and \`PATCH /v3/courses/{id}\` send it as \`ETag\`, and a PATCH with \`If-Match\` naming another version answers \`412 PRECONDITION_FAILED\` without writing.
- **Browser clients**: responses carry \`Access-Control-Expose-Headers\` naming the headers above.
- A path that matches no operation answers \`404 NOT_FOUND\`; a known path with another method answers \`405 METHOD_NOT_ALLOWED\` with an \`allow\` header (both described under \`${fallbackKey}\` at the root of this document).

## Error codes

| status | code | when |
|---|---|---|
${errorTable}
`;
}
