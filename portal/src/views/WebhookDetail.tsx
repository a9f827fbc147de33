/**
 * `#/webhooks/{id}`: one registration — its record and status, the actions of the contract
 * (send a test, edit, disable/enable, rotate the secret, delete), recover since an instant,
 * the stats chart and the delivery log. Each part loads and fails on its own: an endpoint
 * the server does not offer (404/405) shows the API's message in its part only. A read-only
 * tab gets the record, the chart and the log, and no action.
 */
import { useEffect, useState } from "preact/hooks";
import { useReadOnly } from "../access";
import { ApiError, api, ORDERING_LABELS, type RotatedSecret, type Webhook } from "../api";
import { Dialog, ErrorAlert, eventsText, type Problem, SecretReveal, StatusBadge } from "../components";
import { formatInstant, localInputToIso } from "../format";
import type { Go } from "../navigation";
import { DeliveryLog } from "./DeliveryLog";
import { StatsChart } from "./StatsChart";

/** What the action bar last did: a sentence, or the API's error. */
type Outcome = { text: string } | { error: Problem; title: string } | null;

export function WebhookDetail({ id, go }: { id: string; go: Go }) {
  const [webhook, setWebhook] = useState<Webhook | null | undefined>(undefined);
  const [loadError, setLoadError] = useState<Problem | null>(null);
  const [outcome, setOutcome] = useState<Outcome>(null);
  const [busy, setBusy] = useState(false);
  const [dialog, setDialog] = useState<"rotate" | "delete" | null>(null);
  /** Bumped after each action that queues deliveries: the log and the chart reload. */
  const [refresh, setRefresh] = useState(0);
  /** The event the log keeps polling for until its delivery is no longer pending. */
  const [watch, setWatch] = useState<string | null>(null);
  /** Bumped each time the log loads: the chart reloads with it. */
  const [logLoads, setLogLoads] = useState(0);
  const readOnly = useReadOnly();

  const load = () =>
    api.getWebhook(id).then(setWebhook, (err) => (err instanceof ApiError && err.code === "WEBHOOK_NOT_FOUND" ? setWebhook(null) : setLoadError(err)));
  useEffect(() => {
    void load();
  }, [id]);

  /** Runs one action, with the button bar disabled meanwhile; its outcome is announced. */
  const act = async (title: string, run: () => Promise<string>) => {
    setBusy(true);
    setOutcome(null);
    try {
      setOutcome({ text: await run() });
    } catch (err) {
      setOutcome({ error: err as Problem, title });
    } finally {
      setBusy(false);
    }
  };

  const sendTest = () =>
    act("The test was not sent", async () => {
      const { eventId } = await api.sendTest(id);
      setWatch(eventId);
      setRefresh((n) => n + 1);
      return `Test event ${eventId} queued: its delivery appears in the log below.`;
    });
  const setEnabled = (enabled: boolean) =>
    act(enabled ? "The endpoint was not enabled" : "The endpoint was not disabled", async () => {
      setWebhook(await api.updateWebhook(id, { enabled }));
      setRefresh((n) => n + 1);
      return enabled
        ? "Endpoint enabled: events accepted from now on are delivered. Skipped ones are sent only if you recover or resend them."
        : "Endpoint disabled: no attempt starts any more; queued deliveries and new events are logged as skipped.";
    });

  if (loadError) return <ErrorAlert error={loadError} title="The endpoint could not be loaded" />;
  if (webhook === undefined) return <p aria-busy="true">Loading…</p>;
  if (webhook === null) {
    return (
      <section aria-labelledby="view-title">
        <h1 id="view-title" tabIndex={-1}>
          Endpoint not found
        </h1>
        <p>This school has no endpoint with the id {id} (it may have been deleted).</p>
        <a href="#/">All endpoints</a>
      </section>
    );
  }
  const enabled = webhook.enabled !== false;
  return (
    <section aria-labelledby="view-title">
      <p class="crumbs">
        <a href="#/">All endpoints</a>
      </p>
      <h1 id="view-title" tabIndex={-1}>
        Endpoint <span class="mono">{webhook.url}</span>
      </h1>
      <dl class="record">
        <dt>Status</dt>
        <dd>
          <StatusBadge webhook={webhook} />
          {!enabled && <p class="small status-note">{disabledWhy(webhook, readOnly)}</p>}
          {webhook.failingSince && (
            <p class="small status-note">
              Its last 4 or more delivery attempts failed, the first at {formatInstant(webhook.failingSince)}; the next success ends this. See the delivery log
              below for the errors.
            </p>
          )}
        </dd>
        <dt>Description</dt>
        <dd>{webhook.description ?? "—"}</dd>
        <dt>Events</dt>
        <dd>{eventsText(webhook.events)}</dd>
        <dt>Filter</dt>
        <dd>
          <FilterText filter={webhook.filter} />
        </dd>
        <dt>Custom headers</dt>
        <dd>
          {webhook.headerNames?.length ? (
            <>
              <ul class="names">
                {webhook.headerNames.map((name) => (
                  <li key={name}>
                    <code>{name}</code>
                  </li>
                ))}
              </ul>
              <span class="small muted">Values are write-only: they are never shown.</span>
            </>
          ) : (
            "None"
          )}
        </dd>
        <dt>Throttle</dt>
        <dd>{webhook.maxPerSecond ? `At most ${webhook.maxPerSecond} attempt${webhook.maxPerSecond === 1 ? "" : "s"} per second` : "None"}</dd>
        <dt>Ordering</dt>
        <dd>{ORDERING_LABELS[webhook.ordering ?? "none"]}</dd>
        <dt>Payload</dt>
        <dd>{webhook.payload === "thin" ? "Thin: course events carry the course's id and version only" : "Full events"}</dd>
        <dt>Signature</dt>
        <dd>
          {webhook.signatureScheme === "v1a" ? (
            <>
              v1a (ed25519). Public key: <code>{webhook.publicKey}</code>
            </>
          ) : (
            "v1 (HMAC-SHA256 with the secret shown at creation)"
          )}
        </dd>
        <dt>Id</dt>
        <dd>
          <code>{webhook.id}</code>
        </dd>
        <dt>Created</dt>
        <dd>{formatInstant(webhook.createdAt)}</dd>
        {webhook.updatedAt && (
          <>
            <dt>Updated</dt>
            <dd>{formatInstant(webhook.updatedAt)}</dd>
          </>
        )}
      </dl>

      {!readOnly && (
        <fieldset class="toolbar" aria-label="Endpoint actions">
          <button type="button" onClick={sendTest} disabled={busy}>
            Send test event
          </button>
          <a class="button secondary" href={`#/webhooks/${id}/edit`}>
            Edit
          </a>
          <button type="button" class="secondary" onClick={() => setEnabled(!enabled)} disabled={busy}>
            {enabled ? "Disable" : "Enable"}
          </button>
          <button type="button" class="secondary" onClick={() => setDialog("rotate")} disabled={busy}>
            {webhook.signatureScheme === "v1a" ? "Rotate key…" : "Rotate secret…"}
          </button>
          <button type="button" class="danger" onClick={() => setDialog("delete")} disabled={busy}>
            Delete…
          </button>
        </fieldset>
      )}
      <div role="status" class="outcome">
        {outcome && "text" in outcome ? outcome.text : ""}
      </div>
      {outcome && "error" in outcome && <ErrorAlert error={outcome.error} title={outcome.title} />}

      {dialog === "rotate" && (
        <RotateDialog
          id={id}
          keyPair={webhook.signatureScheme === "v1a"}
          onClose={() => {
            setDialog(null);
            // A rotated key pair: the record shows the new public key.
            void load();
          }}
        />
      )}
      {dialog === "delete" && (
        <DeleteDialog
          webhook={webhook}
          onClose={() => setDialog(null)}
          onDeleted={() => go("#/", { text: `Endpoint ${webhook.url} deleted. Nothing more will be sent to it.`, kind: "ok" })}
        />
      )}

      <StatsChart id={id} refresh={logLoads} />
      <DeliveryLog id={id} refresh={refresh} watch={watch} onQueued={() => setRefresh((n) => n + 1)} onLoaded={() => setLogLoads((n) => n + 1)} />
      {!readOnly && <RecoverForm id={id} onQueued={() => setRefresh((n) => n + 1)} />}
    </section>
  );
}

