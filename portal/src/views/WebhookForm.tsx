/**
 * Create (POST /v3/webhooks, then the secret shown once) and edit (PATCH /v3/webhooks/{id},
 * only the fields changed) a registration. One form serves both. The browser's own
 * validation is off (`noValidate`): the API is the one judge of a URL (its URL policy), and
 * its message is what the administrator sees.
 */
import { useEffect, useRef, useState } from "preact/hooks";
import { api, type CreatedWebhook, type EventType, type Webhook } from "../api";
import { ErrorAlert, type Problem, SecretReveal } from "../components";
import type { Go } from "../navigation";

/** The event catalog (GET /v3/event-types), or the error that kept it away. */
function useEventCatalog(): { types: EventType[] | null; error: Problem | null } {
  const [types, setTypes] = useState<EventType[] | null>(null);
  const [error, setError] = useState<Problem | null>(null);
  useEffect(() => {
    api.eventTypes().then(setTypes, setError);
  }, []);
  return { types, error };
}

/** The event type of POST …/test: delivered to the one registration tested, never subscribed to. */
const TEST_EVENT = "webhook.test";

/** What the form edits. `all` is the subscription `["*"]`. */
interface FormValue {
  url: string;
  description: string;
  all: boolean;
  selected: string[];
}

function WebhookFields({ value, onChange, catalog }: { value: FormValue; onChange: (v: FormValue) => void; catalog: ReturnType<typeof useEventCatalog> }) {
  // The catalog's types, plus any the registration already has that the catalog lacks; not
  // `webhook.test`, which no registration subscribes to (a test reaches its endpoint anyway).
  const known = [...new Set([...(catalog.types ?? []).map((t) => t.type).filter((t) => t !== TEST_EVENT), ...value.selected])];
  const describe = (type: string) => catalog.types?.find((t) => t.type === type)?.description;
  const toggle = (type: string, on: boolean) => onChange({ ...value, selected: on ? [...value.selected, type] : value.selected.filter((t) => t !== type) });
  return (
    <>
      <div class="field">
        <label for="wh-url">Endpoint URL</label>
        <input
          id="wh-url"
          type="url"
          class="mono"
          required
          aria-describedby="wh-url-hint"
          value={value.url}
          onInput={(e) => onChange({ ...value, url: e.currentTarget.value })}
        />
        <p id="wh-url-hint" class="hint">
          An https URL of your receiver, reachable from the internet. Events are POSTed to it, signed.
        </p>
      </div>
      <div class="field">
        <label for="wh-description">Description (optional)</label>
        <input id="wh-description" type="text" value={value.description} onInput={(e) => onChange({ ...value, description: e.currentTarget.value })} />
      </div>
      <fieldset>
        <legend>Events to receive</legend>
        <div class="choice">
          <input type="radio" id="events-all" name="events-mode" checked={value.all} onChange={() => onChange({ ...value, all: true })} />
          <label for="events-all">All event types, including those added later</label>
        </div>
        <div class="choice">
          <input type="radio" id="events-some" name="events-mode" checked={!value.all} onChange={() => onChange({ ...value, all: false })} />
          <label for="events-some">Only the event types ticked below</label>
        </div>
        <fieldset class="nested" disabled={value.all}>
          <legend>Event types</legend>
          <p class="hint">Test events (Send test event) reach the endpoint whatever is ticked.</p>
          <ErrorAlert error={catalog.error} title="The event catalog could not be loaded" />
          {catalog.types === null && !catalog.error && <p aria-busy="true">Loading the event catalog…</p>}
          {known.map((type) => (
            <div class="choice" key={type}>
              <input type="checkbox" id={`type-${type}`} checked={value.selected.includes(type)} onChange={(e) => toggle(type, e.currentTarget.checked)} />
              <label for={`type-${type}`}>
                <code>{type}</code>
                {describe(type) ? <span class="muted"> — {describe(type)}</span> : null}
              </label>
            </div>
          ))}
        </fieldset>
      </fieldset>
    </>
  );
}

const events = (v: FormValue) => (v.all ? ["*"] : v.selected);

/** A fresh Idempotency-Key (1–255 printable ASCII). */
const newIdempotencyKey = () => (crypto.randomUUID ? crypto.randomUUID() : `${Date.now()}-${Math.random().toString(36).slice(2)}`);

