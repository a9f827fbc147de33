/**
 * The hub's side of its couriers (courier.ts): the Durable Object calls it makes to them —
 * hand-overs of attempts and closes — within the hub's call budget. The hub's I/O context is
 * budgeted as if such calls counted toward its 6 requests waiting (the Workers limits page
 * does not list them; see platform.ts): at most HUB_CALL_SLOTS under way at once, of which
 * at most SEND_CALL_SLOTS hand-overs, so that a delete's close always finds a slot soon.
 */
import type { Platform } from "./platform";
import type { SendOrder, SendReceipt } from "./types";

/**
 * The RPC stub of registration `webhookId`'s courier (`idFromName(webhookId)`; registration
 * ids are never reused). Only the registration's hub calls it (and the tests). Typed from the
 * binding, so this module needs no import of courier.ts or hub.ts.
 */
export function courierFor(env: Env, webhookId: string) {
  return env.WEBHOOK_COURIER.get(env.WEBHOOK_COURIER.idFromName(webhookId));
}

/** Durable Object calls the hub may have under way at once (its I/O context's 6). */
const HUB_CALL_SLOTS = 6;
/** Hand-overs under way at once: the sixth slot stays for closes. */
const SEND_CALL_SLOTS = HUB_CALL_SLOTS - 1;

/** Calls from one hub instance to its registrations' couriers. */
export class Couriers {
  private used = 0;
  private sending = 0;
  /** Closes waiting for a slot, in order. */
  private readonly waiters: (() => void)[] = [];
  /** Close calls under way, by registration id (a second close joins the first). */
  private readonly closings = new Map<string, Promise<void>>();
  /** Couriers' stubs, by registration id (deriving an id from a name costs a hash). */
  private readonly stubs = new Map<string, ReturnType<typeof courierFor>>();

  /**
   * @param hubId the hub's `ctx.id.toString()`, where couriers report outcomes.
   * @param onSlotFreed called when a call ends while hand-overs were held back for want of a
   *   slot (the dispatcher may hand over more).
   */
  constructor(
    private readonly env: Env,
    private readonly platform: Platform,
    private readonly hubId: string,
    private readonly onSlotFreed: () => void,
  ) {}

  /** Whether a hand-over may start now (a free slot within its share, no close waiting). */
  canHandOver(): boolean {
    return this.sending < SEND_CALL_SLOTS && this.used < HUB_CALL_SLOTS && this.waiters.length === 0;
  }

  /**
   * Hands checked and signed attempts to `webhookId`'s courier (`WebhookCourier.send`). The
   * call is under way when this returns (no `await` before it), so it belongs to the caller's
   * synchronous step. Call only after `canHandOver()`.
   *
   * @returns the courier's receipt; rejects if the courier cannot be reached.
   */
  handOver(webhookId: string, orders: SendOrder[]): Promise<SendReceipt> {
    this.used += 1;
    this.sending += 1;
    const courier = this.courier(webhookId);
    return this.platform.call(() => courier.send(this.hubId, orders)).finally(() => this.release(true));
  }

  /**
   * Closes `webhookId`'s courier (`WebhookCourier.close`), waiting in order for a call slot.
   * A close already under way for the same registration is joined. Rejects if the courier
   * cannot be reached.
   */
  close(webhookId: string): Promise<void> {
    let closing = this.closings.get(webhookId);
    if (!closing) {
      closing = this.closeNow(webhookId).finally(() => this.closings.delete(webhookId));
      this.closings.set(webhookId, closing);
    }
    return closing;
  }

  /** The close under way for `webhookId`, if any. */
  closing(webhookId: string): Promise<void> | undefined {
    return this.closings.get(webhookId);
  }

  private async closeNow(webhookId: string): Promise<void> {
    if (this.used < HUB_CALL_SLOTS) this.used += 1;
    // Else wait: the releaser hands its slot over (`used` stays the same).
    else await new Promise<void>((resolve) => this.waiters.push(resolve));
    try {
      await this.platform.call(() => this.courier(webhookId).close());
    } finally {
      this.stubs.delete(webhookId);
      this.release();
    }
  }

  /** The courier's stub (`courierFor`), kept while the registration has calls in flight. */
  private courier(webhookId: string): ReturnType<typeof courierFor> {
    let stub = this.stubs.get(webhookId);
    if (!stub) {
      stub = courierFor(this.env, webhookId);
      this.stubs.set(webhookId, stub);
    }
    return stub;
  }

  private release(handOver = false): void {
    const wasFull = this.used >= HUB_CALL_SLOTS || this.sending >= SEND_CALL_SLOTS;
    const next = this.waiters.shift();
    if (handOver) this.sending -= 1;
    if (next) next();
    else this.used -= 1;
    if (wasFull) this.onSlotFreed();
  }
}
