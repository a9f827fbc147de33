/**
 * The school's registrations (GET /v3/webhooks), oldest first, each with its status; "Add
 * endpoint" unless the tab is read-only.
 */
import { useEffect, useState } from "preact/hooks";
import { useReadOnly } from "../access";
import { api, type Webhook } from "../api";
import { ErrorAlert, eventsText, type Problem, StatusBadge } from "../components";
import { formatInstant } from "../format";

export function WebhookList() {
  const [list, setList] = useState<Webhook[] | null>(null);
  const [error, setError] = useState<Problem | null>(null);
  const readOnly = useReadOnly();
  useEffect(() => {
    api.listWebhooks().then(setList, setError);
  }, []);
  return (
    <section aria-labelledby="view-title">
      <div class="title-row">
        <h1 id="view-title" tabIndex={-1}>
          Webhook endpoints
        </h1>
        {!readOnly && (
          <a class="button" href="#/new">
            Add endpoint
          </a>
        )}
      </div>
      {readOnly && <p class="hint">Read-only access: you can look at the endpoints, their deliveries and statistics, not change them.</p>}
      <ErrorAlert error={error} title="The endpoints could not be listed" />
      {list === null && !error && <p aria-busy="true">Loading…</p>}
      {list?.length === 0 && <p>No endpoint yet.{readOnly ? "" : " Add one to receive the school's course events."}</p>}
      {list && list.length > 0 && (
        <table>
          <caption class="visually-hidden">The school's webhook endpoints, oldest first</caption>
          <thead>
            <tr>
              <th scope="col">Endpoint</th>
              <th scope="col">Description</th>
              <th scope="col">Events</th>
              <th scope="col">Status</th>
              <th scope="col">Created</th>
            </tr>
          </thead>
          <tbody>
            {list.map((w) => (
              <tr key={w.id}>
                <td>
                  <a href={`#/webhooks/${w.id}`} class="mono">
                    {w.url}
                  </a>
                </td>
                <td>{w.description ?? <span class="muted">—</span>}</td>
                <td>{eventsText(w.events)}</td>
                <td>
                  <StatusBadge webhook={w} />
                </td>
                <td>{formatInstant(w.createdAt)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}
