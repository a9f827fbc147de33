/**
 * The delivery log of one registration (GET /v3/webhooks/{id}/deliveries): filters
 * (status, event type, event id, since, until), pages, each attempt's trigger, status code,
 * duration and error, the start of the answer's body (a one-line preview, and the whole
 * kilobyte the API keeps with the URL the attempt went to behind a disclosure), and a resend
 * button per event (not in a read-only tab). Only the filters that are set are sent. Bodies
 * are the receiver's text: rendered as text (Preact escapes it), never as markup.
 */
import { useEffect, useRef, useState } from "preact/hooks";
import { useReadOnly } from "../access";
import { api, DELIVERY_STATUS_LABELS, type Delivery, type DeliveryFilters, type Page } from "../api";
import { ErrorAlert, type Problem } from "../components";
import { formatInstant, localInputToIso } from "../format";

/**
 * What the log says of the types a registration gets without subscribing (docs/reference.md §
 * "Missed events"): the missed-events notice names its gap in its body, not in the log.
 */
const TYPE_NOTES: Partial<Record<string, string>> = {
  "webhook.events_missed": "Notice: deliveries to this endpoint were dropped unsent; its body gives the range, the count and the change cursor to resume from",
  "webhook.test": "Test event",
};

const STATUSES = Object.keys(DELIVERY_STATUS_LABELS) as (keyof typeof DELIVERY_STATUS_LABELS)[];
/** Polls for a watched event at most this many times, this often (ms). */
const WATCH_POLLS = 40;
const WATCH_INTERVAL_MS = 1500;

/** The filter form's fields (datetime-local values for since/until). */
interface FilterForm {
  status: string;
  eventType: string;
  eventId: string;
  since: string;
  until: string;
}
const EMPTY: FilterForm = { status: "", eventType: "", eventId: "", since: "", until: "" };

/**
 * `refresh` reloads the log when it changes; `watch` is an event id to poll for until its
 * delivery has an outcome; `onQueued` runs after a resend; `onLoaded` after each load (the
 * chart follows the log).
 */
