/**
 * One Durable Object's alarm as its code arms it: never later than what is already due (an
 * alarm serves everything due, so the earliest wins), with the instant remembered so that
 * arming again costs no storage call. Alarms run at least once; the handler calls `fired()`.
 */
export class AlarmClock {
  /** The alarm as this instance last set it (`undefined`: not read yet; `null`: none). */
  private at: number | null | undefined = undefined;
  /** The one read of the stored alarm: callers racing before it ends decide after it, in turn. */
  private reading: Promise<void> | null = null;

  constructor(private readonly storage: DurableObjectStorage) {}

  /** Arms the alarm for `at` (ms) unless one is due sooner and not past (`now`, ms). */
  async arm(at: number, now: number): Promise<void> {
    const set = await this.current();
    if (set !== null && set <= at && set >= now) return;
    this.at = at;
    await this.storage.setAlarm(at);
  }

  /**
   * Makes sure the alarm runs by `at` (ms): arms it unless one is set for `at` or sooner — an
   * overdue one included, which runs first (its handler re-arms for what is left).
   */
  armBy(at: number): Promise<void> {
    return this.arm(at, Number.NEGATIVE_INFINITY);
  }

  /** The alarm set (ms) or `null`: the stored one read once per instance (`fired`, an arm meanwhile win over the read). */
  private async current(): Promise<number | null> {
    if (this.at === undefined) {
      this.reading ??= this.storage.getAlarm().then((at) => {
        if (this.at === undefined) this.at = at;
      });
      await this.reading;
    }
    return this.at ?? null;
  }

  /** Whether an alarm is set for `now` (ms) or later. */
  armedAfter(now: number): boolean {
    return this.at !== undefined && this.at !== null && this.at >= now;
  }

  /** Whether `at` (ms) is sooner than the alarm set (or none is set). */
  sooner(at: number): boolean {
    return this.at === undefined || this.at === null || at < this.at;
  }

  /** The alarm ran (call first thing in the handler). */
  fired(): void {
    this.at = null;
  }

  /** No alarm any more. */
  async clear(): Promise<void> {
    this.at = null;
    await this.storage.deleteAlarm();
  }
}
