/**
 * WebhookCourier: the sending hands of one webhook registration — one Durable Object per
 * registration (`courierFor(env, webhookId)`), so that the registration's requests wait for
 * response headers in an I/O context of their own. Cloudflare lets an I/O context have at
 * most 6 requests waiting for headers and a Durable Object has exactly one, shared by all
 * its requests and its alarm (Workers limits, "Simultaneous open connections"; Dynamic
 * Workers limits: "A Durable Object shares one I/O context across all concurrent requests").
 * Sending from the hub itself would give a whole school 6 slots; a courier gives each
 * registration its own, and a receiver that hangs holds only its own registration's slots.
 *
 * The hub keeps every piece of webhook state (registrations, queue, log, retries); a courier
 * holds nothing but a `closed` flag. It receives checked and signed attempts (`send`), sends
 * each at once with its timeout starting then, and reports each outcome to the hub
 * (`SchoolHub.report`, one call at a time, batched).
 *
 * The deregistration promise (API.md § "DELETE /v3/webhooks/{id}") with couriers:
 * 1. the hub hands an attempt to a courier only in a synchronous step in which it re-read the
 *    delivery and found its registration active (dispatcher.ts, `fill`);
 * 2. `SchoolHub.deleteWebhook` tombstones the registration in one synchronous step (so no
 *    later step hands it an attempt) and answers only after `close()` here has returned;
 * 3. `close()` marks the courier closed, durably, aborts its requests and drops its queued
 *    orders in one synchronous step; a request starts only in a step that first finds the
 *    courier open (`send()`, or a freed slot taking the next queued order).
 * So every request to a registration starts before its DELETE is answered, or never: an
 * attempt still on its way to the courier when `close()` ran is refused when it arrives,
 * also by a restarted courier. test/webhooks-race.test.ts holds it under a race.
 *
 * Budget: a courier has at most COURIER_SLOTS (5) requests plus its one report call waiting:
 * never more than 6, so nothing ever queues in the runtime and a timeout never counts time
 * spent queued. Up to COURIER_QUEUE more attempts wait in the courier itself, to go the
 * moment a slot frees (their timeout starts then), so that no slot idles while the next
 * attempt travels from the hub.
 */
import { DurableObject } from "cloudflare:workers";
import { describeAnswer, honoursRetryAfter, parseTimeoutMs } from "./delivery";
import { type Platform, platformFor, type Timer } from "./platform";
import { type AttemptReport, COURIER_QUEUE, COURIER_SLOTS, type SendOrder, type SendReceipt } from "./types";

/** Tries to deliver a batch of reports before leaving those attempts to the hub's backstop. */
const REPORT_TRIES = 3;
/** Pause between two tries (ms). */
const REPORT_RETRY_MS = 200;
/** A report waits this long for other outcomes to join it (ms): fewer calls to the hub. */
const REPORT_AFTER_MS = 2;

/** Why a request was aborted (the abort reason). */
const TIMEOUT = "webhook-timeout";
const CLOSED = "webhook-deleted";

interface Sending {
  controller: AbortController;
  timer: Timer;
}

