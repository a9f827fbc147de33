/**
 * Scopes (docs/reference.md § Scopes): what an API key or a portal session may do. Each
 * operation declares the scopes it needs; a credential without one answers 403 FORBIDDEN.
 * Stored in the directory as the scope names joined by single spaces, in `SCOPES` order.
 */

/** Every scope, in their canonical order. */
export const SCOPES = ["courses:read", "courses:write", "students:read", "webhooks:read", "webhooks:write", "events:read", "portal"] as const;

/** One scope name. */
export type Scope = (typeof SCOPES)[number];

const KNOWN = new Set<string>(SCOPES);

/** Whether `name` is a scope. */
export function isScope(name: string): name is Scope {
  return KNOWN.has(name);
}

/**
 * Reads a stored or typed scope list (names separated by spaces or commas).
 * @returns the scopes in `SCOPES` order, each once, or `{ unknown }` naming the first word
 *   that is not a scope.
 */
export function parseScopes(text: string): Scope[] | { unknown: string } {
  const seen = new Set<Scope>();
  for (const word of text.split(/[\s,]+/)) {
    if (word === "") continue;
    if (!isScope(word)) return { unknown: word };
    seen.add(word);
  }
  return SCOPES.filter((s) => seen.has(s));
}

/** The stored form of a scope list: names in `SCOPES` order, each once, joined by one space. */
export function formatScopes(scopes: Iterable<Scope>): string {
  const set = new Set(scopes);
  return SCOPES.filter((s) => set.has(s)).join(" ");
}
