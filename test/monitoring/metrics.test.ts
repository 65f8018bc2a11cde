/**
 * `GET /metrics` on a real broker: the text parses as Prometheus's format (with a parser, not a regex), and its
 * per-partition series carry the numbers `groups describe --json` shows; counters and request timings move.
 */
import fs from 'node:fs';
import path from 'node:path';
import parsePrometheusTextFormat from 'parse-prometheus-text-format';
import type { ParsedFamily } from 'parse-prometheus-text-format';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Broker } from '../../src/broker/broker.js';
import { ManualClock } from '../../src/common/clock.js';
import { createHttpServer } from '../../src/server/http-server.js';
import { tmpDir } from '../helpers/tmp.js';
import { readEdits } from '../helpers/wikiticker.js';

const T0 = Date.UTC(2015, 8, 12, 12);
let clock: ManualClock;
let broker: Broker;
let app: ReturnType<typeof createHttpServer>;

beforeEach(async () => {
  clock = new ManualClock(T0);
  broker = await Broker.open({
    dataDir: tmpDir(), clock, retentionCheckIntervalMs: 0, compactionIntervalMs: 0, sessionCheckIntervalMs: 0, monitoring: { alertCheckIntervalMs: 0 },
  });
  app = createHttpServer(broker, { metrics: broker.metrics });
});
afterEach(async () => {
  await app.close();
  await broker.close();
});

async function scrape(): Promise<Map<string, ParsedFamily>> {
  const res = await app.inject({ method: 'GET', url: '/metrics' });
  expect(res.statusCode).toBe(200);
  expect(res.headers['content-type']).toContain('text/plain');
  return new Map(parsePrometheusTextFormat(res.body).map((f) => [f.name, f]));
}

/** The value of the series of `family` with exactly these labels. */
function value(families: Map<string, ParsedFamily>, family: string, labels: Record<string, string>): number | undefined {
  const series = families.get(family)?.metrics.find((m) => JSON.stringify(m.labels ?? {}) === JSON.stringify(labels));
  return series?.value === undefined ? undefined : Number(series.value);
}