/** One registration's courier. RPC methods: `send`, `close` (the hub's only). */
export class WebhookCourier extends DurableObject<Env> {
  private readonly platform: Platform;
  /** One attempt's timeout in ms; WEBHOOK_TIMEOUT_MS. */
  private readonly timeoutMs: number;
  private closed: boolean;
  /** Requests waiting for their answer, by attempt token. */
  private readonly sending = new Map<string, Sending>();
  /** Orders waiting for a free slot, in the order received (at most COURIER_QUEUE). */
  private queue: SendOrder[] = [];
  /** The hub to report to (`ctx.id` of the registration's SchoolHub, as a string), and its stub. */
  private hubId: string | null = null;
  private hub: ReturnType<Env["SCHOOL_HUB"]["get"]> | null = null;
  /** Outcomes not yet reported; `reporting` while a report call is under way. */
  private reports: AttemptReport[] = [];
  private reporting = false;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.platform = platformFor(ctx.id.toString(), "courier");
    this.timeoutMs = parseTimeoutMs(env.WEBHOOK_TIMEOUT_MS);
    this.closed = ctx.storage.kv.get("closed") === true;
  }

  /**
   * Sends the hub's orders, each at once if one of the COURIER_SLOTS is free (its timeout
   * starting then), else when one frees (at most COURIER_QUEUE waiting). Synchronous: the
   * `closed` check and the start of every request it sends are one step; a queued order is
   * started later in another such step, or dropped by `close()`.
   *
   * @param hubId the hub's `ctx.id.toString()`, where outcomes are reported.
   * @returns the orders accepted (`sentAt` in ms, or `null` when queued) and those refused:
   *   `closed` (deleted registration) or `busy` (slots and queue full, e.g. taken by a hub
   *   instance that has since restarted).
   */
  send(hubId: string, orders: SendOrder[]): SendReceipt {
    if (hubId !== this.hubId) {
      this.hubId = hubId;
      this.hub = this.env.SCHOOL_HUB.get(this.env.SCHOOL_HUB.idFromString(hubId));
    }
    const receipt: SendReceipt = { accepted: [], refused: [] };
    for (const order of orders) {
      if (this.closed) receipt.refused.push({ token: order.token, reason: "closed" });
      else if (this.sending.size < COURIER_SLOTS) receipt.accepted.push({ token: order.token, sentAt: this.start(order) });
      else if (this.queue.length < COURIER_QUEUE) {
        this.queue.push(order);
        receipt.accepted.push({ token: order.token, sentAt: null });
      } else receipt.refused.push({ token: order.token, reason: "busy" });
    }
    return receipt;
  }

  /**
   * Closes the courier for good (its registration is deleted): in one synchronous step it is
   * marked closed in storage — durable before the hub hears back (output gate) — every
   * request under way is aborted and every queued order dropped, none reported. Idempotent.
   */
  close(): void {
    if (!this.closed) {
      this.closed = true;
      this.ctx.storage.kv.put("closed", true);
    }
    for (const { controller, timer } of this.sending.values()) {
      timer.cancel();
      controller.abort(CLOSED);
    }
    this.sending.clear();
    this.queue = [];
    this.reports = [];
  }

  /** Starts one request; returns the instant it was sent (ms). */
  private start(order: SendOrder): number {
    const sentAt = this.platform.now();
    const controller = new AbortController();
    const timer = this.platform.setTimer(() => controller.abort(TIMEOUT), this.timeoutMs);
    this.sending.set(order.token, { controller, timer });
    const response = this.platform.fetch(order.url, {
      method: "POST",
      headers: order.headers,
      body: order.body,
      signal: controller.signal,
      redirect: "manual",
    });
    void this.finish(order, sentAt, controller, timer, response);
    return sentAt;
  }

  /** Awaits the answer's headers (the slot is free from then on) and queues the report. */
  private async finish(order: SendOrder, sentAt: number, controller: AbortController, timer: Timer, response: Promise<Response>): Promise<void> {
    let status: number | null = null;
    let retryAfter: string | null = null;
    let error: string | null;
    try {
      const res = await response;
      status = res.status;
      res.body?.cancel().catch(() => {});
      if (honoursRetryAfter(status)) retryAfter = res.headers.get("retry-after");
      error = describeAnswer(status, retryAfter);
    } catch (err) {
      const reason: unknown = controller.signal.reason;
      error = reason === TIMEOUT ? `timed out after ${this.timeoutMs} ms` : `network error: ${err instanceof Error ? err.message : String(err)}`;
    } finally {
      timer.cancel();
    }
    // Gone from `sending`: closed meanwhile, nothing to report.
    if (!this.sending.delete(order.token)) return;
    // The slot is free: the next queued order goes now, in this same step.
    const next = this.closed ? undefined : this.queue.shift();
    if (next) this.start(next);
    this.reports.push({ deliveryId: order.deliveryId, token: order.token, sentAt, finishedAt: this.platform.now(), status, error, retryAfter });
    if (this.reports.length === 1 && !this.reporting) this.platform.setTimer(() => this.pump(0), REPORT_AFTER_MS);
  }

  /** Reports the waiting outcomes to the hub: one call at a time, each carrying all of them. */
  private pump(tries: number): void {
    const hub = this.hub;
    if (this.reporting || this.reports.length === 0 || hub === null) return;
    const batch = this.reports;
    this.reports = [];
    this.reporting = true;
    this.platform
      .call(() => hub.report(batch))
      .then(
        () => {
          this.reporting = false;
          this.pump(0);
        },
        (err: unknown) => {
          if (tries + 1 >= REPORT_TRIES || this.closed) {
            // The hub's backstop treats these attempts as lost and retries them (at least once).
            console.warn("WebhookCourier: could not report to the hub", err);
            this.reporting = false;
            this.pump(0);
            return;
          }
          this.reports = [...batch, ...this.reports];
          this.platform.setTimer(() => {
            this.reporting = false;
            this.pump(tries + 1);
          }, REPORT_RETRY_MS);
        },
      );
  }
}
