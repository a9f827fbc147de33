/**
 * The webhook portal (docs/reference.md § "Webhook portal: GET /portal"): a single-page application
 * served by the Worker at /portal. Views are chosen by the URL's hash (`#/`, `#/new`,
 * `#/webhooks/{id}`, `#/webhooks/{id}/edit`), so the browser's back button works and no
 * server route is needed. A portal link (`/portal#token=ps_…`) signs the tab in: its token
 * leaves the address bar at once and is redeemed before anything else (a link opens once);
 * switching a signed-in tab to another school's link is asked first. No credential ever
 * stays in a URL; the header names the school the tab is signed in to and says what its
 * credential may do (its scopes); a view it may not use is not offered.
 */
import "uplot/dist/uPlot.min.css";
import "./styles.css";
import { render } from "preact";
import { useEffect, useRef, useState } from "preact/hooks";
import { ScopesProvider } from "./access";
import {
  ApiError,
  api,
  type Credential,
  type PortalSession,
  setSessionHandler,
  setUnauthorizedHandler,
  storeCredential,
  storedCredential,
  takeLinkToken,
} from "./api";
import { ErrorAlert, type Problem } from "./components";
import { formatInstant } from "./format";
import type { Flash } from "./navigation";
import { effectiveScopes, mayText } from "./scopes";
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

/** Why the tab is signed out, shown above the sign-in form. */
type SignedOut = { error: Problem; title?: string } | null;

/** The longest delay `setTimeout` takes (ms); a session ends within 7 days, well below it. */
const MAX_TIMEOUT_MS = 2 ** 31 - 1;

function App({ linkToken }: { linkToken: string | null }) {
  // A tab opened with a link keeps its sign-in until the link is redeemed (and, for another school, the switch accepted).
  const [credential, setCredential] = useState<Credential | null>(storedCredential());
  const [checkingLink, setCheckingLink] = useState(linkToken !== null);
  // A redeemed link of another school than the tab's: kept aside until the user chooses.
  const [switchTo, setSwitchTo] = useState<Credential | null>(null);
  const [route, setRoute] = useState<Route>(parseRoute(location.hash));
  const [flash, setFlash] = useState<Flash>(null);
  const [signedOut, setSignedOut] = useState<SignedOut>(null);
  const firstRender = useRef(true);
  // The sentence `go` asked to show after its navigation; any other navigation clears the flash.
  const pendingFlash = useRef<Flash>(null);

  const signIn = (c: Credential) => {
    storeCredential(c);
    setSignedOut(null);
    setFlash(null);
    setCredential(c);
  };
  const dropCredential = (why: SignedOut) => {
    storeCredential(null);
    setCredential(null);
    setSignedOut(why);
  };
  /**
   * Signs in with a portal link: its token is redeemed first (a link opens once; a refused
   * one says why). A tab signed in to another school asks before switching.
   */
  const openLink = async (token: string) => {
    const current = storedCredential();
    setSwitchTo(null);
    setCheckingLink(true);
    try {
      const redeemed = await api.redeemLink(token);
      if (current && current.school?.id !== redeemed.school?.id) setSwitchTo(redeemed);
      else signIn(redeemed);
    } catch (err) {
      const problem = err as Problem;
      // The API's 401 says it all in one sentence (used already, ended or revoked: src/http/auth.ts);
      // any other failure (the network, a 5xx) gets the title first.
      const title = problem instanceof ApiError && problem.status === 401 ? undefined : LINK_REFUSED;
      if (current) setFlash({ text: title ? `${title}: ${problem.message}` : problem.message, kind: "error" });
      else dropCredential({ error: problem, title });
    } finally {
      setCheckingLink(false);
    }
  };

  useEffect(() => {
    if (linkToken) void openLink(linkToken);
    const onHash = () => {
      // A portal link opened in a tab that already shows the portal.
      const token = takeLinkToken();
      setFlash(token ? null : pendingFlash.current);
      pendingFlash.current = null;
      // A link leads to the list (its fragment is gone from the address by now).
      setRoute(parseRoute(location.hash));
      if (token) void openLink(token);
    };
    window.addEventListener("hashchange", onHash);
    // A credential refused later (revoked or expired while the tab was open): back to the
    // sign-in form, saying why.
    setUnauthorizedHandler((err) => dropCredential({ error: err, title: "You were signed out" }));
    // The API says how the token's session stands on each answer: keep the page in step.
    setSessionHandler((session: PortalSession) =>
      setCredential((c) => {
        if (!c || (c.session?.expiresAt === session.expiresAt && c.session.readOnly === session.readOnly)) return c;
        const next = { ...c, session };
        storeCredential(next);
        return next;
      }),
    );
    return () => window.removeEventListener("hashchange", onHash);
  }, []);

  // A credential whose school or scopes the tab does not know yet (a tab signed in before they
  // were kept, a link's redeem that does not say its scopes): learn them for the header.
  const secret = credential?.secret;
  useEffect(() => {
    const stored = storedCredential();
    if (checkingLink || !stored || stored.secret !== secret || (stored.school && stored.scopes)) return;
    // A refusal signs the tab out through the 401 handler; anything else leaves the header as it is.
    void api.getSchool().then(
      ({ school, scopes }) =>
        setCredential((c) => {
          if (!c || c.secret !== stored.secret) return c;
          const next = { ...c, school, scopes: scopes ?? c.scopes };
          storeCredential(next);
          return next;
        }),
      () => undefined,
    );
  }, [secret, checkingLink]);

  // A portal session ends on its own: sign out at that instant, without waiting for a refusal.
  const expiresAt = credential?.session?.expiresAt;
  useEffect(() => {
    if (!expiresAt) return;
    const end = () =>
      dropCredential({
        error: new Error(`Your portal session ended at ${formatInstant(expiresAt)}. Ask your school's administrator for a new portal link.`),
        title: "Session ended",
      });
    const left = Date.parse(expiresAt) - Date.now();
    if (left <= 0) {
      end();
      return;
    }
    const timer = setTimeout(end, Math.min(left, MAX_TIMEOUT_MS));
    return () => clearTimeout(timer);
  }, [expiresAt]);

  // Each view change moves the focus to the new view's heading, so keyboard and screen reader
  // users start reading where the content changed.
  useEffect(() => {
    if (firstRender.current) {
      firstRender.current = false;
      return;
    }
    document.getElementById("view-title")?.focus();
  }, [route, credential?.secret]);

  const go = (hash: string, message: Flash = null) => {
    pendingFlash.current = message;
    navigate(hash);
  };
  const signOut = () => {
    const what = credential?.session ? "The portal link's token was" : "The key was";
    storeCredential(null);
    setCredential(null);
    go("#/", { text: `Signed out. ${what} removed from this tab.`, kind: "ok" });
  };
  const session = credential?.session ?? null;
  const scopes = effectiveScopes({ scopes: credential?.scopes ?? null, session });
  const readOnly = !scopes.has("webhooks:write");

  return (
    <>
      <header class="topbar">
        <p class="brand">
          <a href="#/">School webhooks</a> <span class="muted">portal</span>
        </p>
        {credential && (
          <div class="account">
            {credential.school && (
              <p class="school" id="school-name">
                <span class="muted">School:</span> <strong>{credential.school.name}</strong>
              </p>
            )}
            {session && (
              <p class="session" id="session-info">
                {readOnly && <span class="badge badge-off">Read-only</span>} Portal session ends{" "}
                <time dateTime={session.expiresAt}>{formatInstant(session.expiresAt)}</time>
              </p>
            )}
            <p class="scopes small" id="credential-scopes">
              {mayText(session ? "link" : "key", scopes)}
            </p>
            <button type="button" class="secondary" onClick={signOut}>
              Sign out
            </button>
          </div>
        )}
      </header>
      <main id="main">
        <div role="status" class={flash?.kind === "error" ? "flash flash-error" : "flash"}>
          {flash?.text ?? ""}
        </div>
        <ScopesProvider value={scopes}>
          {checkingLink ? (
            <p aria-busy="true">Signing in with the portal link…</p>
          ) : switchTo && credential ? (
            <SwitchSchool
              from={credential}
              to={switchTo}
              onSwitch={() => {
                setSwitchTo(null);
                signIn(switchTo);
                go("#/");
              }}
              onStay={() => setSwitchTo(null)}
            />
          ) : !credential ? (
            <>
              <ErrorAlert error={signedOut?.error ?? null} title={signedOut?.title} />
              <SignIn onSignedIn={signIn} />
            </>
          ) : !scopes.has("webhooks:read") ? (
            <NoWebhooksView may={mayText(session ? "link" : "key", scopes)} />
          ) : (route.view === "new" || route.view === "edit") && readOnly ? (
            <ReadOnlyView link={session !== null} />
          ) : route.view === "new" ? (
            <CreateWebhook />
          ) : route.view === "detail" ? (
            <WebhookDetail id={route.id} go={go} />
          ) : route.view === "edit" ? (
            <EditWebhook id={route.id} go={go} />
          ) : (
            <WebhookList />
          )}
        </ScopesProvider>
      </main>
    </>
  );
}

