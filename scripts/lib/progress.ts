/**
 * Terminal output of the scripts: numbers, aligned tables, and a progress bar on stderr
 * (`cli-progress`): `[#######-------]  52%  730,000/1,400,000 rows  24,310 rows/s  30.0 s`.
 * On a terminal it redraws one line ten times a second, so the elapsed time ticks while a
 * step runs; otherwise it prints a line every 5 s and a last one, so logs stay readable.
 */
import cliProgress, { type Options, type Params, type SingleBar } from "cli-progress";

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

/** Interval of the lines printed where the stream is not a terminal (ms). */
const LOG_LINE_MS = 5_000;

/** The payload the bar's line shows beside cli-progress's own tokens. */
interface Payload {
  note: string;
}

/** Progress of a count of units (rows) towards a known total. */
export class Progress {
  private readonly bar: SingleBar;
  /** Set by `finish`: the step's own measure, shown from then on. */
  private final: number | undefined;
  private pending: { units: number; seconds: number; started: number } | undefined;

  /**
   * Starts drawing at 0.
   *
   * @param total units expected (0 allowed).
   * @param unit  label of a unit, plural (`rows`).
   * @param stream where to draw; stderr by default.
   * @param started `performance.now()` of the step's start (default now): the bar counts its
   *   time from the same instant as the step it shows.
   */
  constructor(
    total: number,
    private readonly unit = "rows",
    stream: NodeJS.WritableStream & { isTTY?: boolean } = process.stderr,
    private readonly started = performance.now(),
  ) {
    this.bar = new cliProgress.SingleBar({
      stream,
      barsize: 24,
      barCompleteChar: "#",
      barIncompleteChar: "-",
      // Cut to the terminal's width rather than switch its wrapping off: nothing to restore if the script is killed.
      linewrap: true,
      noTTYOutput: true,
      notTTYSchedule: LOG_LINE_MS,
      // Off a terminal the last line already ends with its newline: "clearing" it only leaves out a blank line.
      clearOnComplete: !stream.isTTY,
      // A function: each redraw adds the pending step's estimate and reads the step's clock.
      format: (options, params, payload: Payload) => this.line(options, params, payload),
      formatValue: (v, _options, type) => (type === "percentage" ? String(v).padStart(3) : formatInt(v)),
    });
    this.bar.start(total, 0, { note: "" } satisfies Payload);
  }

  /** Seconds since the step started, or the step's own measure once finished. */
  get seconds(): number {
    return this.final ?? (performance.now() - this.started) / 1000;
  }

  /** Sets the units done so far and an optional note (`chunk 3`). Ends any pending step. */
  update(done: number, note?: string): void {
    this.pending = undefined;
    this.bar.update(done, note === undefined ? {} : ({ note } satisfies Payload));
  }

  /**
   * Announces a step of `units` expected to take about `seconds`: while it runs, the bar
   * advances by the elapsed share of the estimate (up to 95 % of the step, shown with `~`)
   * until {@link update} reports the real count.
   */
  expect(units: number, seconds: number): void {
    this.pending = { units, seconds, started: performance.now() };
  }

  /**
   * Draws the last line and ends it.
   *
   * @param seconds the step's own duration (s), shown as the bar's last time, so that the bar
   *   and the step's summary print one number; default the bar's own clock.
   */
  finish(seconds?: number): void {
    this.final = seconds;
    this.pending = undefined;
    this.bar.stop();
  }

  /** The line of `params.value` units done, plus the pending step's estimate, in cli-progress's formatter. */
  private line(options: Options, params: Params, payload: Payload): string {
    const p = this.pending;
    const share = p && p.seconds > 0 ? Math.min(0.95, (performance.now() - p.started) / 1000 / p.seconds) : 0;
    const done = params.value + Math.floor((p?.units ?? 0) * share);
    const approx = done !== params.value ? "~" : "";
    const s = this.seconds;
    return cliProgress.Format.Formatter(
      { ...options, format: `[{bar}] {percentage}%  {approx}{value}/{total} {unit}  {approx}{rate} {unit}/s  {seconds} s{note}` },
      { ...params, value: done, progress: params.total > 0 ? Math.min(1, done / params.total) : 1 },
      { approx, unit: this.unit, rate: formatInt(s > 0 ? done / s : 0), seconds: s.toFixed(1), note: payload.note ? `  ${payload.note}` : "" },
    );
  }
}