export function DeliveryLog(props: { id: string; refresh: number; watch: string | null; onQueued: () => void; onLoaded: () => void }) {
  const { id, refresh, watch, onQueued, onLoaded } = props;
  const [form, setForm] = useState<FilterForm>(EMPTY);
  const [filters, setFilters] = useState<DeliveryFilters>({});
  const [page, setPage] = useState(1);
  const [limit, setLimit] = useState(25);
  const [data, setData] = useState<Page<Delivery> | null>(null);
  const [error, setError] = useState<Problem | null>(null);
  const [loading, setLoading] = useState(false);
  const [tick, setTick] = useState(0);
  const [resendOutcome, setResendOutcome] = useState<{ text: string } | { error: Problem } | null>(null);
  const polls = useRef(0);
  const readOnly = useReadOnly();

  useEffect(() => {
    let live = true;
    setLoading(true);
    api.listDeliveries(id, filters, page, limit).then(
      (d) => {
        if (!live) return;
        setData(d);
        setError(null);
        setLoading(false);
        onLoaded();
      },
      (err) => {
        if (!live) return;
        setError(err);
        setLoading(false);
      },
    );
    return () => {
      live = false;
    };
  }, [id, filters, page, limit, refresh, tick]);

  // After a test (or another action) the watched event is polled for until its first attempt
  // has an outcome, so the administrator sees it succeed or fail without pressing Refresh.
  useEffect(() => {
    polls.current = 0;
  }, [watch]);
  useEffect(() => {
    if (!watch || !data || error) return;
    const entry = data.items.find((d) => d.eventId === watch);
    if (entry && entry.status !== "pending") return;
    if (polls.current++ >= WATCH_POLLS) return;
    const t = setTimeout(() => setTick((n) => n + 1), WATCH_INTERVAL_MS);
    return () => clearTimeout(t);
  }, [data, watch, error]);

  const apply = (e: Event) => {
    e.preventDefault();
    try {
      setFilters({
        status: form.status,
        eventType: form.eventType.trim(),
        eventId: form.eventId.trim(),
        since: localInputToIso(form.since),
        until: localInputToIso(form.until),
      });
      setPage(1);
    } catch (err) {
      setError(new Error(`Enter a date and time: ${(err as Error).message}.`));
    }
  };
  const clear = () => {
    setForm(EMPTY);
    setFilters({});
    setPage(1);
  };
  const resend = async (eventId: string) => {
    setResendOutcome(null);
    try {
      await api.resend(id, eventId);
      setResendOutcome({ text: `Event ${eventId} queued again.` });
      onQueued();
    } catch (err) {
      setResendOutcome({ error: err as Problem });
    }
  };
  const field = (name: keyof FilterForm) => ({
    value: form[name],
    onInput: (e: Event) => setForm({ ...form, [name]: (e.currentTarget as HTMLInputElement).value }),
  });

  return (
    <section aria-labelledby="log-title" class="panel">
      <div class="title-row">
        <h2 id="log-title">Delivery log</h2>
        <button type="button" class="secondary" onClick={() => setTick((n) => n + 1)} disabled={loading}>
          Refresh
        </button>
      </div>
      <p class="hint">Attempts of the last 7 days, newest first. Times are in your local time zone.</p>
      <form onSubmit={apply} noValidate class="filters" aria-label="Filter the delivery log">
        <div class="field">
          <label for="f-status">Status</label>
          <select id="f-status" value={form.status} onChange={(e) => setForm({ ...form, status: e.currentTarget.value })}>
            <option value="">Any</option>
            {STATUSES.map((s) => (
              <option value={s}>{DELIVERY_STATUS_LABELS[s]}</option>
            ))}
          </select>
        </div>
        <div class="field">
          <label for="f-type">Event type</label>
          <input id="f-type" type="text" placeholder="course.updated" {...field("eventType")} />
        </div>
        <div class="field">
          <label for="f-event">Event id</label>
          <input id="f-event" type="text" class="mono" placeholder="evt_…" {...field("eventId")} />
        </div>
        <div class="field">
          <label for="f-since">Since</label>
          <input id="f-since" type="datetime-local" step={1} {...field("since")} />
        </div>
        <div class="field">
          <label for="f-until">Until</label>
          <input id="f-until" type="datetime-local" step={1} {...field("until")} />
        </div>
        <div class="actions">
          <button type="submit">Apply filters</button>
          <button type="button" class="secondary" onClick={clear}>
            Clear
          </button>
        </div>
      </form>
      <ErrorAlert error={error} title="The delivery log could not be read" />
      {resendOutcome && "error" in resendOutcome && <ErrorAlert error={resendOutcome.error} title="The event was not resent" />}
      <p role="status" class="small">
        {resendOutcome && "text" in resendOutcome ? resendOutcome.text : loading ? "Loading the delivery log…" : ""}
      </p>
      {data && data.items.length === 0 && !error && <p>No delivery {Object.values(filters).some(Boolean) ? "matches these filters" : "yet"}.</p>}
      {data && data.items.length > 0 && (
        <div class="table-scroll">
          <table class="log">
            <caption class="visually-hidden">Delivery attempts, newest first, page {data.page}</caption>
            <thead>
              <tr>
                <th scope="col">Event</th>
                <th scope="col">Trigger</th>
                <th scope="col">Attempt</th>
                <th scope="col">Status</th>
                <th scope="col">Response</th>
                <th scope="col">Duration</th>
                <th scope="col">Error</th>
                <th scope="col">Attempted</th>
                <th scope="col">Next attempt</th>
                {!readOnly && (
                  <th scope="col">
                    <span class="visually-hidden">Actions</span>
                  </th>
                )}
              </tr>
            </thead>
            <tbody>
              {data.items.map((d) => (
                <tr key={`${d.eventId}-${d.attempt}-${d.attemptedAt}`} data-event-id={d.eventId} data-status={d.status}>
                  <td>
                    <code>{d.eventId}</code>
                    <br />
                    <span class="small">{d.eventType}</span>
                    {TYPE_NOTES[d.eventType] && (
                      <>
                        <br />
                        <span class="small badge" data-col="type-note">
                          {TYPE_NOTES[d.eventType]}
                        </span>
                      </>
                    )}
                  </td>
                  <td data-col="trigger">{d.trigger ?? "—"}</td>
                  <td data-col="attempt">{d.attempt}</td>
                  <td data-col="status">
                    <span class={`status status-${d.status}`}>{DELIVERY_STATUS_LABELS[d.status]}</span>
                  </td>
                  <td data-col="response">
                    <Response delivery={d} />
                  </td>
                  <td data-col="duration">{d.durationMs == null ? "—" : `${d.durationMs} ms`}</td>
                  <td data-col="error">{d.error ?? "—"}</td>
                  <td data-col="attempted">{formatInstant(d.attemptedAt)}</td>
                  <td data-col="next">{formatInstant(d.nextAttemptAt)}</td>
                  {!readOnly && (
                    <td>
                      <button type="button" class="secondary small" onClick={() => resend(d.eventId)} aria-label={`Resend ${d.eventId}`}>
                        Resend
                      </button>
                    </td>
                  )}
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      <nav class="pager" aria-label="Delivery log pages">
        <button type="button" class="secondary" onClick={() => setPage(page - 1)} disabled={page <= 1 || loading}>
          Previous page
        </button>
        <span>Page {page}</span>
        <button type="button" class="secondary" onClick={() => setPage(page + 1)} disabled={!data?.hasMore || loading}>
          Next page
        </button>
        <label for="f-limit">Rows per page</label>
        <select
          id="f-limit"
          value={String(limit)}
          onChange={(e) => {
            setLimit(Number(e.currentTarget.value));
            setPage(1);
          }}
        >
          {[25, 50, 100].map((n) => (
            <option value={String(n)}>{n}</option>
          ))}
        </select>
      </nav>
    </section>
  );
}

/**
 * An attempt's answer: its status code, the first line of its body (cut visually), and a
 * disclosure with the URL the attempt went to and the body's first 1,024 bytes.
 */
function Response({ delivery: d }: { delivery: Delivery }) {
  const body = d.responseBody ?? "";
  return (
    <>
      <span class="response-status">{d.responseStatus ?? "—"}</span>
      {body !== "" && <code class="body-start">{body.slice(0, 200)}</code>}
      {(d.url || body !== "") && (
        <details class="exchange">
          <summary>
            {body !== "" ? "Body" : "URL"}
            <span class="visually-hidden">
              {" "}
              of attempt {d.attempt} of {d.eventId}
            </span>
          </summary>
          {d.url && (
            <p class="small">
              Sent to <span class="mono">{d.url}</span>
            </p>
          )}
          {body !== "" && (
            <>
              <p class="small">Start of the answer's body (first 1,024 bytes):</p>
              <pre class="body">{body}</pre>
            </>
          )}
        </details>
      )}
    </>
  );
}
