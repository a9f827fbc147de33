/**
 * The delivery delay per hour (or per day) from GET /v3/webhooks/{id}/stats: p50, p95 and p99
 * of `delayMs` drawn by uPlot as lines (a bucket without a success is a gap), each within
 * 5 % of the exact value (docs/reference.md § "Delivery statistics"). The same numbers are
 * in the stats table (StatsChart.tsx) for screen readers and keyboard users.
 */

import { useEffect, useRef } from "preact/hooks";
import uPlot from "uplot";
import type { StatsBucket } from "../api";

/** The lines drawn; colours pass 3:1 against white as graphics. */
const DELAY_SERIES = [
  { key: "p50", label: "Delay p50", color: "#1565c0" },
  { key: "p95", label: "Delay p95", color: "#ef6c00" },
  { key: "p99", label: "Delay p99", color: "#6a1b9a" },
] as const;

/** A bucket's width in seconds (uPlot's time unit). */
const BUCKET_S = { hour: 3600, day: 86_400 } as const;

/** Milliseconds as the axis and the label say them: ms under 10 s, else seconds. */
export function formatDelay(ms: number | null | undefined): string {
  if (ms === null || ms === undefined) return "–";
  return ms < 10_000 ? `${ms} ms` : `${(ms / 1000).toFixed(1)} s`;
}

/** The delay lines of `buckets` (a server without latency: no chart). */
export function LatencyChart({ buckets, bucket }: { buckets: StatsBucket[]; bucket: "hour" | "day" }) {
  const box = useRef<HTMLDivElement>(null);
  const measured = buckets.filter((b) => b.delayMs);
  useEffect(() => {
    const el = box.current;
    if (!el) return;
    const xs = buckets.map((b) => Date.parse(b.start) / 1000);
    const lines = DELAY_SERIES.map((s) => buckets.map((b) => b.delayMs?.[s.key] ?? null));
    const plot = new uPlot(
      {
        width: Math.max(el.clientWidth, 280),
        height: 180,
        legend: { show: false },
        cursor: { show: false },
        scales: { x: { time: true, range: (_u, min, max) => [min, max + BUCKET_S[bucket]] }, y: { range: (_u, _min, max) => [0, Math.max(1, max)] } },
        tzDate: (ts) => uPlot.tzDate(new Date(ts * 1000), "Etc/UTC"),
        axes: [{}, { label: "delay (ms)", size: 60 }],
        series: [{}, ...DELAY_SERIES.map((s) => ({ label: s.label, stroke: s.color, width: 2, spanGaps: false, points: { show: true, size: 4 } }))],
      },
      [xs, ...lines],
      el,
    );
    const resize = new ResizeObserver(() => plot.setSize({ width: Math.max(el.clientWidth, 280), height: 180 }));
    resize.observe(el);
    return () => {
      resize.disconnect();
      plot.destroy();
    };
  }, [buckets, bucket]);
  if (measured.length === 0) return <p class="hint">No delivery succeeded in this period: no delay to show.</p>;
  const worst = Math.max(...measured.map((b) => b.delayMs!.p99));
  return (
    <>
      <h3 class="chart-title">Delay from acceptance to the receiver's 2xx</h3>
      <ul class="delay-legend" aria-hidden="true">
        {DELAY_SERIES.map((s) => (
          <li>
            <span class={`swatch swatch-delay-${s.key}`} /> {s.label}
          </li>
        ))}
      </ul>
      <div
        ref={box}
        class="chart chart-delay"
        role="img"
        aria-label={`Lines per ${bucket}: delay percentiles p50, p95 and p99; the highest p99 in the period is ${formatDelay(worst)}. The table below has every ${bucket}.`}
      />
    </>
  );
}