describe('metrics', () => {
  it('carries per-partition series with the numbers groups describe shows', async () => {
    const edits = readEdits().slice(0, 3000);
    await broker.createTopic({ topic: 'edits', partitions: 3, config: { retentionMs: 30 * 24 * 3_600_000 } });
    await broker.produce({ topic: 'edits', records: edits.map((e) => ({ key: Buffer.from(e.key), value: Buffer.from(e.value), timestamp: e.timestamp })) });
    for (const [g, share] of [['near', 0.9], ['far', 0.1]] as const) {
      await broker.subscribe({ groupId: g, topic: 'edits', startPolicy: 'earliest' });
      const d = await broker.describeTopic('edits');
      await broker.commitOffsets({ groupId: g, topic: 'edits', offsets: d.partitions.map((p) => ({ partition: p.partition, offset: Math.floor(p.highWatermark * share) })) });
    }
    clock.advance(60_000);
    await broker.fetch({ topic: 'edits', partitions: [{ partition: 0, offset: 0 }], maxRecords: 10 });

    await scrape();
    const families = await scrape();
    for (const g of ['near', 'far']) {
      const d = await broker.describeGroup(g);
      for (const p of d.subscriptions[0]!.partitions) {
        const labels = { group: g, topic: 'edits', partition: String(p.partition) };
        expect(value(families, 'onelog_group_committed_offset', labels)).toBe(p.committedOffset);
        expect(value(families, 'onelog_group_lag_records', labels)).toBe(p.lag);
        expect(value(families, 'onelog_group_unread_records', labels)).toBe(p.unreadRecords);
        expect(value(families, 'onelog_group_time_lag_seconds', labels)).toBe(p.timeLagMs! / 1000);
        expect(value(families, 'onelog_group_retention_headroom_seconds', labels)).toBe(p.headroomMs! / 1000);
        expect(p.lag).toBeGreaterThan(0);
      }
      expect(value(families, 'onelog_group_topic_lag_records', { group: g, topic: 'edits' }))
        .toBe(d.subscriptions[0]!.partitions.reduce((sum, p) => sum + p.lag!, 0));
      // The group's totals, as groups describe has them: the sum, and the worst partitions by lag and by time lag.
      const partitions = d.subscriptions[0]!.partitions;
      expect(d.totalLag).toBe(partitions.reduce((sum, p) => sum + p.lag!, 0));
      const worst = partitions.reduce((a, b) => (b.lag! > a.lag! ? b : a));
      expect(d.maxLag).toEqual({ topic: 'edits', partition: worst.partition, lag: worst.lag });
      const late = partitions.reduce((a, b) => (b.timeLagMs! > a.timeLagMs! ? b : a));
      expect(d.maxTimeLag).toEqual({ topic: 'edits', partition: late.partition, timeLagMs: late.timeLagMs });
      expect(value(families, 'onelog_group_total_lag_records', { group: g })).toBe(d.totalLag);
      expect(value(families, 'onelog_group_max_lag_records', { group: g, topic: 'edits', partition: String(worst.partition) })).toBe(worst.lag);
      expect(value(families, 'onelog_group_max_time_lag_seconds', { group: g, topic: 'edits', partition: String(late.partition) }))
        .toBe(late.timeLagMs! / 1000);
    }
    const topic = await broker.describeTopic('edits');
    for (const p of topic.partitions) {
      const labels = { topic: 'edits', partition: String(p.partition) };
      expect(value(families, 'onelog_partition_high_watermark', labels)).toBe(p.highWatermark);
      expect(value(families, 'onelog_partition_log_start_offset', labels)).toBe(p.logStartOffset);
      expect(value(families, 'onelog_partition_size_bytes', labels)).toBeGreaterThan(0);
    }
    expect(value(families, 'onelog_produced_records_total', { topic: 'edits' })).toBe(3000);
    expect(value(families, 'onelog_fetched_records_total', { topic: 'edits' })).toBe(10);
    expect(families.get('onelog_produced_records_total')!.type).toBe('COUNTER');
    expect(families.get('onelog_process_cpu_seconds_total')).toBeDefined();
    // The scrape before this one was timed under its route pattern (the parser drops a labelled histogram's
    // labels, so the series is looked up in the text).
    expect(families.get('onelog_http_request_duration_seconds')!.type).toBe('HISTOGRAM');
    const text = (await app.inject({ method: 'GET', url: '/metrics' })).body;
    expect(text).toMatch(/^onelog_http_request_duration_seconds_count\{method="GET",route="\/metrics",status_code="200"\} [1-9]/m);
  });

  it('counts active alerts by kind and bounds the per-partition series', async () => {
    await broker.close();
    broker = await Broker.open({
      dataDir: tmpDir(), clock, retentionCheckIntervalMs: 0, monitoring: { alertCheckIntervalMs: 0 },
      metrics: { maxPartitionSeries: 5, maxGroupPartitionSeries: 3 },
    });
    app = createHttpServer(broker, { metrics: broker.metrics });
    await broker.createTopic({ topic: 't', partitions: 8, config: { retentionMs: 1000 } });
    await broker.subscribe({ groupId: 'g', topic: 't', startPolicy: 'earliest' });
    await broker.produce({ topic: 't', records: Array.from({ length: 8 }, (_, partition) => ({ key: null, value: Buffer.from('x'), partition })) });
    clock.advance(2000);
    await broker.enforceRetention('t');
    const families = await scrape();
    expect(value(families, 'onelog_alerts_active', { kind: 'data-lost' })).toBe(8);
    expect(families.get('onelog_partition_high_watermark')!.metrics).toHaveLength(5);
    expect(families.get('onelog_group_lag_records')!.metrics).toHaveLength(3);
    expect(value(families, 'onelog_metrics_series_omitted', { series: 'partition' })).toBe(3);
    expect(value(families, 'onelog_metrics_series_omitted', { series: 'group_partition' })).toBe(5);
    // The group-topic series still cover every partition.
    expect(value(families, 'onelog_group_topic_lost_records', { group: 'g', topic: 't' })).toBe(8);
  });

  it('has every metric the example dashboard and alert rules use', async () => {
    const dir = path.resolve(import.meta.dirname, '../../examples/monitoring');
    const used = new Set(['grafana-dashboard.json', 'alert-rules.yml'].flatMap((f) =>
      [...fs.readFileSync(path.join(dir, f), 'utf8').matchAll(/\bonelog_[a-z_]+/g)].map((m) => m[0].replace(/_(bucket|sum|count)$/, ''))));
    expect(used.size).toBeGreaterThan(10);
    const families = await scrape();
    expect([...used].filter((name) => !families.has(name))).toEqual([]);
  });
});
