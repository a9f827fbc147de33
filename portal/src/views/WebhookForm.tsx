/**
 * Create (POST /v3/webhooks, then the secret shown once, or a `v1a` registration's public key)
 * and edit (PATCH /v3/webhooks/{id}, only the fields changed) a registration: URL,
 * description, events, filter, custom headers, throttle, ordering, payload and (at creation only) the
 * signature scheme. One form serves both. The browser's own validation is off (`noValidate`):
 * the API is the one judge of a URL (its URL policy), of a filter and of a header, and its
 * message is what the administrator sees.
 *
 * Header values are write-only (records carry `headerNames` only): on edit the names are shown
 * with blank values, and `headers` is sent only once the administrator changed them — then it
 * replaces the whole set (an empty set clears them: `null`).
 */
import { useEffect, useRef, useState } from "preact/hooks";
import {
  ApiError,
  api,
  type CreatedWebhook,
  type EventType,
  ORDERING_LABELS,
  type Ordering,
  type PayloadForm,
  type SignatureScheme,
  type Webhook,
  type WebhookCreate,
  type WebhookFilter,
  type WebhookPatch,
} from "../api";
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
/** Types the catalog lists that no registration subscribes to: each reaches its own registration only. */
const UNSUBSCRIBABLE = new Set(["webhook.test", "webhook.events_missed"]);

/** One row of the custom headers. */
interface HeaderRow {
  /** Stable key of the row (rows are added and removed). */
  key: number;
  name: string;
  value: string;
}

/**
 * What the form edits. `all` is the subscription `["*"]`; the filter's lists are the text of
 * their fields; `headersChanged` says whether the header rows were touched (on edit, untouched
 * rows keep the saved headers); `maxPerSecond` is the throttle field's text.
 */
interface FormValue {
  url: string;
  description: string;
  all: boolean;
  selected: string[];
  trainingIds: string;
  groupIds: string;
  professorIds: string;
  headers: HeaderRow[];
  headersChanged: boolean;
  maxPerSecond: string;
  ordering: Ordering;
  signatureScheme: SignatureScheme;
  payload: PayloadForm;
}

/** Most custom headers a registration may have (docs/reference.md § POST /v3/webhooks: `headers`). */
const MAX_HEADERS = 10;

let rowKeys = 0;
const headerRow = (name = "", value = ""): HeaderRow => ({ key: ++rowKeys, name, value });

/** The form's value for a registration (a new one when `w` is null). */
function formValue(w: Webhook | null): FormValue {
  const ids = (list: string[] | undefined) => (list ?? []).join(", ");
  return {
    url: w?.url ?? "",
    description: w?.description ?? "",
    all: w ? w.events.includes("*") : true,
    selected: w ? w.events.filter((t) => t !== "*") : [],
    trainingIds: ids(w?.filter?.trainingId),
    groupIds: ids(w?.filter?.groupId),
    professorIds: ids(w?.filter?.professorId),
    headers: (w?.headerNames ?? []).map((name) => headerRow(name)),
    headersChanged: false,
    maxPerSecond: w?.maxPerSecond == null ? "" : String(w.maxPerSecond),
    ordering: w ? (w.ordering ?? "none") : "course",
    signatureScheme: w?.signatureScheme ?? "v1",
    payload: w?.payload ?? "full",
  };
}

/** Ids typed in a field, separated by commas, spaces or new lines. */
const idList = (text: string) => text.split(/[\s,]+/).filter(Boolean);

/** The filter the form describes, or null when every list is empty (no filter). */
function filterOf(v: FormValue): WebhookFilter | null {
  const filter: WebhookFilter = {};
  const training = idList(v.trainingIds);
  const group = idList(v.groupIds);
  const professor = idList(v.professorIds);
  if (training.length) filter.trainingId = training;
  if (group.length) filter.groupId = group;
  if (professor.length) filter.professorId = professor;
  return Object.keys(filter).length ? filter : null;
}

/** A filter in a comparable form (its fields in a fixed order). */
const filterKey = (f: WebhookFilter | null | undefined) => JSON.stringify(f ? [f.trainingId ?? [], f.groupId ?? [], f.professorId ?? []] : null);

/**
 * The header set the rows describe (rows left wholly blank are ignored), or null when none.
 *
 * @throws Error when a named header has no value: values are never shown again, so each must be typed.
 */
