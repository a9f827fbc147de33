/**
 * The webhook portal (API.md § "Webhook portal: GET /portal"): a single-page application
 * served by the Worker at /portal. Views are chosen by the URL's hash (`#/`, `#/new`,
 * `#/webhooks/{id}`, `#/webhooks/{id}/edit`), so the browser's back button works and no
 * server route is needed; the API key never appears in a URL.
 */
import "uplot/dist/uPlot.min.css";
import "./styles.css";
import { render } from "preact";
import { useEffect, useRef, useState } from "preact/hooks";
import { type ApiError, setUnauthorizedHandler, storedKey, storeKey } from "./api";
import { ErrorAlert } from "./components";
import type { Flash } from "./navigation";
import { SignIn } from "./views/SignIn";
import { WebhookDetail } from "./views/WebhookDetail";
import { CreateWebhook, EditWebhook } from "./views/WebhookForm";
import { WebhookList } from "./views/WebhookList";

/** A parsed hash route. */
export type Route = { view: "list" } | { view: "new" } | { view: "detail"; id: string } | { view: "edit"; id: string };

/** Reads `location.hash`; anything unknown is the list. */
export function parseRoute(hash: string): Route {
  const m = /^#\/webhooks\/([A-Za-z0-9_-]{1,64})(\/edit)?$/.exec(hash);
  if (m) return m[2] ? { view: "edit", id: m[1]! } : { view: "detail", id: m[1]! };
  if (hash === "#/new") return { view: "new" };
  return { view: "list" };
}

/** Goes to a view (a hash change, so it is a history entry). */
export function navigate(hash: string): void {
  if (location.hash === hash) window.dispatchEvent(new HashChangeEvent("hashchange"));
  else location.hash = hash;
}

function App() {
  const [key, setKey] = useState<string | null>(storedKey());
  const [route, setRoute] = useState<Route>(parseRoute(location.hash));
  const [flash, setFlash] = useState<Flash>(null);
  const [signedOutBecause, setSignedOutBecause] = useState<ApiError | null>(null);
  const firstRender = useRef(true);
  // The sentence `go` asked to show after its navigation; any other navigation clears the flash.
  const pendingFlash = useRef<Flash>(null);

  useEffect(() => {
    const onHash = () => {
      setFlash(pendingFlash.current);
      pendingFlash.current = null;
      setRoute(parseRoute(location.hash));
    };
    window.addEventListener("hashchange", onHash);
    // A key refused later (revoked while the tab was open): back to the sign-in form, saying why.
    setUnauthorizedHandler((err) => {
      storeKey(null);
      setKey(null);
      setSignedOutBecause(err);
    });
    return () => window.removeEventListener("hashchange", onHash);
  }, []);

  // Each view change moves the focus to the new view's heading, so keyboard and screen reader
  // users start reading where the content changed.
  useEffect(() => {
    if (firstRender.current) {
      firstRender.current = false;
      return;
    }
    document.getElementById("view-title")?.focus();
  }, [route, key]);

  const signIn = (k: string) => {
    storeKey(k);
    setSignedOutBecause(null);
    setFlash(null);
    setKey(k);
  };
  const go = (hash: string, message: Flash = null) => {
    pendingFlash.current = message;
    navigate(hash);
  };
  const signOut = () => {
    storeKey(null);
    setKey(null);
    go("#/", { text: "Signed out. The key was removed from this tab.", kind: "ok" });
  };

  return (
    <>
      <header class="topbar">
        <p class="brand">
          <a href="#/">School webhooks</a> <span class="muted">portal</span>
        </p>
        {key && (
          <button type="button" class="secondary" onClick={signOut}>
            Sign out
          </button>
        )}
      </header>
      <main id="main">
        <div role="status" class={flash?.kind === "error" ? "flash flash-error" : "flash"}>
          {flash?.text ?? ""}
        </div>
        {!key ? (
          <>
            <ErrorAlert error={signedOutBecause} title="You were signed out" />
            <SignIn onSignedIn={signIn} />
          </>
        ) : route.view === "new" ? (
          <CreateWebhook />
        ) : route.view === "detail" ? (
          <WebhookDetail id={route.id} go={go} />
        ) : route.view === "edit" ? (
          <EditWebhook id={route.id} go={go} />
        ) : (
          <WebhookList />
        )}
      </main>
    </>
  );
}

render(<App />, document.getElementById("app")!);
