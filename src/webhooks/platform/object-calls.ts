/**
 * Calls from one Durable Object to others, made safe for the real platform (docs/architecture.md §
 * "Invariants", faults): every call has a timeout; a stub whose call failed is dropped, so
 * the next call makes a new one (a stub that threw stays broken); an `overloaded` error is
 * told apart so that the caller backs off instead of retrying at once.
 */
import type { Platform, Timer } from "./platform";

/** Default timeout of one call between objects, in ms: a stuck object costs a caller this, not the runtime's ~10 s of retries. */
const OBJECT_CALL_TIMEOUT_MS = 3_000;

/** The error of a call that did not answer within its timeout. */
class CallTimeout extends Error {
  constructor(ms: number) {
    super(`no answer within ${ms} ms`);
    this.name = "CallTimeout";
  }
}

/**
 * Whether `err` says the callee is overloaded (Durable Objects set `overloaded: true` on such
 * errors; retrying at once would only add to the load).
 */
export function isOverloaded(err: unknown): boolean {
  if (typeof err !== "object" || err === null) return false;
  return (err as { overloaded?: unknown }).overloaded === true || /overloaded/i.test(String((err as { message?: unknown }).message ?? ""));
}

/** Stubs of one namespace by name, each call timed out and each failed stub replaced. */
export class ObjectCalls<Stub> {
  private readonly stubs = new Map<string, Stub>();

  /** The end of the last call started (`oneAtATime`): the next one starts after it. */
  private tail: Promise<unknown> = Promise.resolve();

  /**
   * @param makeStub a new stub for the object named `name` (e.g. `ns.get(ns.idFromName(name))`).
   * @param timeoutMs each call's timeout (ms).
   * @param oneAtATime calls wait for the one before to end (a courier keeps one slot of its
   *   I/O context for its calls to the hub: docs/architecture.md § The I/O context budget).
   */
  constructor(
    private readonly platform: Platform,
    private readonly makeStub: (name: string) => Stub,
    private readonly timeoutMs = OBJECT_CALL_TIMEOUT_MS,
    private readonly oneAtATime = false,
  ) {}

  /**
   * Calls the object `name`: `send` is invoked synchronously with its stub (the call is under
   * way when this returns), or, `oneAtATime`, once the call before has ended (its timeout
   * counts from then).
   *
   * @returns what the call answers.
   * @throws what the call threw, or `CallTimeout`; either way the stub is dropped.
   */
  call<T>(name: string, send: (stub: Stub) => PromiseLike<T>): Promise<T> {
    if (!this.oneAtATime) return this.callNow(name, send);
    const call = this.tail.then(() => this.callNow(name, send));
    this.tail = call.catch(() => undefined);
    return call;
  }

  private callNow<T>(name: string, send: (stub: Stub) => PromiseLike<T>): Promise<T> {
    let stub = this.stubs.get(name);
    if (stub === undefined) {
      stub = this.makeStub(name);
      this.stubs.set(name, stub);
    }
    const used = stub;
    let timer: Timer | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = this.platform.setTimer(() => reject(new CallTimeout(this.timeoutMs)), this.timeoutMs);
    });
    return Promise.race([this.platform.call(() => send(used)), timeout]).then(
      (value) => {
        timer?.cancel();
        return value;
      },
      (err: unknown) => {
        timer?.cancel();
        if (this.stubs.get(name) === used) this.stubs.delete(name);
        throw err;
      },
    );
  }

  /** Forgets the stub of `name` (its object is gone for good). */
  forget(name: string): void {
    this.stubs.delete(name);
  }
}