function headersOf(v: FormValue): Record<string, string> | null {
  const rows = v.headers.filter((r) => r.name.trim() !== "" || r.value !== "");
  const missing = rows.filter((r) => r.value === "").map((r) => r.name.trim());
  if (missing.length) {
    throw new Error(
      `Enter a value for ${missing.map((n) => `"${n}"`).join(", ")}: saved values are never shown, and saving headers replaces the whole set (or remove that row).`,
    );
  }
  return rows.length ? Object.fromEntries(rows.map((r) => [r.name.trim(), r.value])) : null;
}

/**
 * The throttle the field describes: null when empty.
 *
 * @throws Error when it is not a whole number.
 */
function throttleOf(v: FormValue): number | null {
  const text = v.maxPerSecond.trim();
  if (text === "") return null;
  if (!/^\d+$/.test(text)) throw new Error(`Throttle: "${text}" is not a whole number of attempts per second (1 to 1000, or empty for none).`);
  return Number(text);
}

function WebhookFields({
  value,
  onChange,
  catalog,
  editing = null,
}: {
  value: FormValue;
  onChange: (v: FormValue) => void;
  catalog: ReturnType<typeof useEventCatalog>;
  /** The registration being edited (null: a new one). */
  editing?: Webhook | null;
}) {
  // The catalog's types, plus any the registration already has that the catalog lacks; not
  // `webhook.test` and `webhook.events_missed`, which no registration subscribes to (each reaches its endpoint anyway).
  const known = [...new Set([...(catalog.types ?? []).map((t) => t.type).filter((t) => !UNSUBSCRIBABLE.has(t)), ...value.selected])];
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
      <FilterFields value={value} onChange={onChange} />
      <HeaderFields value={value} onChange={onChange} editing={editing} />
      <fieldset>
        <legend>Throttle</legend>
        <div class="field">
          <label for="wh-max-per-second">Most attempts per second (optional)</label>
          <input
            id="wh-max-per-second"
            type="text"
            inputMode="numeric"
            class="short"
            aria-describedby="wh-max-per-second-hint"
            value={value.maxPerSecond}
            onInput={(e) => onChange({ ...value, maxPerSecond: e.currentTarget.value })}
          />
          <p id="wh-max-per-second-hint" class="hint">
            1 to 1000. No more attempts to this endpoint start within any one second; the others wait their turn. Empty: no throttle.
          </p>
        </div>
      </fieldset>
      <DeliveryFields value={value} onChange={onChange} editing={editing} />
    </>
  );
}

/** In what order, what deliveries carry, and (at creation only) how they are signed. */
function DeliveryFields({ value, onChange, editing }: { value: FormValue; onChange: (v: FormValue) => void; editing: Webhook | null }) {
  /** One select of `value[key]`: its options (value → text) and a hint. */
  const choice = <K extends "ordering" | "payload" | "signatureScheme">(
    id: string,
    label: string,
    key: K,
    options: Record<FormValue[K], string>,
    hint: string,
    disabled = false,
  ) => (
    <div class="field">
      <label for={id}>{label}</label>
      <select
        id={id}
        aria-describedby={`${id}-hint`}
        disabled={disabled}
        value={value[key]}
        onChange={(e) => onChange({ ...value, [key]: e.currentTarget.value as FormValue[K] })}
      >
        {Object.entries<string>(options).map(([v, text]) => (
          <option key={v} value={v}>
            {text}
          </option>
        ))}
      </select>
      <p id={`${id}-hint`} class="hint">
        {hint}
      </p>
    </div>
  );
  return (
    <fieldset>
      <legend>Ordering, payload and signature</legend>
      {choice(
        "wh-ordering",
        "Ordering",
        "ordering",
        ORDERING_LABELS,
        "Per course: an event waits while an earlier event of the same course is still being delivered or retried; other courses are never held.",
      )}
      {choice(
        "wh-payload",
        "Payload",
        "payload",
        { full: "Full: each course event carries the course", thin: "Thin: the course's id and version only" },
        "Thin: the receiver gets no names or emails, and fetches the course it is allowed to see. Webhook events (disabled, test) are always sent whole.",
      )}
      {choice(
        "wh-signature",
        "Signature",
        "signatureScheme",
        { v1: "v1: HMAC-SHA256 with a secret", v1a: "v1a: ed25519, verified with a public key" },
        editing
          ? "Chosen when the endpoint was created: to change it, create another endpoint."
          : "v1a: your receiver holds only a public key, which cannot sign a delivery. Chosen now for the endpoint's whole life.",
        editing !== null,
      )}
    </fieldset>
  );
}

