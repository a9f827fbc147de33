/**
 * The document's prose about the API as a whole (API.md § "Conventions", § "Error codes").
 */

/**
 * The document's `info.description`: the conventions, then the table of error codes.
 *
 * @param fallbackKey the root key that describes unmatched requests.
 * @param errorTable the rows of the error table (`| status | code | when |`), from the catalogue.
 */
export function conventions(fallbackKey: string, errorTable: string): string {
  return `The school's courses and webhooks, at the edge. This document is generated from the zod schemas the service validates with (@asteasolutions/zod-to-openapi); the test suite checks every response against it.

## Conventions

- **Authentication**: \`Authorization: Bearer <api key>\`. Keys start with \`sk_\` (\`sk_live_…\` for operators, \`sk_test_…\` in demo data). A key belongs to exactly one school; every read and write is scoped to it, and a resource of another school is indistinguishable from a missing one. Missing, malformed, unknown or revoked key: \`401 UNAUTHORIZED\` (checked before any 400).
- **Success envelope**: \`{ "status": "success", "result": … }\`; lists add \`"pagination": { "page", "limit", "hasMore" }\`.
- **Error envelope**, with a real HTTP status: \`{ "status": "error", "code", "message", "details"?, "requestId" }\`; \`details\` lists every problem found, each \`{ "parameter" | "path", "message" }\`.
- **Headers**: every response carries \`x-request-id\` and \`Server-Timing\` (\`db;dur=<ms in D1>\`, \`total;dur=<ms>\`). Send your own \`x-request-id\` (1–128 characters \`[A-Za-z0-9_.:-]\`) to have it echoed.
- **Instants** are written as ISO 8601 UTC with milliseconds (\`2026-09-07T08:00:00.000Z\`). Instants read from clients must carry a zone (\`Z\` or \`±hh:mm\`); in a query string a \`+\` that arrived as a space before \`hh:mm\` is read as \`+\`.
- **Query strings** carry strings: booleans are \`true\`, \`false\`, \`1\` or \`0\`; integers are decimal digits; id lists are comma-separated. Anything else is a 400.
- **Ids** are opaque strings of 1–64 characters \`[A-Za-z0-9_-]\`; minted ids carry a type prefix (\`crs_\`, \`wh_\`, \`evt_\`) and a time-sortable part.
- **Unknown** query parameters and body fields are rejected: \`400 UNKNOWN_PARAMETER\`, naming the accepted ones (and a close match).
- A path that matches no operation answers \`404 NOT_FOUND\`; a known path with another method answers \`405 METHOD_NOT_ALLOWED\` with an \`allow\` header (both described under \`${fallbackKey}\` at the root of this document).

## Error codes

| status | code | when |
|---|---|---|
${errorTable}
`;
}