/** The title of a portal link that could not be redeemed for another reason than the API's 401. */
const LINK_REFUSED = "This portal link cannot be used";

/** Asks before a link of another school replaces the tab's sign-in. */
function SwitchSchool({ from, to, onSwitch, onStay }: { from: Credential; to: Credential; onSwitch: () => void; onStay: () => void }) {
  const fromName = from.school?.name ?? "another school";
  const toName = to.school?.name ?? "another school";
  return (
    <section aria-labelledby="view-title" class="narrow">
      <h1 id="view-title" tabIndex={-1}>
        Switch school?
      </h1>
      <p>
        This portal link is for <strong>{toName}</strong>. This tab is signed in to <strong>{fromName}</strong>. Switching signs it out of {fromName}.
      </p>
      <div class="actions">
        <button type="button" onClick={onSwitch}>
          Switch to {toName}
        </button>
        <button type="button" class="secondary" onClick={onStay}>
          Stay with {fromName}
        </button>
      </div>
    </section>
  );
}

/** What a credential without `webhooks:write` sees instead of a form that would change something. */
function ReadOnlyView({ link }: { link: boolean }) {
  return (
    <section aria-labelledby="view-title" class="narrow">
      <h1 id="view-title" tabIndex={-1}>
        Read-only access
      </h1>
      <p>This {link ? "portal link" : "key"} lets you look at the school's endpoints, their deliveries and statistics; it cannot change them.</p>
      <a href="#/">All endpoints</a>
    </section>
  );
}

/** What a credential without `webhooks:read` sees instead of any view: what it may do. */
function NoWebhooksView({ may }: { may: string }) {
  return (
    <section aria-labelledby="view-title" class="narrow">
      <h1 id="view-title" tabIndex={-1}>
        No access to webhooks
      </h1>
      <p>{may} It may not view the school's webhook endpoints: ask your school's administrator for a portal link or a key that may.</p>
    </section>
  );
}

// Taken before the first render, so that the token leaves the address bar at once.
const linkToken = takeLinkToken();
render(<App linkToken={linkToken} />, document.getElementById("app")!);
