/**
 * The dispatcher's in-memory books (dispatcher.ts): attempts in flight and deliveries that
 * must not start again yet. Memory only: a new hub instance starts with
 * empty books and sends again whatever was in flight (delivery is at least once).
 */
/** One attempt handed to a courier and not yet finished. */
export interface Attempt {
  /** Names the attempt in the courier's report (random). */
  token: string;
  deliveryId: number;
  webhookId: string;
  eventId: string;
  eventType: string;
  /** 1-based number of this attempt. */
  attempt: number;
  /** When the hub handed it over (ms); `sentAt` once the courier confirms it sent it. */
  handedAt: number;
  sentAt: number | null;
}

/**
 * Attempts in flight (by registration and by token) and busy deliveries: in flight, or
 * finished with the outcome not yet written. A busy delivery is still due in SQLite; `fill`
 * skips it.
 */
export class Books {
  private readonly byHook = new Map<string, Map<number, Attempt>>();
  private readonly byToken = new Map<string, Attempt>();
  private readonly busy = new Set<number>();
  private readonly busyByHook = new Map<string, Set<number>>();
  /** Attempts in flight, all registrations. */
  count = 0;

  /** Books `attempt` as in flight; its delivery becomes busy. */
  add(attempt: Attempt): void {
    let perHook = this.byHook.get(attempt.webhookId);
    if (!perHook) {
      perHook = new Map();
      this.byHook.set(attempt.webhookId, perHook);
    }
    perHook.set(attempt.deliveryId, attempt);
    this.byToken.set(attempt.token, attempt);
    this.count += 1;
    this.setBusy(attempt.deliveryId, attempt.webhookId, true);
  }

  /** The attempt in flight named `token`, if any. */
  get(token: string): Attempt | undefined {
    return this.byToken.get(token);
  }

  /** Attempts in flight of one registration. */
  of(webhookId: string): Attempt[] {
    return [...(this.byHook.get(webhookId)?.values() ?? [])];
  }

  /** How many attempts of `webhookId` are in flight. */
  inFlightFor(webhookId: string): number {
    return this.byHook.get(webhookId)?.size ?? 0;
  }

  /** The busy deliveries of `webhookId` (ids). */
  busyOf(webhookId: string): number[] {
    return [...(this.busyByHook.get(webhookId) ?? [])];
  }

  /** Attempts in flight handed over before `instant` (ms). */
  handedBefore(instant: number): Attempt[] {
    return [...this.byToken.values()].filter((a) => a.handedAt < instant);
  }

  /** Takes an attempt off the in-flight books (its delivery stays busy). */
  remove(attempt: Attempt): void {
    if (this.byToken.get(attempt.token) !== attempt) return;
    this.byToken.delete(attempt.token);
    const perHook = this.byHook.get(attempt.webhookId)!;
    perHook.delete(attempt.deliveryId);
    if (perHook.size === 0) this.byHook.delete(attempt.webhookId);
    this.count -= 1;
  }

  setBusy(deliveryId: number, webhookId: string, busy: boolean): void {
    if (busy === this.busy.has(deliveryId)) return;
    let ids = this.busyByHook.get(webhookId);
    if (busy) {
      this.busy.add(deliveryId);
      if (!ids) {
        ids = new Set();
        this.busyByHook.set(webhookId, ids);
      }
      ids.add(deliveryId);
    } else {
      this.busy.delete(deliveryId);
      ids?.delete(deliveryId);
      if (ids?.size === 0) this.busyByHook.delete(webhookId);
    }
  }
}
