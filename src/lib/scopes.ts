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

/**
 * A stored scope list (`formatScopes`' form) as the scopes it grants, in `SCOPES` order; a word
 * that is no scope of this version grants nothing.
 */
export function storedScopes(text: string): Scope[] {
  const words = new Set(text.split(" "));
  return SCOPES.filter((s) => words.has(s));
}

/**
 * Whether a credential with `scopes` may see course records (docs/reference.md § Scopes:
 * `courses:read`): in deliveries, the events feed and receivers' answers in the delivery log.
 * `undefined` (no credential resolved) may not.
 */
export const readsCourses = (scopes: readonly Scope[] | undefined): boolean => scopes?.includes("courses:read") ?? false;

/** Whether `scope` only reads (`…:read`): what a read-only portal session keeps of its list. */
export const isReadScope = (scope: Scope): boolean => scope.endsWith(":read");

/**
 * The scopes a portal session may carry: those of the operations portal tokens may call
 * (src/http/operation.ts `portalTokens`), and `courses:read`, which lets the events feed show
 * it course records (the course operations take API keys only). A session's are at most its
 * key's among these.
 */
export const PORTAL_SCOPES: readonly Scope[] = ["courses:read", "webhooks:read", "webhooks:write", "events:read"];

/**
 * What a portal session may do: its stored scopes (`text`), and of them only the `:read` ones
 * when it is read-only (docs/reference.md § Scopes), sessions stored before scopes included.
 */
export const sessionScopes = (text: string, readOnly: boolean): Scope[] => storedScopes(text).filter((s) => !readOnly || isReadScope(s));
