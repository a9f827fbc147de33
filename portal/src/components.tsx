/**
 * Small building blocks shared by the views: the error box, the one-time secret with its copy
 * button, the modal dialog, the registration status.
 */
import type { ComponentChildren } from "preact";
import { useEffect, useRef, useState } from "preact/hooks";
import { ApiError, type Webhook } from "./api";
import { formatInstant } from "./format";

/** What a view keeps of a failed call: an ApiError, or any other error turned into a sentence. */
export type Problem = ApiError | Error;

/**
 * An error shown as the API said it: its `message`, then each of `details`, the code and the
 * request id (for a support ticket). `role="alert"` makes screen readers announce it.
 */
export function ErrorAlert({ error, title }: { error: Problem | null; title?: string }) {
  if (!error) return null;
  const api = error instanceof ApiError ? error : null;
  return (
    <div class="error" role="alert">
      {title && <strong>{title}: </strong>}
      <span class="error-message">{error.message}</span>
      {api && api.details.length > 0 && (
        <ul>
          {api.details.map((d) => (
            <li>
              {(d.parameter ?? d.path) ? <code>{d.parameter ?? d.path}</code> : null} {d.message}
            </li>
          ))}
        </ul>
      )}
      {api && api.status > 0 && (
        <p class="muted small">
          {api.status} {api.code}
          {api.requestId ? ` · request ${api.requestId}` : ""}
        </p>
      )}
    </div>
  );
}

/**
 * A secret shown once (creation, rotation), in a read-only field with a copy button — or,
 * with `publicKey`, a `v1a` registration's public key, which the endpoint's page shows at any
 * time. Copy failures (clipboard refused) select the text and say how to copy it by hand.
 */
export function SecretReveal({
  secret,
  label,
  publicKey = false,
  children,
}: {
  secret: string;
  label: string;
  publicKey?: boolean;
  children?: ComponentChildren;
}) {
  const what = publicKey ? "public key" : "secret";
  const [copyState, setCopyState] = useState<"" | "copied" | "failed">("");
  const input = useRef<HTMLInputElement>(null);
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(secret);
      setCopyState("copied");
    } catch {
      input.current?.select();
      setCopyState("failed");
    }
  };
  return (
    <section class="secret" aria-labelledby="secret-heading">
      <h2 id="secret-heading">{label}</h2>
      <p>
        {publicKey ? (
          <>
            Copy this public key into your receiver's configuration: it verifies the <code>v1a</code> signature (ed25519, Standard Webhooks) in the{" "}
            <code>webhook-signature</code> header of every delivery, and cannot sign one. The endpoint's page shows it at any time.
          </>
        ) : (
          <>
            <strong>This secret is shown only now.</strong> Copy it into your receiver's configuration: it verifies the <code>webhook-signature</code> header of
            every delivery (Standard Webhooks).
          </>
        )}
      </p>
      {children}
      <div class="secret-row">
        <label for="secret-value">{publicKey ? "Public key" : "Signing secret"}</label>
        <input id="secret-value" class="mono" type="text" readOnly value={secret} onFocus={(e) => e.currentTarget.select()} />
        <button type="button" onClick={copy}>
          Copy {what}
        </button>
      </div>
      <p role="status" class="small">
        {copyState === "copied"
          ? `${publicKey ? "Public key" : "Secret"} copied to the clipboard.`
          : copyState === "failed"
            ? `The browser refused the clipboard: the ${what} is selected, press Ctrl+C (⌘C) to copy it.`
            : ""}
      </p>
    </section>
  );
}

/**
 * A modal `<dialog>` (native: focus moves into it and is kept there, Escape closes it).
 * `onClose` runs however it is closed.
 */
export function Dialog({ title, onClose, children }: { title: string; onClose: () => void; children: ComponentChildren }) {
  const ref = useRef<HTMLDialogElement>(null);
  useEffect(() => {
    const dialog = ref.current!;
    if (!dialog.open) dialog.showModal();
    const closed = () => onClose();
    dialog.addEventListener("close", closed);
    return () => {
      dialog.removeEventListener("close", closed);
      if (dialog.open) dialog.close();
    };
  }, []);
  return (
    <dialog ref={ref} aria-labelledby="dialog-title">
      <h2 id="dialog-title">{title}</h2>
      {children}
    </dialog>
  );
}

/** Why a registration is disabled, in a word or two (`disabledReason`). */
const DISABLED_WHY = { manual: "manually", failing: "failing", gone: "receiver gone", receiver: "receiver asked" } as const;

/**
 * "Enabled", "Disabled (manually)", "Disabled (failing) since …", "Disabled (receiver
 * gone) since …" or "Disabled (receiver asked) since …", then "Failing since …" while its
 * attempts keep failing (`failingSince`), in words, not only in colour.
 */
export function StatusBadge({ webhook }: { webhook: Webhook }) {
  const failing = webhook.failingSince ? <span class="badge badge-warn">Failing since {formatInstant(webhook.failingSince)}</span> : null;
  if (webhook.enabled !== false) {
    return (
      <>
        <span class="badge badge-ok">Enabled</span>
        {failing}
      </>
    );
  }
  const why = DISABLED_WHY[webhook.disabledReason ?? "manual"];
  return (
    <>
      <span class="badge badge-off">
        Disabled ({why}){webhook.disabledAt ? ` since ${formatInstant(webhook.disabledAt)}` : ""}
      </span>
      {failing}
    </>
  );
}

/** The registration's subscription in words. */
export function eventsText(events: string[]): string {
  return events.length === 1 && events[0] === "*" ? "All events" : events.join(", ");
}
