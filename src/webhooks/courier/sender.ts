/**
 * A courier's requests in flight: each sent at once, its timeout counting from then, its
 * answer read up to the status line (the slot is free from then on: docs/architecture.md § "Invariants")
 * and the first 1,024 bytes of its body (docs/reference.md § "Delivery log": `responseBody`), with
 * its `webhook-delivery` header (§ "Event delivery": delivery control). Also the
 * throttle of `maxPerSecond`: waiting for it is not part of an attempt's timeout.
 */
import { type DeliveryControl, describeAnswer, honoursRetryAfter, parseDeliveryControl } from "../delivery/schedule";
import type { Platform, Timer } from "../platform/platform";
import type { DueRow, Outcome } from "./queue";

/** How much of an answer's body is kept (docs/reference.md § "Delivery log"), in bytes. */
const RESPONSE_BODY_BYTES = 1024;

/** A failed connection's `error`: the runtime's message may quote the receiver (a TLS name, a proxy's text). */
const NETWORK_ERROR = "network error: the connection failed or was lost";

/** Custom header values shorter than this are not redacted from stored answers (docs/reference.md § "Delivery log"). */
const REDACT_MIN_CHARS = 8;

/**
 * `body` with every occurrence of each of `secrets` (custom header values of at least
 * REDACT_MIN_CHARS characters, the signing secrets) replaced by `[redacted]`: a receiver that
 * echoes its request must not show them to the school's other credentials.
 */
function redactAnswer(body: string, secrets: readonly string[]): string {
  let out = body;
  for (const secret of secrets) if (secret.length >= REDACT_MIN_CHARS) out = out.replaceAll(secret, "[redacted]");
  return out;
}

/** Why a request was aborted (the abort reason). */
const TIMEOUT = "webhook-timeout";
const CLOSED = "webhook-deleted";

/** The requests in flight of one courier instance. */
export class Sender {
  private readonly inFlight = new Map<number, { controller: AbortController; sentAt: number; timedOut: boolean }>();
  /**
   * One timer for every attempt's timeout, armed for the earliest deadline still running:
   * an attempt that ends leaves it be (no timer set and cleared per attempt, which costs
   * Worker CPU at every delivery); when it fires it aborts what is past its deadline and
   * arms itself for the next.
   */
  private deadline: Timer | null = null;

  /**
   * @param timeoutMs one attempt's timeout (WEBHOOK_TIMEOUT_MS).
   * @param onDone called with each attempt's outcome (not for attempts aborted by `abortAll`).
   */
  constructor(
    private readonly platform: Platform,
    private readonly timeoutMs: number,
    private readonly onDone: (outcome: Outcome) => void,
  ) {}

  /** Requests in flight. */
  get size(): number {
    return this.inFlight.size;
  }

  /** Queue ids of the deliveries in flight. */
  busy(): number[] {
    return [...this.inFlight.keys()];
  }

  /** When the oldest request in flight times out (ms), or `null` when none is in flight (the map keeps start order). */
  firstDeadline(): number | null {
    const first = this.inFlight.values().next().value;
    return first === undefined ? null : first.sentAt + this.timeoutMs;
  }

  /**
   * Sends one attempt now (synchronously under way: the caller's step checked it may).
   * `secrets`: what the stored answer must not show (`redactAnswer`).
   */
  start(row: DueRow, url: string, headers: Record<string, string>, secrets: readonly string[] = []): void {
    const sentAt = this.platform.now();
    const controller = new AbortController();
    this.inFlight.set(row.id, { controller, sentAt, timedOut: false });
    if (this.deadline === null) this.armDeadline(sentAt + this.timeoutMs);
    const response = this.platform.fetch(url, { method: "POST", headers, body: row.body, signal: controller.signal, redirect: "manual" });
    void this.finish(row, url, sentAt, controller, response, secrets);
  }

  private armDeadline(at: number): void {
    this.deadline = this.platform.setTimer(() => this.expire(), Math.max(0, at - this.platform.now()));
  }

  private dropDeadline(): void {
    this.deadline?.cancel();
    this.deadline = null;
  }

  /** Aborts the attempts past their timeout (in start order: the oldest first) and arms the timer for the next deadline. */
  private expire(): void {
    this.deadline = null;
    const now = this.platform.now();
    for (const entry of this.inFlight.values()) {
      if (entry.timedOut) continue;
      const at = entry.sentAt + this.timeoutMs;
      if (at > now) {
        this.armDeadline(at);
        return;
      }
      entry.timedOut = true;
      entry.controller.abort(TIMEOUT);
    }
  }