/** The filter on the school's dimensions: three optional id lists. */
function FilterFields({ value, onChange }: { value: FormValue; onChange: (v: FormValue) => void }) {
  const list = (id: string, label: string, key: "trainingIds" | "groupIds" | "professorIds") => (
    <div class="field">
      <label for={id}>{label}</label>
      <textarea
        id={id}
        class="mono"
        rows={2}
        spellcheck={false}
        aria-describedby="wh-filter-hint"
        value={value[key]}
        onInput={(e) => onChange({ ...value, [key]: e.currentTarget.value })}
      />
    </div>
  );
  return (
    <fieldset>
      <legend>Filter</legend>
      <p id="wh-filter-hint" class="hint">
        Optional. Ids separated by commas or new lines. A course event reaches this endpoint only if the course matches one listed id in every list filled in
        (before or after the change). Leave all three empty to receive every course event subscribed to.
      </p>
      {list("wh-filter-training", "Training ids", "trainingIds")}
      {list("wh-filter-group", "Group ids", "groupIds")}
      {list("wh-filter-professor", "Professor ids", "professorIds")}
    </fieldset>
  );
}

/** Custom headers: rows of name and value, at most {@link MAX_HEADERS}; values write-only. */
function HeaderFields({ value, onChange, editing }: { value: FormValue; onChange: (v: FormValue) => void; editing: Webhook | null }) {
  const saved = editing?.headerNames ?? [];
  const set = (headers: HeaderRow[]) => onChange({ ...value, headers, headersChanged: true });
  const edit = (key: number, patch: Partial<HeaderRow>) => set(value.headers.map((r) => (r.key === key ? { ...r, ...patch } : r)));
  const add = () => {
    const row = headerRow();
    set([...value.headers, row]);
    // The new row's name field takes the focus (after the render).
    setTimeout(() => document.getElementById(`hdr-name-${row.key}`)?.focus());
  };
  /** The focus goes to "Add a header" when the control that had it goes away. */
  const focusAdd = () => setTimeout(() => document.getElementById("hdr-add")?.focus());
  const remove = (index: number) => {
    set(value.headers.filter((_, i) => i !== index));
    focusAdd();
  };
  const full = value.headers.length >= MAX_HEADERS;
  return (
    <fieldset>
      <legend>Custom headers</legend>
      <p id="wh-headers-hint" class="hint">
        Optional, at most {MAX_HEADERS}. Sent with every delivery to this endpoint (an API key of your receiver, say). Values are write-only: they are never
        shown again.
      </p>
      {editing && saved.length > 0 && (
        <p id="wh-headers-kept" class="hint">
          {value.headersChanged ? (
            <strong>Saving replaces the whole set of headers with the rows below: type every value again (a row without a value is refused).</strong>
          ) : (
            <>
              The saved headers are listed by name, their values blank. <strong>Leave them untouched to keep them as they are</strong>; changing, adding or
              removing a row replaces the whole set with the rows below when you save.
            </>
          )}
        </p>
      )}
      {value.headers.map((row, i) => (
        <fieldset class="header-row" key={row.key}>
          <legend>Header {i + 1}</legend>
          <div class="field">
            <label for={`hdr-name-${row.key}`}>Name</label>
            <input
              id={`hdr-name-${row.key}`}
              type="text"
              class="mono"
              autoComplete="off"
              spellcheck={false}
              placeholder="x-api-key"
              value={row.name}
              onInput={(e) => edit(row.key, { name: e.currentTarget.value })}
            />
          </div>
          <div class="field">
            <label for={`hdr-value-${row.key}`}>Value</label>
            <input
              id={`hdr-value-${row.key}`}
              type="text"
              class="mono"
              autoComplete="off"
              spellcheck={false}
              placeholder={!value.headersChanged && saved.includes(row.name) ? "(saved, not shown)" : ""}
              value={row.value}
              onInput={(e) => edit(row.key, { value: e.currentTarget.value })}
            />
          </div>
          <button type="button" class="secondary small" aria-label={`Remove header ${i + 1}`} onClick={() => remove(i)}>
            Remove
          </button>
        </fieldset>
      ))}
      <div class="actions">
        <button type="button" id="hdr-add" class="secondary" onClick={add} disabled={full}>
          Add a header
        </button>
        {editing && saved.length > 0 && value.headers.length > 0 && (
          <button
            type="button"
            class="secondary"
            onClick={() => {
              set([]);
              focusAdd();
            }}
          >
            Remove all headers
          </button>
        )}
        {editing && value.headersChanged && (
          <button
            type="button"
            class="secondary"
            onClick={() => {
              onChange({ ...value, headers: saved.map((name) => headerRow(name)), headersChanged: false });
              focusAdd();
            }}
          >
            Keep the saved headers
          </button>
        )}
      </div>
      <p role="status" class="hint">
        {full
          ? `${MAX_HEADERS} headers: the most an endpoint may have.`
          : editing && saved.length > 0 && value.headersChanged && value.headers.length === 0
            ? "Every custom header will be removed when you save."
            : ""}
      </p>
    </fieldset>
  );
}