/** `#/new`: the form, then the created registration's secret, shown once. */
export function CreateWebhook() {
  const catalog = useEventCatalog();
  const [value, setValue] = useState<FormValue>({ url: "", description: "", all: true, selected: [] });
  const [error, setError] = useState<Problem | null>(null);
  const [busy, setBusy] = useState(false);
  const [created, setCreated] = useState<CreatedWebhook | null>(null);
  // One Idempotency-Key per distinct body: a double submit creates one registration, and a
  // corrected body is a new request (the same key with another body would be a 422).
  const idem = useRef<{ body: string; key: string } | null>(null);

  const submit = async (e: Event) => {
    e.preventDefault();
    const body = { url: value.url.trim(), events: events(value), ...(value.description.trim() ? { description: value.description.trim() } : {}) };
    const text = JSON.stringify(body);
    if (idem.current?.body !== text) idem.current = { body: text, key: newIdempotencyKey() };
    setBusy(true);
    setError(null);
    try {
      setCreated(await api.createWebhook(body, idem.current.key));
    } catch (err) {
      setError(err as Problem);
    } finally {
      setBusy(false);
    }
  };

  useEffect(() => {
    if (created) document.getElementById("view-title")?.focus();
  }, [created]);

  if (created) {
    return (
      <section aria-labelledby="view-title" class="narrow">
        <h1 id="view-title" tabIndex={-1}>
          Endpoint created
        </h1>
        <p>
          Events now go to <span class="mono">{created.url}</span> (id <code>{created.id}</code>).
        </p>
        <SecretReveal secret={created.secret} label="Its signing secret" />
        <p>
          <a class="button" href={`#/webhooks/${created.id}`}>
            I have saved the secret: open the endpoint
          </a>
        </p>
      </section>
    );
  }
  return (
    <section aria-labelledby="view-title" class="narrow">
      <p class="crumbs">
        <a href="#/">All endpoints</a>
      </p>
      <h1 id="view-title" tabIndex={-1}>
        Add an endpoint
      </h1>
      <form onSubmit={submit} noValidate>
        <WebhookFields value={value} onChange={setValue} catalog={catalog} />
        <ErrorAlert error={error} title="The endpoint was not created" />
        <div class="actions">
          <button type="submit" disabled={busy}>
            {busy ? "Creating…" : "Create endpoint"}
          </button>
          <a href="#/">Cancel</a>
        </div>
      </form>
    </section>
  );
}

/** `#/webhooks/{id}/edit`: URL, description and events; only what changed is sent. */
export function EditWebhook({ id, go }: { id: string; go: Go }) {
  const catalog = useEventCatalog();
  const [original, setOriginal] = useState<Webhook | null | undefined>(undefined);
  const [value, setValue] = useState<FormValue | null>(null);
  const [loadError, setLoadError] = useState<Problem | null>(null);
  const [error, setError] = useState<Problem | null>(null);
  const [busy, setBusy] = useState(false);

  useEffect(() => {
    api.listWebhooks().then((list) => {
      const w = list.find((x) => x.id === id) ?? null;
      setOriginal(w);
      if (w) setValue({ url: w.url, description: w.description ?? "", all: w.events.includes("*"), selected: w.events.filter((t) => t !== "*") });
    }, setLoadError);
  }, [id]);

  const submit = async (e: Event) => {
    e.preventDefault();
    if (!original || !value) return;
    const patch: Parameters<typeof api.updateWebhook>[1] = {};
    if (value.url.trim() !== original.url) patch.url = value.url.trim();
    const description = value.description.trim() || null;
    if (description !== original.description) patch.description = description;
    if (JSON.stringify(events(value)) !== JSON.stringify(original.events)) patch.events = events(value);
    if (Object.keys(patch).length === 0) {
      go(`#/webhooks/${id}`, { text: "Nothing changed: nothing was saved.", kind: "ok" });
      return;
    }
    setBusy(true);
    setError(null);
    try {
      await api.updateWebhook(id, patch);
      go(`#/webhooks/${id}`, { text: "Changes saved.", kind: "ok" });
    } catch (err) {
      setError(err as Problem);
    } finally {
      setBusy(false);
    }
  };

  return (
    <section aria-labelledby="view-title" class="narrow">
      <p class="crumbs">
        <a href="#/">All endpoints</a> › <a href={`#/webhooks/${id}`}>Endpoint</a>
      </p>
      <h1 id="view-title" tabIndex={-1}>
        Edit the endpoint
      </h1>
      <ErrorAlert error={loadError} title="The endpoint could not be loaded" />
      {original === null && <p role="alert">This school has no endpoint with the id {id} (it may have been deleted).</p>}
      {value && (
        <form onSubmit={submit} noValidate>
          <WebhookFields value={value} onChange={setValue} catalog={catalog} />
          <p class="hint">The id, the secret and the delivery log are kept. Queued deliveries and retries go to a new URL from their next attempt.</p>
          <ErrorAlert error={error} title="The changes were not saved" />
          <div class="actions">
            <button type="submit" disabled={busy}>
              {busy ? "Saving…" : "Save changes"}
            </button>
            <a href={`#/webhooks/${id}`}>Cancel</a>
          </div>
        </form>
      )}
    </section>
  );
}
