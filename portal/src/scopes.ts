/**
 * What the tab's credential may do (docs/reference.md § Scopes), in the page's words: the
 * scopes GET /v3/school reports for the credential, or, from a server that reports none, what
 * its kind implies (a key: every scope; a portal session: the webhook operations and the
 * event feed, less `webhooks:write` when it is read-only). No DOM: unit-tested in test/http/.
 */
import { isScope, SCOPES, type Scope } from "../../src/lib/scopes";

/** What each scope lets the credential do, as a clause of `mayText`'s sentence. */
const SCOPE_WORDS: Record<Scope, string> = {
  "courses:read": "read courses",
  "courses:write": "change courses",
  "students:read": "read students' names and emails",
  "webhooks:read": "view webhooks",
  "webhooks:write": "change webhooks",
  "events:read": "read the event feed",
  portal: "create portal links",
};

/** What the scopes are read from: the reported list (null: none reported) and the portal session, if the credential is one. */
export interface ScopeSource {
  scopes: readonly string[] | null;
  session: { readOnly: boolean } | null;
}

/**
 * The scopes of a credential: the reported ones (names the page does not know are dropped), else
 * those its kind implies; `webhooks:write` never for a session the API marks read-only.
 */
export function effectiveScopes(c: ScopeSource): Set<Scope> {
  const implied: readonly Scope[] = c.session ? ["webhooks:read", "webhooks:write", "events:read"] : SCOPES;
  const scopes = new Set<Scope>(c.scopes ? c.scopes.filter(isScope) : implied);
  if (c.session?.readOnly) scopes.delete("webhooks:write");
  return scopes;
}

/**
 * The sentence the page shows of what the credential may do, its scopes in `SCOPES` order:
 * "This link may: view webhooks, change webhooks, read the event feed." (`kind` "link" for a
 * portal session, "key" for an API key); "This link may do nothing." when it has none.
 */
export function mayText(kind: "link" | "key", scopes: ReadonlySet<Scope>): string {
  const words = SCOPES.filter((s) => scopes.has(s)).map((s) => SCOPE_WORDS[s]);
  return words.length === 0 ? `This ${kind} may do nothing.` : `This ${kind} may: ${words.join(", ")}.`;
}