/** Why a disabled registration is disabled, and how it comes back, in a sentence. */
function disabledWhy(webhook: Webhook, readOnly: boolean): string {
  const back = readOnly ? "" : " Enable it to receive events again.";
  switch (webhook.disabledReason) {
    case "gone":
      return `The receiver answered 410 Gone, which asks to be unsubscribed: no delivery is attempted any more.${readOnly ? "" : " If that was a mistake, fix the receiver, then enable the endpoint again."}`;
    case "receiver":
      return `The receiver answered with webhook-delivery: disable, which asks to stop sending: no delivery is attempted any more.${readOnly ? "" : " If that was a mistake, fix the receiver, then enable the endpoint again."}`;
    case "failing":
      return `Every delivery attempt failed for too long, so deliveries stopped.${readOnly ? "" : " Fix the receiver, enable the endpoint, then recover what it missed."}`;
    default:
      return `Disabled by an administrator: events are logged as skipped.${back}`;
  }
}

/** The filter in words: the ids per dimension, or that every event passes. */
function FilterText({ filter }: { filter: Webhook["filter"] }) {
  const parts = [
    ["Trainings", filter?.trainingId],
    ["Groups", filter?.groupId],
    ["Professors", filter?.professorId],
  ].filter((p): p is [string, string[]] => Array.isArray(p[1]) && p[1].length > 0);
  if (parts.length === 0) return <>None: every event subscribed to</>;
  return (
    <ul class="names">
      {parts.map(([label, ids]) => (
        <li key={label}>
          {label}: {ids.map((id, i) => [i > 0 ? ", " : "", <code key={id}>{id}</code>])}
        </li>
      ))}
    </ul>
  );
}

