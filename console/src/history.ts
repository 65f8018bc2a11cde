/**
 * Charts that last (docs/monitoring.md): a group's lag, time lag and retention headroom per partition over the last
 * 24 hours with each partition's drain estimate beside the headroom, and a topic's produce and consume rates; one
 * point a minute, from the history the broker stores (a restart keeps it).
 */
import { html } from 'htm/preact';
import type { VNode } from 'preact';
import { historyApi } from './api.js';
import type { DrainEstimate, GroupHistory, TopicHistory } from './api.js';
import { Chart } from './chart.js';
import type { ChartSeries } from './chart.js';
import { Badge, Table, useData } from './components.js';
import { bytes, duration, num } from './format.js';

/** Hours the charts span. */
const HOURS = 24;

/** Units a duration chart may use, the largest first. */
const TIME_UNITS: Array<[string, number]> = [['d', 86_400_000], ['h', 3_600_000], ['min', 60_000], ['s', 1000]];

/** The x range of a history that starts at `fromMs`: the broker's now, {@link HOURS} later, in seconds. */
const rangeOf = (history: { fromMs: number } | null): [number, number] | undefined =>
  history === null ? undefined : [history.fromMs / 1000, history.fromMs / 1000 + HOURS * 3600];

/** The history's samples of one measure, a series per topic partition; durations in the unit that suits their size. */
function seriesOf(history: GroupHistory | null, pick: 'lag' | 'timeLagMs' | 'headroomMs' | 'headroomBytes'): { series: ChartSeries[]; unit: string } {
  const partitions = history?.partitions ?? [];
  let unit: [string, number] = pick === 'lag' ? ['records', 1] : pick === 'headroomBytes' ? ['MiB', 2 ** 20] : ['s', 1000];
  if (pick === 'timeLagMs' || pick === 'headroomMs') {
    const largest = Math.max(0, ...partitions.flatMap((p) => p.samples.map((s) => Math.abs(s[pick] ?? 0))));
    unit = TIME_UNITS.find(([, ms]) => largest >= 2 * ms) ?? ['s', 1000];
  }
  const series = partitions.map((p) => ({
    label: `${p.topic}/${p.partition}`,
    points: p.samples.map((s): [number, number | null] => [s.at / 1000, s[pick] === null ? null : s[pick]! / unit[1]]),
  }));
  return { series, unit: unit[0] };
}

/** What a drain estimate says, in words: which comes first, catching up or retention, and when. */
function drainText(d: DrainEstimate): string {
  const retention = d.retentionInMs === null ? 'no time retention' : `retention deletes the first unread record in ${duration(d.retentionInMs)}`;
  switch (d.outcome) {
    case 'caught-up': return 'nothing unread: no lag to drain';
    case 'drains-first': return `catches up in ${duration(d.drainMs)}, before retention (${retention})`;
    case 'retention-first': return `retention first: ${retention}; ${d.drainMs === null ? 'nothing read lately' : `catching up takes ${duration(d.drainMs)}`}`;
    case 'not-draining': return `nothing read lately, ${retention}: the lag only grows`;
    case 'unknown': return 'no consume rate yet (one more sample needed)';
  }
}

/** A group's health over the last 24 hours, with each partition's drain estimate beside the headroom. */
export function GroupHistoryCharts({ groupId }: { groupId: string }): VNode {
  const history = useData(() => historyApi.group(groupId, HOURS), [groupId]).data;
  const range = rangeOf(history);
  return html`<section id="group-history">
    <h2>Last ${HOURS} hours <span class="muted">(one point ${!history || history.stepMs === 60_000 ? 'a minute' : `every ${duration(history.stepMs)}`})</span></h2>
    <${Chart} id="chart-lag" title="lag" range=${range} ...${seriesOf(history, 'lag')} />
    <${Chart} id="chart-time-lag" title="time lag" range=${range} ...${seriesOf(history, 'timeLagMs')} />
    <${Chart} id="chart-headroom" title="retention headroom" range=${range} ...${seriesOf(history, 'headroomMs')} />
    <h3>Drain estimate</h3>
    <p class="muted">the time to read the lag at the consume rate of the last 15 minutes, beside the headroom: which comes first</p>
    <${Table} id="drain-estimates" empty="no samples yet" head=${['partition', 'lag', 'consume rate', 'catch up in', 'headroom', 'first', '']}
      rows=${(history?.partitions ?? []).map((p) => {
        const last = p.samples.at(-1);
        const d = p.drain;
        return [
          `${p.topic}/${p.partition}`, num(last?.lag ?? null),
          d.consumeRecordsPerSec === null ? '-' : `${d.consumeRecordsPerSec.toFixed(1)} records/s`, duration(d.drainMs),
          [duration(d.retentionInMs), last?.headroomBytes == null ? '' : ` / ${bytes(last.headroomBytes)}`].join(''),
          html`<span data-drain=${`${p.topic}/${p.partition}`}><${Badge} state=${d.outcome} /></span>`, drainText(d),
        ];
      })} />
    <${Chart} id="chart-headroom-bytes" title="retention headroom (size)" range=${range} ...${seriesOf(history, 'headroomBytes')} />
  </section>`;
}

/** A topic's rates of one unit, produce and consume. */
function ratesOf(history: TopicHistory | null, unit: 'Records' | 'Bytes'): ChartSeries[] {
  const points = history?.points ?? [];
  return (['produce', 'consume'] as const).map((kind) => ({
    label: kind, points: points.map((p): [number, number] => [p.at / 1000, p[`${kind}${unit}PerSec`]]),
  }));
}

/** A topic's produce and consume rates over the last 24 hours, in records/s and bytes/s. */
export function TopicRateCharts({ topic }: { topic: string }): VNode {
  const history = useData(() => historyApi.topic(topic, HOURS), [topic]).data;
  const range = rangeOf(history);
  return html`<section id="topic-rates">
    <h2>Rates, last ${HOURS} hours <span class="muted">(per minute; consume: records answered to fetches)</span></h2>
    <${Chart} id="chart-rate-records" title="records" unit="records/s" range=${range} series=${ratesOf(history, 'Records')} />
    <${Chart} id="chart-rate-bytes" title="bytes" unit="bytes/s" range=${range} series=${ratesOf(history, 'Bytes')} />
  </section>`;
}
