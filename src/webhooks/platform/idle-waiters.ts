/** Callers waiting for an object to be idle (tests and the benchmark's `whenIdle()`). */
export class IdleWaiters {
  private waiters: (() => void)[] = [];

  /** Resolves at once if `idle`, else at the next `settle` that finds it idle. */
  wait(idle: boolean): Promise<void> {
    if (idle) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  /** Wakes the waiters if `idle()` (evaluated only when someone waits). */
  settle(idle: () => boolean): void {
    if (this.waiters.length === 0 || !idle()) return;
    const waiters = this.waiters;
    this.waiters = [];
    for (const wake of waiters) wake();
  }
}
