/**
 * Succeeded, failed and skipped log entries per hour (or per day) from
 * GET /v3/webhooks/{id}/stats, drawn by uPlot as stacked bars, the delay's percentiles as
 * lines (LatencyChart.tsx), with the same numbers in a table for screen readers and keyboard
 * users (the canvas is one image to them).
 */

import { useEffect, useRef, useState } from "preact/hooks";
import uPlot from "uplot";
import { ApiError, api, DELIVERY_STATUS_LABELS as L, type StatsBucket } from "../api";
import { ErrorAlert, type Problem } from "../components";
import { formatBucket } from "../format";
import { formatDelay, LatencyChart } from "./LatencyChart";

/** The ranges offered: the contract's default (24 h, hourly) and the whole retention, daily. */
const RANGES = {
  day: { label: "Last 24 hours, per hour", ms: 24 * 3600_000, bucket: "hour" },
  week: { label: "Last 7 days, per day", ms: 7 * 24 * 3600_000, bucket: "day" },
} as const;
type RangeKey = keyof typeof RANGES;

/** A bucket's width in seconds (uPlot's time unit). */
const BUCKET_S = { hour: 3600, day: 86_400 } as const;

/** Series drawn, bottom to top of each stack; colours pass 4.5:1 on white. */
const SERIES = [
  { key: "succeeded", label: L.succeeded, color: "#2e7d32" },
  { key: "failed", label: L.failed, color: "#c62828" },
  { key: "skipped", label: L.skipped, color: "#5f6368" },
] as const;

/**
 * The data for stacked bars: bars start at zero, so each series is drawn as
 * the running total and the tallest is drawn first (underneath).
 */
function chartData(buckets: StatsBucket[]): uPlot.AlignedData {
  const xs = buckets.map((b) => Date.parse(b.start) / 1000);
  const totals = SERIES.map((_, i) => buckets.map((b) => SERIES.slice(0, i + 1).reduce((sum, s) => sum + b[s.key], 0)));
  return [xs, ...totals.reverse()];
}

function Chart({ buckets, bucket }: { buckets: StatsBucket[]; bucket: "hour" | "day" }) {
  const box = useRef<HTMLDivElement>(null);
  useEffect(() => {
    const el = box.current!;
    const bars = uPlot.paths.bars!({ size: [0.8, 40], align: 1 });
    const drawn = [...SERIES].reverse();
    const plot = new uPlot(
      {
        width: Math.max(el.clientWidth, 280),
        height: 220,
        legend: { show: false },
        cursor: { show: false },
        // Each bar spans its bucket to the right of its start (align 1): the x range ends one
        // bucket after the last start, or the newest bucket — usually the busiest — is cut off.
        scales: { x: { time: true, range: (_u, min, max) => [min, max + BUCKET_S[bucket]] }, y: { range: (_u, _min, max) => [0, Math.max(1, max)] } },
        // The axis in UTC, as the buckets are: daily ticks then fall on the bars' starts.
        tzDate: (ts) => uPlot.tzDate(new Date(ts * 1000), "Etc/UTC"),
        axes: [{}, { label: "attempts", values: (_u, ticks) => ticks.map((t) => (Number.isInteger(t) ? String(t) : "")) }],
        series: [{}, ...drawn.map((s) => ({ label: s.label, fill: s.color, stroke: s.color, width: 0, paths: bars, points: { show: false } }))],
      },
      chartData(buckets),
      el,
    );
    const resize = new ResizeObserver(() => plot.setSize({ width: Math.max(el.clientWidth, 280), height: 220 }));
    resize.observe(el);
    return () => {
      resize.disconnect();
      plot.destroy();
    };
  }, [buckets, bucket]);
  const totals = SERIES.map((s) => buckets.reduce((sum, b) => sum + b[s.key], 0));
  return (
    <>
      <ul class="legend" aria-hidden="true">
        {SERIES.map((s, i) => (
          <li>
            <span class={`swatch swatch-${s.key}`} /> {s.label}: {totals[i]}
          </li>
        ))}
      </ul>
      <div
        ref={box}
        class="chart"
        role="img"
        aria-label={`Stacked bars per ${bucket}: ${SERIES.map((s, i) => `${totals[i]} ${s.label.toLowerCase()}`).join(", ")} in the period. The table below has every ${bucket}.`}
      />
    </>
  );
}