/**
 * POST …/secret/rotate with a grace period; the new secret is shown once, in the dialog (a
 * `v1a` registration, `keyPair`: its new public key).
 */
function RotateDialog({ id, keyPair, onClose }: { id: string; keyPair: boolean; onClose: () => void }) {
  const [grace, setGrace] = useState("86400");
  const [error, setError] = useState<Problem | null>(null);
  const [busy, setBusy] = useState(false);
  const [rotated, setRotated] = useState<RotatedSecret | null>(null);
  const what = keyPair ? "key" : "secret";
  const submit = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    try {
      setRotated(await api.rotateSecret(id, Number(grace)));
    } catch (err) {
      setError(err as Problem);
    } finally {
      setBusy(false);
    }
  };
  return (
    <Dialog title={`Rotate the signing ${what}`} onClose={onClose}>
      {rotated ? (
        <>
          <SecretReveal
            secret={rotated.secret ?? rotated.publicKey ?? ""}
            label={rotated.secret === undefined ? "The new public key" : "The new signing secret"}
            publicKey={rotated.secret === undefined}
          >
            <p>
              {rotated.previousSecretExpiresAt
                ? `Until ${formatInstant(rotated.previousSecretExpiresAt)}, every delivery is signed with both the new and the previous ${what}, so your receiver can switch at its own pace.`
                : `The previous ${what} no longer signs anything.`}
            </p>
          </SecretReveal>
          <div class="actions">
            <button type="button" onClick={onClose}>
              Done
            </button>
          </div>
        </>
      ) : (
        <form onSubmit={submit} noValidate>
          <p>
            A new {keyPair ? "key pair" : "secret"} is generated. During the grace period, deliveries carry two signatures: one with each {what}.
          </p>
          <div class="field">
            <label for="grace">Grace period for the previous {what}, in seconds (0 to 604800)</label>
            <input id="grace" type="number" min={0} max={604800} step={1} inputMode="numeric" value={grace} onInput={(e) => setGrace(e.currentTarget.value)} />
          </div>
          <ErrorAlert error={error} title={`The ${what} was not rotated`} />
          <div class="actions">
            <button type="submit" disabled={busy}>
              {busy ? "Rotating…" : `Rotate ${what}`}
            </button>
            <button type="button" class="secondary" onClick={onClose}>
              Cancel
            </button>
          </div>
        </form>
      )}
    </Dialog>
  );
}

