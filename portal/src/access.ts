/**
 * What the tab's credential may do (docs/reference.md § "Webhook portal"): with a read-only portal
 * token the page offers no action that changes anything. The shell (main.tsx) provides it;
 * each view that offers a change reads it. A module of its own, so that the views need not
 * import the shell that imports them.
 */
import { createContext } from "preact";
import { useContext } from "preact/hooks";

const ReadOnly = createContext(false);

/** Provides the tab's mode to the views below it. */
export const ReadOnlyProvider = ReadOnly.Provider;

/** Whether the tab's credential may only read (a read-only portal token). */
export function useReadOnly(): boolean {
  return useContext(ReadOnly);
}
