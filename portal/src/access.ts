/**
 * What the tab's credential may do (docs/reference.md § "Webhook portal", § Scopes): its scopes
 * (portal/src/scopes.ts). Without `webhooks:write` (a read-only portal token, a key or link
 * without it) the page offers no action that changes anything. The shell (main.tsx) provides
 * it; each view that offers a change reads it. A module of its own, so that the views need
 * not import the shell that imports them.
 */
import { createContext } from "preact";
import { useContext } from "preact/hooks";
import type { Scope } from "../../src/lib/scopes";

const Scopes = createContext<ReadonlySet<Scope>>(new Set());

/** Provides the tab's scopes to the views below it. */
export const ScopesProvider = Scopes.Provider;

/** Whether the tab's credential may only read webhooks (it lacks `webhooks:write`). */
export function useReadOnly(): boolean {
  return !useContext(Scopes).has("webhooks:write");
}
