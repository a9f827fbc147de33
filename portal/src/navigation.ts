/**
 * What the views pass to the application shell (main.tsx) when they move the user on: the
 * next view's hash and a sentence for the live region. A module of its own, so that the
 * views need not import the shell that imports them.
 */

/** A sentence for the live region, kept across one view change ("Endpoint deleted", …). */
export type Flash = { text: string; kind: "ok" | "error" } | null;

/** Goes to the view of `hash`, announcing `flash` there. */
export type Go = (hash: string, flash?: Flash) => void;
