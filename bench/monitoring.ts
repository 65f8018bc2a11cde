/**
 * What watching consumers costs (docs/monitoring.md): one alert evaluation of every group's partitions and one
 * Prometheus scrape of `/metrics`, at `partitions` partitions of one topic (time retention 7 days, 10 records
 * each) and `groups` groups subscribed to it, each committed at a different offset in each partition (9 of 10
 * partitions lagging), so most partitions of most groups read their first unread record. Also a scrape and an
 * evaluation with one group, and `describeGroup` of one group. Embedded broker, in-process.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Broker } from '../src/broker/broker.js';

/** What the benchmark runs. */
export interface MonitoringBenchmarkOptions {
  partitions: number;
  groups: number;
}

const fmt = (n: number) => Math.round(n).toLocaleString('en-US');
const RECORDS_PER_PARTITION = 10;

async function timed<T>(work: () => Promise<T>): Promise<{ ms: number; result: T }> {
  const started = performance.now();
  const result = await work();
  return { ms: performance.now() - started, result };
}

/** Subscribes `groupId` and commits offset (partition + shift) % 11 in each partition. */
async function addGroup(broker: Broker, groupId: string, partitions: number, shift: number): Promise<void> {
  await broker.subscribe({ groupId, topic: 'events', startPolicy: 'earliest' });
  const offsets = Array.from({ length: partitions }, (_, partition) => ({ partition, offset: (partition + shift) % (RECORDS_PER_PARTITION + 1) }));
  await broker.commitOffsets({ groupId, topic: 'events', offsets });
}

/** Evaluations and scrapes, first (cold caches) then the best of three. */
async function measure(broker: Broker, label: string): Promise<void> {
  const evaluations = [];
  const scrapes = [];
  let text = '';
  for (let i = 0; i < 4; i++) {
    evaluations.push((await timed(() => broker.evaluateAlerts())).ms);
    const s = await timed(() => broker.metrics.scrape());
    scrapes.push(s.ms);
    text = s.result;
  }
  const describe = await timed(() => broker.describeGroup('g0'));
  const best = (xs: number[]) => Math.min(...xs.slice(1));
  const series = text.split('\n').filter((l) => l !== '' && !l.startsWith('#')).length;
  console.log(`  ${label}: evaluation ${fmt(evaluations[0]!)} ms first, ${fmt(best(evaluations))} ms after; ` +
    `scrape ${fmt(scrapes[0]!)} ms first, ${fmt(best(scrapes))} ms after (${fmt(series)} series, ${fmt(text.length / 1024)} KiB); ` +
    `describeGroup ${fmt(describe.ms)} ms; heap ${fmt(process.memoryUsage().heapUsed / 2 ** 20)} MiB, rss ${fmt(process.memoryUsage().rss / 2 ** 20)} MiB`);
}

export async function monitoringBenchmark(o: MonitoringBenchmarkOptions): Promise<void> {
  console.log(`\nmonitoring: one topic of ${fmt(o.partitions)} partitions (${RECORDS_PER_PARTITION} records each, retention 7 d), ` +
    `groups committed at different offsets (90% of partitions lagging); alert evaluation and /metrics scrape (per-partition series bounded at 20,000)`);
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'onelog-bench-monitoring-'));
  const broker = await Broker.open({ dataDir, retentionCheckIntervalMs: 0, compactionIntervalMs: 0, monitoring: { alertCheckIntervalMs: 0 } });
  try {
    await broker.createTopic({ topic: 'events', partitions: o.partitions, config: { retentionMs: 7 * 86_400_000 } });
    const records = [];
    for (let partition = 0; partition < o.partitions; partition++) {
      for (let i = 0; i < RECORDS_PER_PARTITION; i++) records.push({ key: null, value: Buffer.from(`event ${partition}-${i}`), partition });
    }
    for (let i = 0; i < records.length; i += 20_000) await broker.produce({ topic: 'events', records: records.slice(i, i + 20_000) });
    await addGroup(broker, 'g0', o.partitions, 0);
    await measure(broker, `1 group (${fmt(o.partitions)} group partitions)`);
    const setup = await timed(async () => {
      for (let g = 1; g < o.groups; g++) await addGroup(broker, `g${g}`, o.partitions, g);
    });
    console.log(`  (${o.groups - 1} more groups subscribed and committed in ${fmt(setup.ms / 1000)} s)`);
    await measure(broker, `${o.groups} groups (${fmt(o.groups * o.partitions)} group partitions)`);
  } finally {
    await broker.close();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}