/** DELETE, after a confirmation that states the deregistration promise (docs/reference.md § DELETE /v3/webhooks/{id} (beta)). */
function DeleteDialog({ webhook, onClose, onDeleted }: { webhook: Webhook; onClose: () => void; onDeleted: () => void }) {
  const [error, setError] = useState<Problem | null>(null);
  const [busy, setBusy] = useState(false);
  const confirm = async () => {
    setBusy(true);
    setError(null);
    try {
      await api.deleteWebhook(webhook.id);
      onDeleted();
    } catch (err) {
      setError(err as Problem);
      setBusy(false);
    }
  };
  return (
    <Dialog title="Delete this endpoint?" onClose={onClose}>
      <p>
        <span class="mono">{webhook.url}</span> will be removed permanently, enabled or not. Once the deletion is confirmed:
      </p>
      <ul class="promise">
        <li>no event accepted after the deletion is ever delivered to it;</li>
        <li>its pending retries are dropped, and no new delivery attempt to it starts — not by the schedule, nor by a resend, a recovery or a test;</li>
        <li>the deletion survives restarts of the service, and its id is never reused.</li>
      </ul>
      <p>Its delivery log and secret are deleted with it.</p>
      <ErrorAlert error={error} title="The endpoint was not deleted" />
      <div class="actions">
        <button type="button" class="danger" onClick={confirm} disabled={busy}>
          {busy ? "Deleting…" : "Delete permanently"}
        </button>
        {/* biome-ignore lint/a11y/noAutofocus: inside the native <dialog> of Dialog, where showModal() focuses the autofocus element (the HTML dialog focusing steps): the safe choice of a destructive dialog. */}
        <button type="button" class="secondary" onClick={onClose} autoFocus>
          Cancel
        </button>
      </div>
    </Dialog>
  );
}

/** POST …/recover: queue again what ended failed or skipped since an instant. */
function RecoverForm({ id, onQueued }: { id: string; onQueued: () => void }) {
  const [since, setSince] = useState("");
  const [until, setUntil] = useState("");
  const [error, setError] = useState<Problem | null>(null);
  const [done, setDone] = useState("");
  const [busy, setBusy] = useState(false);
  const submit = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    setDone("");
    try {
      const { queued, exact } = await api.recover(id, localInputToIso(since), localInputToIso(until) || undefined);
      const count = `${exact ? "" : "More than "}${queued.toLocaleString("en-US")} event${queued === 1 ? "" : "s"}`;
      setDone(queued === 0 ? "Nothing to recover in that period." : `${count} queued again, in the order they were accepted.`);
      onQueued();
    } catch (err) {
      setError(err instanceof RangeError ? new Error(`Enter a date and time: ${err.message}.`) : (err as Problem));
    } finally {
      setBusy(false);
    }
  };
  return (
    <section aria-labelledby="recover-title" class="panel">
      <h2 id="recover-title">Recover after an outage</h2>
      <p>
        Sends again, in acceptance order, every event of the last 7 days accepted in the period whose delivery to this endpoint ended failed or skipped. Times
        are in your local time zone.
      </p>
      <form onSubmit={submit} noValidate class="inline-form">
        <div class="field">
          <label for="recover-since">Since</label>
          <input id="recover-since" type="datetime-local" step={1} required value={since} onInput={(e) => setSince(e.currentTarget.value)} />
        </div>
        <div class="field">
          <label for="recover-until">Until (optional)</label>
          <input id="recover-until" type="datetime-local" step={1} value={until} onInput={(e) => setUntil(e.currentTarget.value)} />
        </div>
        <button type="submit" disabled={busy}>
          {busy ? "Recovering…" : "Recover"}
        </button>
      </form>
      <ErrorAlert error={error} title="Nothing was recovered" />
      <p role="status">{done}</p>
    </section>
  );
}
