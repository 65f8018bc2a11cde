/** A time-series chart (uPlot): one line per partition of a group's health samples. */
import { html } from 'htm/preact';
import type { VNode } from 'preact';
import { useEffect, useRef } from 'preact/hooks';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';

/** A series of more points than this is drawn as a line alone, without a mark at each point. */
const MARKED_POINTS = 200;

const COLORS = ['#2563eb', '#dc2626', '#16a34a', '#9333ea', '#ea580c', '#0891b2', '#ca8a04', '#db2777'];

/** Series of points (seconds since the epoch, value) named by partition. */
export interface ChartSeries {
  label: string;
  points: Array<[number, number | null]>;
}

/** Aligns series on the union of their times (uPlot's data shape). */
function align(series: readonly ChartSeries[]): uPlot.AlignedData {
  const times = [...new Set(series.flatMap((s) => s.points.map(([t]) => t)))].sort((a, b) => a - b);
  return [times, ...series.map((s) => {
    const at = new Map(s.points);
    return times.map((t) => at.get(t) ?? null);
  })];
}

/**
 * A chart of `series` in `unit`; `range` fixes the x axis (seconds since the epoch), else it spans the points.
 * `data-points` on the figure counts the points with a value (for tests).
 */
export function Chart({ id, title, series, unit, range }: { id: string; title: string; series: ChartSeries[]; unit: string; range?: [number, number] }): VNode {
  const box = useRef<HTMLDivElement>(null);
  const points = series.reduce((n, s) => n + s.points.filter(([, v]) => v !== null).length, 0);
  useEffect(() => {
    if (!box.current || points === 0) return;
    const plot = new uPlot({
      width: Math.min(box.current.clientWidth || 600, 900), height: 200, title: `${title} (${unit})`,
      series: [{}, ...series.map((s, i) => ({ label: s.label, stroke: COLORS[i % COLORS.length], points: { show: s.points.length <= MARKED_POINTS, size: 4 } }))],
      axes: [{}, { size: 80 }],
      ...(range ? { scales: { x: { time: true, range: (): uPlot.Range.MinMax => range } } } : {}),
    }, align(series), box.current);
    return () => plot.destroy();
  }, [JSON.stringify(series), range?.[0]]);
  return html`<figure class="chart" id=${id} data-points=${points}>
    ${points === 0 ? html`<figcaption class="muted">${title}: nothing to chart (no samples yet, or no value: e.g. no time retention)</figcaption>` : null}
    <div ref=${box}></div>
  </figure>`;
}
