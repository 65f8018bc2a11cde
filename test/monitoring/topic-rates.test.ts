/**
 * Each topic's produce and consume rates on a manual clock: counted per minute by every broker sharing a catalog and
 * summed there, answered in records/s and bytes/s for the complete minutes of the range (zeros where nothing moved),
 * counted by the broker's produce and fetch paths as the metrics count, kept across a restart, and answered over HTTP.
 */
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { Broker } from '../../src/broker/broker.js';
import type { Catalog } from '../../src/catalog/catalog.js';
import { openSqliteCatalog } from '../../src/catalog/sqlite.js';
import { ManualClock } from '../../src/common/clock.js';
import { silentLogger } from '../../src/common/logger.js';
import { TopicRates } from '../../src/monitoring/topic-rates.js';
import { HttpApi } from '../../src/client/http-api.js';
import { asyncCodeOf } from '../helpers/errors.js';
import { serveSecured } from '../helpers/secured-broker.js';
import { tmpDir } from '../helpers/tmp.js';

const T0 = Date.UTC(2026, 0, 1);
const MINUTE = 60_000;
const HOUR = 60 * MINUTE;

const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

describe('topic rates', () => {
  it('sums the minutes two brokers counted, per second, over the complete minutes of the range', async () => {
    const catalog: Catalog = await openSqliteCatalog(path.join(tmpDir(), 'catalog.sqlite'));
    closers.push(() => catalog.close());
    const clock = new ManualClock(T0);
    const [one, two] = [new TopicRates(catalog, clock, silentLogger), new TopicRates(catalog, clock, silentLogger)];
    one.produced('t', 60, 6000);
    two.produced('t', 120, 12_000);
    two.fetched('t', 30, 3000);
    one.produced('u', 1, 1);
    clock.advance(2 * MINUTE); // minute 1 had no traffic
    one.fetched('t', 600, 60_000); // minute 2, the current one: not in the answer yet
    await two.flush();
    const points = await one.history('t', T0);
    expect(points).toEqual([
      { at: T0, produceRecordsPerSec: 3, produceBytesPerSec: 300, consumeRecordsPerSec: 0.5, consumeBytesPerSec: 50 },
      { at: T0 + MINUTE, produceRecordsPerSec: 0, produceBytesPerSec: 0, consumeRecordsPerSec: 0, consumeBytesPerSec: 0 },
    ]);
    clock.advance(MINUTE);
    expect((await one.history('t', T0 + MINUTE)).map((p) => p.consumeRecordsPerSec)).toEqual([0, 10]);
    // A count of the current minute read before it ended is not counted twice.
    one.fetched('t', 60, 0);
    expect((await one.history('t', T0)).length).toBe(3);
    one.fetched('t', 60, 0);
    clock.advance(MINUTE);
    expect((await one.history('t', T0 + 3 * MINUTE)).map((p) => p.consumeRecordsPerSec)).toEqual([2]);
    await one.deleteTopic('t');
    expect((await one.history('t', T0)).every((p) => p.produceRecordsPerSec === 0 && p.consumeRecordsPerSec === 0)).toBe(true);
    expect((await one.history('u', T0))[0]!.produceRecordsPerSec).toBe(1 / 60);
  });

  it('counts what a broker appends and answers to fetches, and keeps it across a restart', async () => {
    const dataDir = tmpDir();
    const clock = new ManualClock(T0);
    const options = { dataDir, clock, sessionCheckIntervalMs: 0, retentionCheckIntervalMs: 0, compactionIntervalMs: 0, monitoring: { alertCheckIntervalMs: 0 } };
    let broker = await Broker.open(options);
    closers.push(() => broker.close());
    await broker.createTopic({ topic: 't', partitions: 1 });
    await broker.produce({ topic: 't', records: Array.from({ length: 120 }, (_, i) => ({ key: null, value: Buffer.from(`value ${i}`), partition: 0 })) });
    const fetched = await broker.fetch({ topic: 't', partitions: [{ partition: 0, offset: 0 }], maxRecords: 60 });
    expect(fetched.partitions[0]!.records).toHaveLength(60);
    clock.advance(MINUTE);
    const [point] = (await broker.topicHistory('t', { hours: 1 })).points.slice(-1);
    expect(point).toMatchObject({ at: T0, produceRecordsPerSec: 2, consumeRecordsPerSec: 1 });
    expect(point!.produceBytesPerSec).toBeGreaterThan(120 * 7 / 60); // batch bytes: the values and the records' framing
    expect(point!.consumeBytesPerSec).toBe((10 * 'value 0'.length + 50 * 'value 10'.length) / 60); // the JSON path: values' bytes
    await broker.close();
    broker = await Broker.open(options);
    const history = await broker.topicHistory('t');
    expect(history.fromMs).toBe(T0 + MINUTE - 24 * HOUR);
    expect(history.points).toHaveLength(24 * 60);
    expect(history.points.at(-1)).toEqual(point);
    expect(await asyncCodeOf(broker.topicHistory('nope'))).toBe('UNKNOWN_TOPIC');
    expect(await asyncCodeOf(broker.topicHistory('t', { hours: 25 }))).toBe('INVALID_REQUEST');
  });

  it('answers over HTTP, both histories, ?hours checked: an integer from 1 to 24', async () => {
    const clock = new ManualClock(T0);
    const { url, broker } = await serveSecured({ insecure: true, broker: { clock, monitoring: { alertCheckIntervalMs: 0 } } });
    await broker.createTopic({ topic: 't', partitions: 1 });
    await broker.subscribe({ groupId: 'g', topic: 't', startPolicy: 'earliest' });
    await broker.produce({ topic: 't', records: [{ key: null, value: Buffer.from('x') }] });
    await broker.evaluateAlerts();
    clock.advance(MINUTE);
    const api = new HttpApi(url);
    expect((await api.topicHistory('t', { hours: 1 })).points.at(-1)).toMatchObject({ at: T0, produceRecordsPerSec: 1 / 60 });
    const history = await api.groupHistory('g', { hours: 2 });
    expect(history).toMatchObject({ groupId: 'g', fromMs: T0 + MINUTE - 2 * HOUR });
    expect(history.partitions[0]!.samples.map((s) => [s.at, s.lag, s.committedOffset])).toEqual([[T0, 1, 0]]);
    for (const query of ['?hours=0', '?hours=25', '?hours=abc', '?hours=1&more=1']) {
      for (const path of ['/groups/g/history', '/topics/t/history']) {
        const res = await fetch(`${url}${path}${query}`);
        expect([path, query, res.status, ((await res.json()) as { code: string }).code]).toEqual([path, query, 400, 'INVALID_REQUEST']);
      }
    }
    expect(await asyncCodeOf(api.topicHistory('nope'))).toBe('UNKNOWN_TOPIC');
  });
});
