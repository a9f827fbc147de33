/**
 * Sign-in: the administrator pastes a school API key, or opens a portal link (the shell
 * takes its token, see main.tsx). A pasted key is checked with GET /v3/webhooks before it
 * is kept (sessionStorage, this tab only); a refused key shows the API's 401 message and is
 * not kept.
 */
import { useState } from "preact/hooks";
import { api, type Credential } from "../api";
import { ErrorAlert, type Problem } from "../components";

export function SignIn({ onSignedIn }: { onSignedIn: (credential: Credential) => void }) {
  const [key, setKey] = useState("");
  const [error, setError] = useState<Problem | null>(null);
  const [busy, setBusy] = useState(false);
  const submit = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    try {
      onSignedIn(await api.checkCredential(key.trim()));
    } catch (err) {
      setError(err as Problem);
    } finally {
      setBusy(false);
    }
  };
  return (
    <section aria-labelledby="view-title" class="narrow">
      <h1 id="view-title" tabIndex={-1}>
        Sign in
      </h1>
      <p>
        Open the portal link your school sent you, or paste your school's API key (it starts with <code>sk_</code>). Either stays in this browser tab only and
        is forgotten when you sign out or close the tab.
      </p>
      <form onSubmit={submit} noValidate>
        <div class="field">
          <label for="api-key">API key</label>
          <input
            id="api-key"
            type="password"
            class="mono"
            autoComplete="off"
            spellcheck={false}
            required
            aria-describedby="api-key-hint"
            value={key}
            onInput={(e) => setKey(e.currentTarget.value)}
          />
          <p id="api-key-hint" class="hint">
            Keys are minted by the service's operators. Use one of your own school.
          </p>
        </div>
        <ErrorAlert error={error} title="Sign-in failed" />
        <button type="submit" disabled={busy}>
          {busy ? "Checking…" : "Sign in"}
        </button>
      </form>
    </section>
  );
}