/**
 * The statistics panel of registration `id`: a period to choose, the chart and its table.
 * Reloads when `refresh` changes (the detail view bumps it after each load of the log).
 */
export function StatsChart({ id, refresh }: { id: string; refresh: number }) {
  const [range, setRange] = useState<RangeKey>("day");
  // The buckets with the width they were asked with: until a new period's answer arrives, the
  // old one stays drawn and labelled as what it is.
  const [shown, setShown] = useState<{ bucket: "hour" | "day"; buckets: StatsBucket[] } | null>(null);
  const [error, setError] = useState<Problem | null>(null);
  // A server without the stats route (404 NOT_FOUND, 405) says so once: the reloads that follow
  // the log do not ask again (and do not make screen readers repeat the alert).
  const absent = useRef(false);
  useEffect(() => {
    absent.current = false;
  }, [id, range]);
  useEffect(() => {
    if (absent.current) return;
    let live = true;
    const { ms, bucket } = RANGES[range];
    const until = Date.now();
    api.stats(id, new Date(until - ms).toISOString(), new Date(until).toISOString(), bucket).then(
      (b) => {
        if (!live) return;
        setShown({ bucket, buckets: b });
        setError(null);
      },
      (err) => {
        if (err instanceof ApiError && (err.code === "NOT_FOUND" || err.code === "METHOD_NOT_ALLOWED")) absent.current = true;
        if (!live) return;
        setShown(null);
        setError(err);
      },
    );
    return () => {
      live = false;
    };
  }, [id, range, refresh]);
  return (
    <section aria-labelledby="stats-title" class="panel">
      <div class="title-row">
        <h2 id="stats-title">Deliveries over time</h2>
        <div class="field inline">
          <label for="stats-range">Period</label>
          <select id="stats-range" value={range} onChange={(e) => setRange(e.currentTarget.value as RangeKey)}>
            {Object.entries(RANGES).map(([k, r]) => (
              <option value={k}>{r.label}</option>
            ))}
          </select>
        </div>
      </div>
      <ErrorAlert error={error} title="The statistics could not be read" />
      {shown && (
        <>
          <Chart buckets={shown.buckets} bucket={shown.bucket} />
          <LatencyChart buckets={shown.buckets} bucket={shown.bucket} />
          <details>
            <summary>The numbers, per {shown.bucket} (UTC)</summary>
            <div class="table-scroll">
              <table>
                <caption class="visually-hidden">Attempts per {shown.bucket} (UTC), oldest first</caption>
                <thead>
                  <tr>
                    <th scope="col">{shown.bucket === "hour" ? "Hour" : "Day"} starting (UTC)</th>
                    <th scope="col">{L.succeeded}</th>
                    <th scope="col">{L.failed}</th>
                    <th scope="col">{L.skipped}</th>
                    <th scope="col">{L.pending}</th>
                    <th scope="col">Delay p50</th>
                    <th scope="col">Delay p95</th>
                    <th scope="col">Delay p99</th>
                  </tr>
                </thead>
                <tbody>
                  {shown.buckets.map((b) => (
                    <tr key={b.start}>
                      <th scope="row">{formatBucket(b.start, shown.bucket)}</th>
                      <td>{b.succeeded}</td>
                      <td>{b.failed}</td>
                      <td>{b.skipped}</td>
                      <td>{b.pending}</td>
                      <td>{formatDelay(b.delayMs?.p50)}</td>
                      <td>{formatDelay(b.delayMs?.p95)}</td>
                      <td>{formatDelay(b.delayMs?.p99)}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          </details>
        </>
      )}
    </section>
  );
}