const events = (v: FormValue) => (v.all ? ["*"] : v.selected);

/** A fresh Idempotency-Key (1–255 printable ASCII). */
const newIdempotencyKey = () => (crypto.randomUUID ? crypto.randomUUID() : `${Date.now()}-${Math.random().toString(36).slice(2)}`);

/** `#/new`: the form, then the created registration's secret, shown once. */
export function CreateWebhook() {
  const catalog = useEventCatalog();
  const [value, setValue] = useState<FormValue>(() => formValue(null));
  const [error, setError] = useState<Problem | null>(null);
  const [busy, setBusy] = useState(false);
  const [created, setCreated] = useState<CreatedWebhook | null>(null);
  // One Idempotency-Key per distinct body: a double submit creates one registration, and a
  // corrected body is a new request (the same key with another body would be a 422).
  const idem = useRef<{ body: string; key: string } | null>(null);

  const submit = async (e: Event) => {
    e.preventDefault();
    const body: WebhookCreate = { url: value.url.trim(), events: events(value) };
    try {
      if (value.description.trim()) body.description = value.description.trim();
      const filter = filterOf(value);
      if (filter) body.filter = filter;
      const headers = headersOf(value);
      if (headers) body.headers = headers;
      const throttle = throttleOf(value);
      if (throttle !== null) body.maxPerSecond = throttle;
      // Defaults are left out: a server without these fields takes the body as before.
      if (value.ordering !== "course") body.ordering = value.ordering;
      if (value.signatureScheme !== "v1") body.signatureScheme = value.signatureScheme;
      if (value.payload !== "full") body.payload = value.payload;
    } catch (err) {
      setError(err as Error);
      return;
    }
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
        {created.secret === undefined ? (
          <SecretReveal secret={created.publicKey ?? ""} label="Its public key" publicKey />
        ) : (
          <SecretReveal secret={created.secret} label="Its signing secret" />
        )}
        <p>
          <a class="button" href={`#/webhooks/${created.id}`}>
            {created.secret === undefined ? "Open the endpoint" : "I have saved the secret: open the endpoint"}
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

/** `#/webhooks/{id}/edit`: every field of the create form; only what changed is sent. */
export function EditWebhook({ id, go }: { id: string; go: Go }) {
  const catalog = useEventCatalog();
  const [original, setOriginal] = useState<Webhook | null | undefined>(undefined);
  const [value, setValue] = useState<FormValue | null>(null);
  const [loadError, setLoadError] = useState<Problem | null>(null);
  const [error, setError] = useState<Problem | null>(null);
  const [busy, setBusy] = useState(false);

  useEffect(() => {
    api.getWebhook(id).then(
      (w) => {
        setOriginal(w);
        setValue(formValue(w));
      },
      (err) => (err instanceof ApiError && err.code === "WEBHOOK_NOT_FOUND" ? setOriginal(null) : setLoadError(err)),
    );
  }, [id]);

  const submit = async (e: Event) => {
    e.preventDefault();
    if (!original || !value) return;
    const patch: WebhookPatch = {};
    if (value.url.trim() !== original.url) patch.url = value.url.trim();
    const description = value.description.trim() || null;
    if (description !== original.description) patch.description = description;
    if (JSON.stringify(events(value)) !== JSON.stringify(original.events)) patch.events = events(value);
    try {
      const filter = filterOf(value);
      if (filterKey(filter) !== filterKey(original.filter)) patch.filter = filter;
      // Header values are never shown: the set is sent only when the rows were touched.
      if (value.headersChanged) {
        const headers = headersOf(value);
        if (headers !== null || (original.headerNames ?? []).length > 0) patch.headers = headers;
      }
      const throttle = throttleOf(value);
      if (throttle !== (original.maxPerSecond ?? null)) patch.maxPerSecond = throttle;
      const stored = formValue(original);
      if (value.ordering !== stored.ordering) patch.ordering = value.ordering;
      if (value.payload !== stored.payload) patch.payload = value.payload;
    } catch (err) {
      setError(err as Error);
      return;
    }
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
          <WebhookFields value={value} onChange={setValue} catalog={catalog} editing={original ?? null} />
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
