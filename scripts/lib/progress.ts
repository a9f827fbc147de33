/**
 * Terminal output of the scripts: numbers, aligned tables, and a tiny progress bar on stderr: `[#######-------]  52%  730,000/1,400,000 rows  24,310 rows/s  30.0 s`.
 * On a terminal it redraws one line (and ticks the elapsed time while a step runs); otherwise it
 * prints one line per update, so logs stay readable.
 */

const fmt = new Intl.NumberFormat("en-US");

/** Formats an integer with thousands separators (`1,234,567`). */
export function formatInt(n: number): string {
  return fmt.format(Math.round(n));
}

/** Rows of text as aligned columns (two spaces between), the header first. */
export function table(header: string[], rows: string[][]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  return [header, ...rows].map((r) => r.map((cell, i) => (i === r.length - 1 ? cell : cell.padEnd(widths[i]!))).join("  ")).join("\n");
}

/** Progress of a count of units (rows) towards a known total. */
export class Progress {
  private done = 0;
  private note = "";
  private readonly tty: boolean;
  /** Set by `finish`: the step's own measure, shown from then on. */
  private final: number | undefined;
  private timer: ReturnType<typeof setInterval> | undefined;

  /**
   * @param total units expected (0 allowed).
   * @param unit  label of a unit, plural (`rows`).
   * @param stream where to draw; stderr by default.
   * @param started `performance.now()` of the step's start (default now): the bar counts its
   *   time from the same instant as the step it shows.
   */
  constructor(
    private readonly total: number,
    private readonly unit = "rows",
    private readonly stream: NodeJS.WriteStream = process.stderr,
    private readonly started = performance.now(),
  ) {
    this.tty = Boolean(stream.isTTY) && process.env.CI === undefined;
    if (this.tty) {
      this.timer = setInterval(() => this.draw(), 250);
      this.timer.unref();
    }
  }

  /** Seconds since the bar was created. */
  get seconds(): number {
    return this.final ?? (performance.now() - this.started) / 1000;
  }

  /** Sets the units done so far and an optional note (`chunk 3`), and redraws. Ends any pending step. */
  update(done: number, note = this.note): void {
    this.done = done;
    this.note = note;
    this.pending = undefined;
    if (this.tty) this.draw();
    else this.stream.write(`${this.line()}\n`);
  }

  /**
   * Announces a step of `units` expected to take about `seconds`: while it runs, a terminal bar
   * advances by the elapsed share of the estimate (up to 95 % of the step, shown with `~`)
   * until {@link update} reports the real count.
   */
  expect(units: number, seconds: number): void {
    this.pending = { units, seconds, started: performance.now() };
  }

  private pending: { units: number; seconds: number; started: number } | undefined;

  private shown(): number {
    const p = this.pending;
    if (!p || !this.tty || p.seconds <= 0) return this.done;
    const share = Math.min(0.95, (performance.now() - p.started) / 1000 / p.seconds);
    return this.done + Math.floor(p.units * share);
  }

  /**
   * Stops ticking and ends the line.
   *
   * @param seconds the step's own duration (s), shown as the bar's last time, so that the bar
   *   and the step's summary print one number; default the bar's own clock.
   */
  finish(seconds?: number): void {
    this.final = seconds;
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    if (this.tty) {
      this.draw();
      this.stream.write("\n");
    }
  }

  private line(): string {
    const done = this.shown();
    const approx = done !== this.done ? "~" : "";
    const ratio = this.total > 0 ? Math.min(1, done / this.total) : 1;
    const width = 24;
    const filled = Math.round(ratio * width);
    const s = this.seconds;
    const rate = s > 0 ? done / s : 0;
    return (
      `[${"#".repeat(filled)}${"-".repeat(width - filled)}] ${String(Math.floor(ratio * 100)).padStart(3)}%  ` +
      `${approx}${formatInt(done)}/${formatInt(this.total)} ${this.unit}  ${approx}${formatInt(rate)} ${this.unit}/s  ${s.toFixed(1)} s` +
      (this.note ? `  ${this.note}` : "")
    );
  }

  private draw(): void {
    this.stream.write(`\r${this.line()}\x1b[K`);
  }
}
