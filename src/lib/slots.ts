/**
 * A fixed number of slots shared by concurrent tasks: `run` waits for a free slot (first
 * come, first served), runs the task in it and frees it when the task settles.
 */
export class Slots {
  private free: number;
  private readonly waiting: (() => void)[] = [];

  /** @param size slots (at least 1). */
  constructor(size: number) {
    this.free = Math.max(1, size);
  }

  /** Runs `task` in a slot. @returns what `task` returns; rejects as it rejects. */
  async run<T>(task: () => Promise<T>): Promise<T> {
    if (this.free > 0) this.free -= 1;
    else await new Promise<void>((resolve) => this.waiting.push(resolve));
    try {
      return await task();
    } finally {
      const next = this.waiting.shift();
      if (next) next();
      else this.free += 1;
    }
  }
}