  /** Aborts every request in flight; their outcomes are never reported (the registration is deleted). */
  abortAll(): void {
    this.dropDeadline();
    for (const { controller } of this.inFlight.values()) controller.abort(CLOSED);
    this.inFlight.clear();
  }

  private async finish(
    row: DueRow,
    url: string,
    sentAt: number,
    controller: AbortController,
    response: Promise<Response>,
    secrets: readonly string[],
  ): Promise<void> {
    let status: number | null = null;
    let retryAfter: string | null = null;
    let control: DeliveryControl | null = null;
    let error: string | null;
    let responseBody: string | null = null;
    let durationMs: number;
    try {
      const res = await response;
      durationMs = this.platform.now() - sentAt;
      status = res.status;
      if (honoursRetryAfter(status)) retryAfter = res.headers.get("retry-after");
      control = parseDeliveryControl(res.headers.get("webhook-delivery"));
      error = describeAnswer(status, retryAfter, control, this.platform.now());
      responseBody = redactAnswer(await readStart(res), secrets);
    } catch {
      durationMs = this.platform.now() - sentAt;
      const reason: unknown = controller.signal.reason;
      error = reason === TIMEOUT ? `timed out after ${this.timeoutMs} ms` : NETWORK_ERROR;
    }
    // Gone from the map: aborted by `abortAll`, nothing to report.
    if (!this.inFlight.delete(row.id)) return;
    if (this.inFlight.size === 0) this.dropDeadline();
    this.onDone({
      row,
      url,
      sentAt,
      finishedAt: this.platform.now(),
      durationMs,
      status,
      error,
      retryAfter,
      responseBody,
      ...(control === null ? {} : { control }),
    });
  }
}

/**
 * The first RESPONSE_BODY_BYTES of `res`'s body as UTF-8 (invalid bytes replaced); the rest
 * is not read. What arrived before an error or the timeout is kept.
 */
async function readStart(res: Response): Promise<string> {
  if (res.body === null) return "";
  const reader = res.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  try {
    while (size < RESPONSE_BODY_BYTES) {
      const { done, value } = await reader.read();
      if (done) break;
      chunks.push(value);
      size += value.byteLength;
    }
  } catch {
    // Keep what arrived.
  } finally {
    reader.cancel().catch(() => {});
  }
  const bytes = new Uint8Array(Math.min(size, RESPONSE_BODY_BYTES));
  let at = 0;
  for (const chunk of chunks) {
    const part = chunk.subarray(0, bytes.length - at);
    bytes.set(part, at);
    at += part.length;
    if (at >= bytes.length) break;
  }
  return new TextDecoder("utf-8").decode(bytes);
}

/** The throttle of `maxPerSecond`: no more attempts start within any one-second window. */
export class Throttle {
  /** Start instants (ms) within the last second, oldest first (at most `maxPerSecond`). */
  private starts: number[] = [];
  private timer: Timer | null = null;

  /** Whether a start waits for the throttle's timer. */
  get waiting(): boolean {
    return this.timer !== null;
  }

  /** Calls `start` once the next attempt may start (one timer at a time), `now` in ms. */
  wakeLater(platform: Platform, now: number, start: () => void): void {
    if (this.timer !== null) return;
    this.timer = platform.setTimer(
      () => {
        this.timer = null;
        start();
      },
      Math.max(1, this.nextAt() - now),
    );
  }

  /** Drops the pending wake-up (the courier closed). */
  cancel(): void {
    this.timer?.cancel();
    this.timer = null;
  }

  /** How many attempts may start at `now` (ms) under `maxPerSecond` (`null`: no limit). */
  allowance(now: number, maxPerSecond: number | null): number {
    if (maxPerSecond === null) return Number.POSITIVE_INFINITY;
    while (this.starts.length > 0 && this.starts[0]! <= now - 1000) this.starts.shift();
    return Math.max(0, maxPerSecond - this.starts.length);
  }

  /** When the next attempt may start (ms), once `allowance` is 0. */
  nextAt(): number {
    return (this.starts[0] ?? 0) + 1000;
  }

  /** An attempt started at `now` (ms). */
  record(now: number): void {
    this.starts.push(now);
  }
}
